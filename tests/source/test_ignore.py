from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitkrm.source.ignore import IgnoreRules, is_manifest_name, select


def rules(files: dict[str, str], defaults: tuple[str, ...] = ()) -> IgnoreRules:
    return IgnoreRules(files, defaults=defaults)


@pytest.mark.parametrize(
    ("path", "listed"),
    [
        ("a.yaml", True),
        ("a.yml", True),
        ("a.json", True),
        ("x/Kustomization", True),
        ("a.yaml.bak", False),
        ("README.md", False),
        ("Makefile", False),
    ],
)
def test_manifest_names(path: str, listed: bool) -> None:
    assert is_manifest_name(path) is listed


def test_last_matching_pattern_wins_within_a_file() -> None:
    r = rules({"": "*.yaml\n!keep.yaml\n"})
    assert r.ignored("x.yaml")
    assert not r.ignored("keep.yaml")
    assert not r.ignored("sub/keep.yaml")
    assert r.ignored("sub/x.yaml")


def test_deeper_file_overrides_and_applies_only_below_it() -> None:
    r = rules({"": "*.json\n", "apps": "!*.json\nlocal.yaml\n"})
    assert r.ignored("top.json")
    assert not r.ignored("apps/x.json")
    assert r.ignored("apps/local.yaml")
    assert not r.ignored("local.yaml")
    assert not r.ignored("other/local.yaml")


def test_anchored_and_directory_patterns() -> None:
    r = rules({"": "/root-only.yaml\nbuild/\ndocs/*.yaml\n", "sub": "/here.yaml\n"})
    assert r.ignored("root-only.yaml")
    assert not r.ignored("x/root-only.yaml")
    assert r.ignored("build/a.yaml")
    assert r.ignored("x/build/a.yaml")
    assert not r.ignored("build")  # a file named build is not the directory pattern
    assert r.ignored("docs/a.yaml")
    assert not r.ignored("docs/deep/a.yaml")
    assert r.ignored("sub/here.yaml")
    assert not r.ignored("sub/deeper/here.yaml")


def test_nothing_below_an_ignored_directory_comes_back() -> None:
    r = rules({"": "vendor/\n!vendor/keep.yaml\n"})
    assert r.ignored("vendor/keep.yaml")
    r2 = rules({"": "vendor/\n", "vendor": "!keep.yaml\n"})
    assert r2.ignored("vendor/keep.yaml")


def test_comments_blank_lines_and_escapes() -> None:
    r = rules({"": "# comment\n\n\\#hash.yaml\n\\!bang.yaml\n"})
    assert r.ignored("#hash.yaml")
    assert r.ignored("!bang.yaml")
    assert not r.ignored("comment")


def test_defaults_can_be_negated_by_the_root_file() -> None:
    r = IgnoreRules({})
    assert r.ignored(".github/workflows/ci.yaml")
    assert r.ignored(".gitlab-ci.yml")
    assert r.ignored("deep/.sops.yaml")
    assert r.ignored(".git/config")
    assert not r.ignored("apps/a.yaml")
    assert not IgnoreRules({"": "!.gitlab-ci.yml\n"}).ignored(".gitlab-ci.yml")


def test_select_lists_manifests_and_everything_in_kustomization_dirs() -> None:
    paths = [
        "a.yaml",
        "notes.txt",
        "k/kustomization.yaml",
        "k/app.properties",
        "k/sub/data.bin",
        "other/file.txt",
        ".github/x.yaml",
    ]
    assert select(paths, IgnoreRules({})) == {
        "a.yaml",
        "k/kustomization.yaml",
        "k/app.properties",
        "k/sub/data.bin",
    }
    assert select(paths, IgnoreRules({"k": "*.properties\n"})) == {
        "a.yaml",
        "k/kustomization.yaml",
        "k/sub/data.bin",
    }


def test_answers_are_stable_when_remembered() -> None:
    r = rules({"": "x*.yaml\n"})
    first = [r.ignored(p) for p in ("x1.yaml", "y.yaml", "x1.yaml")]
    assert first == [True, False, True]


DIFF_FILES = {
    "": "*.json\n!keep.json\n/top.yaml\nbuild/\ndocs/**/draft-*.yaml\n**/tmp\n\\#x.yaml\n",
    "apps": "!*.json\nlocal-*.yaml\n/only-here.yaml\nsub/*.yml\n",
    "apps/sub": "!local-b.yaml\n*.txt\n",
    "vendor": "*\n!*.yaml\n",
}
DIFF_PATHS = [
    "a.json",
    "keep.json",
    "x/keep.json",
    "top.yaml",
    "x/top.yaml",
    "build/a.yaml",
    "x/build/a.yaml",
    "build.yaml",
    "docs/draft-1.yaml",
    "docs/a/b/draft-2.yaml",
    "docs/a/ok.yaml",
    "tmp/a.yaml",
    "x/tmp/b.yaml",
    "#x.yaml",
    "apps/a.json",
    "apps/local-a.yaml",
    "apps/only-here.yaml",
    "apps/x/only-here.yaml",
    "apps/sub/local-b.yaml",
    "apps/sub/local-c.yaml",
    "apps/sub/a.yml",
    "apps/sub/deeper/a.yml",
    "apps/sub/n.txt",
    "vendor/a.yaml",
    "vendor/a.md",
    "vendor/d/a.yaml",
]


def test_same_answers_as_git_check_ignore(tmp_path: Path) -> None:
    """Differential check against Git itself, with the ignore files named .gitignore."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for d, text in DIFF_FILES.items():
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / ".gitignore").write_text(text)
    for p in DIFF_PATHS:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("x")
    res = subprocess.run(
        ["git", "-c", "core.excludesFile=/dev/null", "check-ignore", "--stdin"],
        cwd=tmp_path,
        input="\n".join(DIFF_PATHS),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    git_ignored = set(res.stdout.split())
    ours = rules(DIFF_FILES)
    assert {p for p in DIFF_PATHS if ours.ignored(p)} == git_ignored
