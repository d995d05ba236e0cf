"""Fuzzing kustomization references: any kustomization files in any tree give a layout
whose roots need only paths of the repository, every kustomization is rendered, used by
one that is, or has a problem naming its file, and none with a problem (a remote or
absolute reference, one leaving the source root or naming nothing, a cycle) is rendered,
directly or as a base."""

from __future__ import annotations

import functools
import posixpath
from typing import Any, Final

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from gitkrm.errors import BadRequest
from gitkrm.sync.kustomize import (
    KUSTOMIZATION_NAMES,
    kustomization_files,
    layout,
    needed_files,
    references,
)
from gitkrm.sync.kustomize import _references as _references
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


def references_or_none(text: bytes, directory: str) -> list[str]:
    """The paths a kustomization names (those it could name, when it has a problem)."""
    return _references(text, directory=directory)[0]


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
@example((["kustomization.yaml"], {"kustomization.yaml": b"resources: [.]\n"}))
@example((["k/kustomization.yaml"], {"k/kustomization.yaml": b"resources: [https://x/y]\n"}))
def test_layout_renders_only_what_the_repository_holds(
    tree: tuple[list[str], dict[str, bytes]],
) -> None:
    files, contents = tree
    lay = layout(files, contents)
    kfiles = kustomization_files(files)
    assert set(lay.problems) <= set(kfiles.values())
    assert all(message for message in lay.problems.values())
    reached: set[str] = set()
    for root in lay.roots:
        need = lay.needs[root]
        assert all(_inside(n) for n in need), need
        assert set(needed_files(need, sorted(files))) <= set(files)
        if kfiles[root] in lay.problems:
            continue  # never built
        reached |= need
        for n in need:
            assert n in ("", *kfiles, *files) or any(f.startswith(n + "/") for f in files), n
            if n in kfiles:
                assert kfiles[n] not in lay.problems, f"{root} renders {n}, which has a problem"
    # Every kustomization is rendered, or reached from one that is, or has a problem, or is
    # used by one with a problem (whose problem refuses the sync): none is silently left out.
    accounted = set(reached) | {d for d, k in kfiles.items() if k in lay.problems}
    accounted |= {n for r in lay.roots for n in lay.needs[r]}
    frontier = list(accounted)
    while frontier:
        d = frontier.pop()
        if d not in kfiles:
            continue
        for r in references_or_none(contents[kfiles[d]], d):
            if r in kfiles and r not in accounted:
                accounted.add(r)
                frontier.append(r)
    for d, kpath in kfiles.items():
        assert d in accounted, f"{kpath} is silently left out"
    for f in files:
        lay.owned(f)


@given(st.one_of(st.binary(max_size=200), trees().map(lambda t: b"".join(t[1].values()))))
def test_references_are_paths_of_the_source_or_bad_requests(text: bytes) -> None:
    got = only_gitkrm_errors(references, text, directory="k/l")
    if isinstance(got, BadRequest):
        return
    assert isinstance(got, list)
    for r in got:
        assert _inside(r), r
        assert r == "" or r == posixpath.normpath(r), r
