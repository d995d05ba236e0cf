"""An ArtifactGenerator's copy operations as source-watcher applies them (its builder's
`cp`-like rules), over a file listing: globs, directories, files, excludes, Merge, errors."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.source.artifact_copy import (
    ArtifactRecipe,
    CopyError,
    CopyOp,
    Strategy,
    build,
    check_exclude,
    excluded,
    parse_from,
    parse_to,
)
from gitkrm.source.snapshot import FileEntry, git_blob_id

CONTENT = {
    "apps/base/podinfo/kustomization.yaml": b"resources: [deployment.yaml]\n",
    "apps/base/podinfo/deployment.yaml": b"kind: Deployment\n",
    "apps/staging/kustomization.yaml": b"resources: [../base/podinfo]\n",
    "apps/staging/values.yaml": b"replicas: 2\nimage: {tag: '1.0', pull: Always}\nlist: [1, 2]\n",
    "apps/staging/README.md": b"staging notes\n",
    "apps/staging/testdata/fixture.yaml": b"kind: Fixture\n",
    "infrastructure/configs/issuer.yaml": b"kind: ConfigMap\n",
    "infrastructure/controllers/gateway.yaml": b"kind: Deployment\n",
    "charts/values-prod.yaml": b"image: {tag: '2.0'}\nlist: [9]\n",
    "top.yaml": b"kind: A\n",
    "top.json": b"{}\n",
    ".hidden.yaml": b"kind: Hidden\n",
}
FILES = {p: FileEntry(p, git_blob_id(c), len(c)) for p, c in CONTENT.items()}
BY_BLOB = {git_blob_id(c): c for c in CONTENT.values()}


def read(ids: object) -> dict[str, bytes]:
    return {b: BY_BLOB[b] for b in ids}  # type: ignore[attr-defined]


def op(frm: str, to: str, *exclude: str, strategy: Strategy = Strategy.OVERWRITE) -> CopyOp:
    alias, pattern = parse_from(frm)
    return CopyOp(alias, pattern, parse_to(to), tuple(exclude), strategy)


def made(*ops: CopyOp) -> dict[str, str]:
    """Artifact path -> the repository path whose content it has."""
    built = build(ArtifactRecipe(name="a", copy=ops, aliases=(("repo", ""),)), FILES, read)
    by_blob = {e.blob: p for p, e in FILES.items()}
    return {p: by_blob.get(e.blob, "<made>") for p, e in built.files.items()}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        # dir/** strips the directory: its files and sub-directories under the destination
        (
            [
                op("@repo/apps/base/**", "@artifact/base/"),
                op("@repo/apps/staging/**", "@artifact/staging/"),
            ],
            {
                "base/podinfo/kustomization.yaml", "base/podinfo/deployment.yaml",
                "staging/kustomization.yaml", "staging/values.yaml", "staging/README.md",
                "staging/testdata/fixture.yaml",
            },
        ),
        # *.yaml: one level, the match's path kept under the destination
        ([op("@repo/*.yaml", "@artifact/m/")], {"m/top.yaml", "m/.hidden.yaml"}),
        ([op("@repo/infrastructure/*/*.yaml", "@artifact/")],
         {"infrastructure/configs/issuer.yaml", "infrastructure/controllers/gateway.yaml"}),
        ([op("@repo/top.[jy]*", "@artifact/")], {"top.json", "top.yaml"}),
        # a directory without glob: copied as a sub-directory of the destination
        ([op("@repo/infrastructure/configs/", "@artifact/x/")], {"x/configs/issuer.yaml"}),
        ([op("@repo/infrastructure/configs", "@artifact/")], {"configs/issuer.yaml"}),
        # a file: to a file, or into a directory (trailing slash)
        ([op("@repo/top.yaml", "@artifact/apps/app.yaml")], {"apps/app.yaml"}),
        ([op("@repo/top.yaml", "@artifact/apps/")], {"apps/top.yaml"}),
        # into a directory the staging already has, even without the slash
        (
            [
                op("@repo/infrastructure/configs/**", "@artifact/cfg/"),
                op("@repo/top.yaml", "@artifact/cfg"),
            ],
            {"cfg/issuer.yaml", "cfg/top.yaml"},
        ),
        # the alias root: its whole content
        ([op("@repo/", "@artifact/", "apps", "charts", "infrastructure", "*.json")],
         {"top.yaml", ".hidden.yaml"}),
    ],
)  # fmt: skip
def test_copy_rules(ops: list[CopyOp], expected: set[str]) -> None:
    assert set(made(*ops)) == expected


def test_excludes_match_from_the_root_the_prefix_and_the_file_name() -> None:
    got = made(
        op("@repo/apps/staging/**", "@artifact/", "*.md", "testdata/**"),
        op("@repo/infrastructure/**", "@artifact/infra/", "**/controllers/**"),
    )
    assert set(got) == {"kustomization.yaml", "values.yaml", "infra/configs/issuer.yaml"}
    assert excluded("apps/staging/testdata/f.yaml", "apps/staging", ("testdata/**",))
    assert excluded("a/b/c.md", ".", ("*.md",))
    assert excluded("a/b/c.yaml", ".", ("a/{x,b}/*.yaml",))
    assert not excluded("a/b/c.yaml", ".", ("b/*.yaml",))


def test_later_operations_overwrite_earlier_ones() -> None:
    got = made(op("@repo/top.yaml", "@artifact/a.yaml"), op("@repo/top.json", "@artifact/a.yaml"))
    assert got == {"a.yaml": "top.json"}


def test_merge_deep_merges_yaml_maps_and_replaces_lists() -> None:
    ops = (
        op("@repo/apps/staging/values.yaml", "@artifact/values.yaml"),
        op("@repo/charts/values-prod.yaml", "@artifact/values.yaml", strategy=Strategy.MERGE),
    )
    built = build(ArtifactRecipe(name="a", copy=ops, aliases=(("repo", ""),)), FILES, read)
    entry = built.files["values.yaml"]
    import yaml

    assert yaml.safe_load(built.made[entry.blob]) == {
        "replicas": 2, "image": {"tag": "2.0", "pull": "Always"}, "list": [9],
    }  # fmt: skip


def test_the_digest_follows_the_content_only() -> None:
    ops = (op("@repo/apps/base/**", "@artifact/base/"),)
    recipe = ArtifactRecipe(name="a", copy=ops, aliases=(("repo", ""),))
    first = build(recipe, FILES, read)
    outside = dict(FILES, **{"top.yaml": FileEntry("top.yaml", "0" * 40, 3)})
    assert build(recipe, outside, read).digest == first.digest
    inside = dict(FILES)
    inside["apps/base/podinfo/deployment.yaml"] = FileEntry(
        "apps/base/podinfo/deployment.yaml", "1" * 40, 3
    )
    changed = build(recipe, inside, read)
    assert changed.digest != first.digest
    assert first.revision == f"latest@{first.digest}"
    assert first.digest.startswith("sha256:")


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([op("@repo/nowhere/**", "@artifact/")], "no files match pattern 'nowhere/**'"),
        ([op("@repo/missing.yaml", "@artifact/")], "source 'missing.yaml' does not exist"),
        ([op("@repo/*.md", "@artifact/")], "no files match"),
        ([op("@repo/apps/staging/*.md", "@artifact/", "*.md")], "every file matching"),
        ([op("@other/top.yaml", "@artifact/")], "no source has the alias 'other'"),
        ([op("@repo/top.yaml", "@artifact/", strategy=Strategy.EXTRACT)], "Extract"),
        ([op("@repo/top.yaml", "@artifact/a.yaml"),
          op("@repo/apps/staging/README.md", "@artifact/a.yaml", strategy=Strategy.MERGE)],
         "is not a YAML map"),
    ],
)  # fmt: skip
def test_operations_that_cannot_apply_name_themselves(ops: list[CopyOp], message: str) -> None:
    with pytest.raises(CopyError) as e:
        made(*ops)
    assert message in e.value.message
    assert "from '@" in e.value.message or "alias" in e.value.message


@pytest.mark.parametrize(
    ("text", "parse"),
    [
        ("repo/x", parse_from),
        ("@repo", parse_from),
        ("@repo/../etc/passwd", parse_from),
        ("@repo//abs", parse_from),
        ("@other/x", parse_to),
        ("@artifact/../x", parse_to),
    ],
)
def test_paths_outside_their_roots_are_refused(text: str, parse: object) -> None:
    with pytest.raises(BadRequest):
        parse(text)  # type: ignore[operator]


def test_bad_exclude_patterns_are_refused() -> None:
    for bad in ("[a", "{a,b"):
        with pytest.raises(BadRequest, match="invalid exclude pattern"):
            check_exclude(bad)
