"""Fuzzing kustomization references: any kustomization files in any tree give a layout
whose builds read only files of the repository, every unit is built or a Component, and
none that reaches a kustomization with a problem (a remote or absolute reference, one
leaving the repository or naming nothing, a cycle) is built, directly or as a base."""

from __future__ import annotations

import functools
import posixpath
from typing import Any, Final

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from gitkrm.sync.kustomize import KUSTOMIZATION_NAMES, kustomization_files, layout, units
from gitkrm.sync.kustomize_refs import kustomization_refs, load, plugin_refs, resolve
from tests.fuzz.fuzz_values import json_values, only_gitkrm_errors

DIRS: Final = ["", "base", "base/sub", "overlays/prod", "overlays/dev", "common", "a/b/c"]
FIELDS: Final = [
    *("resources", "bases", "components", "generators", "transformers", "validators"),
    *("patches", "configMapGenerator", "namePrefix"),
]
ESCAPES: Final = [
    *("../../etc", "../../../../../../etc/passwd", "/etc", "/", "//x", "~/x", "..", "."),
    *("https://example.com/base", "git@github.com:o/r.git", "github.com/o/r//x?ref=v1"),
    *("file:///etc", "git::https://x/y", "ssh://git@x/y", "./", "", "a\nb: c", "%2e%2e"),
]


def _relative(frm: str, to: str) -> str:
    return posixpath.relpath(to or ".", frm or ".")


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], dict[str, bytes]]:
    dirs = draw(st.lists(st.sampled_from(DIRS), min_size=1, max_size=5, unique=True))
    files: list[str] = []
    contents: dict[str, bytes] = {}
    for d in dirs:
        prefix = d + "/" if d else ""
        files += [prefix + f for f in draw(st.lists(st.sampled_from(["a.yaml", "b.yml"])))]
        if not draw(st.integers(0, 4)):
            continue
        kpath = prefix + draw(st.sampled_from(KUSTOMIZATION_NAMES))
        files.append(kpath)
        here = functools.partial(_relative, d)
        targets = st.one_of(
            st.sampled_from(dirs).map(here),
            st.sampled_from(DIRS).map(here),
            st.sampled_from(files or ["x"]).map(here),
            st.sampled_from(ESCAPES),
            st.text(max_size=6),
        )
        doc: Any = draw(
            st.dictionaries(
                st.sampled_from(FIELDS),
                st.one_of(st.lists(st.one_of(targets, json_values(max_leaves=2)), max_size=4)),
                max_size=4,
            )
        )
        text = draw(
            st.one_of(
                st.just(yaml.safe_dump(doc).encode()),
                st.just(yaml.safe_dump(doc).encode()),
                json_values(max_leaves=4).map(lambda v: yaml.safe_dump(v).encode()),
                st.binary(max_size=40),
            )
        )
        contents[kpath] = text
    return files, contents


def _inside(path: str) -> bool:
    return not path.startswith("/") and ".." not in path.split("/")


@given(trees())
@example(
    (
        ["base/kustomization.yaml", "overlays/prod/kustomization.yaml"],
        {
            "base/kustomization.yaml": b"resources: [../../../etc]\n",
            "overlays/prod/kustomization.yaml": b"resources: [../../base]\n",
        },
    )
)
@example(
    (
        ["a/kustomization.yaml", "base/Kustomization"],
        {"a/kustomization.yaml": b"resources: [../base]\n", "base/Kustomization": b""},
    )
)
@example(
    (
        ["base/kustomization.yaml", "common/kustomization.yaml"],
        {
            "base/kustomization.yaml": b"resources: [../common]\n",
            "common/kustomization.yaml": b"components: [../base]\n",
        },
    )
)
@example(
    (
        ["base/kustomization.yaml", "overlays/dev/kustomization.yaml"],
        {
            "base/kustomization.yaml": b"resources: [.]\n",
            "overlays/dev/kustomization.yaml": b"resources: [../../base/kustomization.yaml]\n",
        },
    )
)  # an overlay reading a broken kustomization's file as a resource (found by Hypothesis)
@example((["kustomization.yaml"], {"kustomization.yaml": b"resources: [.]\n"}))
@example((["k/kustomization.yaml"], {"k/kustomization.yaml": b"resources: [https://x/y]\n"}))
def test_layout_renders_only_what_the_repository_holds(
    tree: tuple[list[str], dict[str, bytes]],
) -> None:
    files, contents = tree
    data = {f: contents.get(f, b"") for f in files}
    kfiles = kustomization_files(files)
    found = units(kfiles).dirs
    lay = layout(set(files), list(found), lambda paths: {p: data[p] for p in paths})
    assert set(lay.problems) <= set(kfiles.values())
    assert all(message for message in lay.problems.values())
    assert sorted([*lay.roots, *lay.components]) == sorted(found)
    for root in lay.roots:
        need = lay.needs[root]
        assert all(_inside(n) for n in need), need
        assert need <= set(files), need - set(files)
        if kfiles[root] in lay.problems:
            continue  # never built
        for n in need:
            if n in kfiles.values():
                assert n not in lay.problems, f"{root} builds {n}, which has a problem"
    for f in files:
        units(kfiles).plain(f)


@given(st.one_of(st.binary(max_size=200), trees().map(lambda t: b"".join(t[1].values()))))
def test_references_are_paths_of_the_repository_or_problems(text: bytes) -> None:
    got = only_gitkrm_errors(load, text)
    assert isinstance(got, tuple)
    doc, err = got
    if doc is None:
        assert err
        return
    refs, _ = kustomization_refs(doc)
    for ref in [*refs, *plugin_refs(text)]:
        path, why = resolve(ref, "k/l")
        if path is None:
            assert why
        else:
            assert _inside(path), path
            assert path == "" or path == posixpath.normpath(path), path
