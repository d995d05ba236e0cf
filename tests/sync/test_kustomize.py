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
    # A remote component is not rendered (it is not in the repository).
    assert lay.problems == {
        "overlays/dev/Kustomization": "components entry 'https://example.com/x' is remote: "
        "gitkrm renders only what the repository holds (vendor the base into the repository)"
    }


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
        (b"resources: [/etc]\n", "'/etc' is an absolute path"),
        (b"bases: [github.com/o/r//base?ref=v1]\n", "is remote"),
        (b"transformers: [git::https://x/y]\n", "is remote"),
        (b"generators: [../../../tmp/gen]\n", "generators entry '../../../tmp/gen' leaves"),
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


# ---- found by tests/fuzz/test_fuzz_kustomize.py ----


def test_a_base_with_a_problem_keeps_its_overlays_from_rendering() -> None:
    # The base's escape was reported, but the overlay was still built: kustomize then
    # followed `../../../etc` from the temporary copy, outside the repository.
    files = ["base/kustomization.yaml", "overlays/prod/kustomization.yaml"]
    lay = layout(
        files,
        {
            "base/kustomization.yaml": b"resources: [../../../etc]\n",
            "overlays/prod/kustomization.yaml": b"resources: [../../base]\n",
        },
    )
    assert lay.roots == ["overlays/prod"]
    assert lay.problems == {
        "base/kustomization.yaml": "resources entry '../../../etc' leaves the source root",
        "overlays/prod/kustomization.yaml": "not rendered: it uses base/kustomization.yaml, "
        "which has a problem",
    }


def test_cycles_are_problems_not_silence() -> None:
    # Kustomizations using each other were all bases and no root: nothing was rendered and
    # nothing said so.
    files = ["a/kustomization.yaml", "b/kustomization.yaml", "self/kustomization.yaml"]
    lay = layout(
        files,
        {
            "a/kustomization.yaml": b"resources: [../b]\n",
            "b/kustomization.yaml": b"components: [../a]\n",
            "self/kustomization.yaml": b"resources: [.]\n",
        },
    )
    assert lay.roots == []
    assert lay.problems == {
        "a/kustomization.yaml": "kustomizations use each other in a cycle: a -> b -> a",
        "b/kustomization.yaml": "kustomizations use each other in a cycle: a -> b -> a",
        "self/kustomization.yaml": "kustomizations use each other in a cycle: self -> self",
    }


def test_references_must_name_something_of_the_repository() -> None:
    # Kustomize tries what is not a local path as a remote base.
    lay = layout(
        ["k/kustomization.yaml", "k/a.yaml"],
        {"k/kustomization.yaml": b"resources: [a.yaml, example.com/org/repo]\n"},
    )
    assert lay.problems == {
        "k/kustomization.yaml": "'k/example.com/org/repo' is not a file or directory of the source"
    }


def test_inline_transformer_configurations_are_not_paths() -> None:
    text = b"transformers:\n- |\n  apiVersion: builtin\n  kind: LabelTransformer\n"
    assert references(text, directory="k") == []
