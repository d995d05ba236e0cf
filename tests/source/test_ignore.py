from __future__ import annotations

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
