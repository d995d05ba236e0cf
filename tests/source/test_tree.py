from __future__ import annotations

from gitkrm.source.ignore import IgnoreRules
from gitkrm.source.snapshot import MODE_FILE, MODE_SYMLINK
from gitkrm.source.tree import Listing, RawEntry, list_tree

LINK = RawEntry(mode=MODE_SYMLINK, size=0, ref="link")


def f(ref: str, size: int = 10) -> RawEntry:
    return RawEntry(mode=MODE_FILE, size=size, ref=ref)


def listing(
    entries: dict[str, RawEntry],
    targets: dict[str, str],
    *,
    prefix: str = "",
    max_file_size: int = 1000,
) -> Listing:
    return list_tree(
        entries,
        link_targets=targets,
        rules=IgnoreRules({}),
        prefix=prefix,
        max_file_size=max_file_size,
    )


def test_link_to_file_takes_the_target_content() -> None:
    out = listing({"a/x.yaml": f("X"), "b/y.yaml": LINK}, {"b/y.yaml": "../a/x.yaml"})
    assert out.causes == []
    assert out.files == {"a/x.yaml": f("X"), "b/y.yaml": f("X")}


def test_chained_links_and_links_through_linked_directories() -> None:
    entries = {"real/x.yaml": f("X"), "dir": LINK, "one.yaml": LINK, "two.yaml": LINK}
    targets = {"dir": "real", "one.yaml": "two.yaml", "two.yaml": "dir/x.yaml"}
    out = listing(entries, targets)
    assert out.causes == []
    assert out.files["one.yaml"] == f("X")
    assert out.files["dir/x.yaml"] == f("X")


def test_escapes_absolute_dangling_and_loops_are_errors_naming_the_link() -> None:
    entries = {
        "ok.yaml": f("O"),
        "up.yaml": LINK,
        "abs.yaml": LINK,
        "gone.yaml": LINK,
        "loop1.yaml": LINK,
        "loop2.yaml": LINK,
        "sneaky.yaml": LINK,
    }
    targets = {
        "up.yaml": "../secret.yaml",
        "abs.yaml": "/etc/passwd",
        "gone.yaml": "nope.yaml",
        "loop1.yaml": "loop2.yaml",
        "loop2.yaml": "loop1.yaml",
        "sneaky.yaml": "sub/../../x.yaml",
    }
    out = listing(entries, targets, prefix="root/")
    by_field = {c.field: c.message for c in out.causes}
    assert set(by_field) == {
        "root/up.yaml",
        "root/abs.yaml",
        "root/gone.yaml",
        "root/loop1.yaml",
        "root/loop2.yaml",
        "root/sneaky.yaml",
    }
    assert "leaves the source root" in by_field["root/up.yaml"]
    assert "leaves the source root" in by_field["root/abs.yaml"]
    assert "does not exist" in by_field["root/gone.yaml"]
    assert "too many levels" in by_field["root/loop1.yaml"]
    assert list(out.files) == ["ok.yaml"]


def test_links_with_other_names_are_not_followed() -> None:
    out = listing({"README.md": LINK}, {"README.md": "../../outside.md"})
    assert out.causes == []
    assert out.files == {}


def test_size_bound_names_every_file_over_it() -> None:
    entries = {"a.yaml": f("A", 10), "b.yaml": f("B", 2000), "c.yaml": f("C", 3000)}
    out = listing(entries, {}, max_file_size=1000)
    assert [c.field for c in out.causes] == ["b.yaml", "c.yaml"]
    assert "2,000 bytes" in out.causes[0].message
    assert list(out.files) == ["a.yaml"]
