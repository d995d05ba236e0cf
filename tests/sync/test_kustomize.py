"""Kustomization roots and what each needs materialized."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.sync.kustomize import kustomization_files, layout, needed_files, references, tree_key


def test_roots_are_kustomizations_no_other_one_uses() -> None:
    files = [
        "base/kustomization.yaml",
        "base/deploy.yaml",
        "overlays/prod/kustomization.yaml",
        "overlays/prod/patch.yaml",
        "overlays/dev/Kustomization",
        "common/cm.yaml",
        "plain/app.yaml",
    ]
    contents = {
        "base/kustomization.yaml": b"resources: [deploy.yaml]\n",
        "overlays/prod/kustomization.yaml": b"resources: [../../base, ../../common/cm.yaml]\n",
        "overlays/dev/Kustomization": b"bases: [../../base]\ncomponents: [https://example.com/x]\n",
    }
    lay = layout(files, contents)
    assert lay.roots == ["overlays/dev", "overlays/prod"]
    assert lay.needs["overlays/prod"] == {
        "overlays/prod",
        "base",
        "base/deploy.yaml",
        "common/cm.yaml",
    }
    assert needed_files(lay.needs["overlays/prod"], files) == [
        "base/kustomization.yaml",
        "base/deploy.yaml",
        "overlays/prod/kustomization.yaml",
        "overlays/prod/patch.yaml",
        "common/cm.yaml",
    ]
    assert lay.owned("base/deploy.yaml")
    assert lay.owned("overlays/prod/patch.yaml")
    assert not lay.owned("plain/app.yaml")
    assert not lay.owned("common/cm.yaml")


def test_the_first_accepted_file_name_wins() -> None:
    assert kustomization_files(
        ["a/Kustomization", "a/kustomization.yml", "b/kustomization.yaml"]
    ) == {
        "a": "a/kustomization.yml",
        "b": "b/kustomization.yaml",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"resources: [../../outside]\n", "leaves the source root"),
        (b"resources: x\n", "must be a list"),
        (b"- a\n", "must be a mapping"),
        (b"resources: [\n", "invalid kustomization"),
    ],
)
def test_bad_kustomizations(text: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        references(text, directory="k")
    lay = layout(["k/kustomization.yaml"], {"k/kustomization.yaml": text})
    assert message in lay.problems["k/kustomization.yaml"]


def test_tree_key_follows_content() -> None:
    a = tree_key("k", [("k/a.yaml", "1"), ("k/b.yaml", "2")])
    assert a == tree_key("k", [("k/b.yaml", "2"), ("k/a.yaml", "1")])
    assert a != tree_key("k", [("k/a.yaml", "1"), ("k/b.yaml", "3")])
