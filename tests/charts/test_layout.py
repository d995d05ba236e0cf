"""Which directories are charts: Argo CD's rule (a Chart.yaml), outermost only."""

from __future__ import annotations

from gitkrm.charts.layout import chart_layout


def test_a_directory_with_chart_yaml_is_a_chart_and_owns_its_files() -> None:
    layout = chart_layout(
        [
            "ns.yaml",
            "apps/shop/Chart.yaml",
            "apps/shop/templates/a.yaml",
            "apps/shop/charts/cache/Chart.yaml",
            "apps/shop/charts/cache/templates/b.yaml",
            "apps/plain/c.yaml",
            "apps/shopper/d.yaml",
        ]
    )
    assert layout.roots == ("apps/shop",)  # the subchart belongs to its parent
    assert layout.owned("apps/shop/templates/a.yaml")
    assert layout.owned("apps/shop/charts/cache/templates/b.yaml")
    assert not layout.owned("apps/shopper/d.yaml")  # a prefix of the name is not the dir
    assert not layout.owned("apps/plain/c.yaml")
    assert not layout.owned("ns.yaml")
    assert layout.files_of("apps/shop", ["apps/shop/Chart.yaml", "ns.yaml"]) == ["Chart.yaml"]


def test_a_chart_at_the_root_owns_everything() -> None:
    layout = chart_layout(["Chart.yaml", "templates/x.yaml", "other.yaml"])
    assert layout.roots == ("",)
    assert layout.owned("other.yaml")


def test_no_chart() -> None:
    layout = chart_layout(["a.yaml", "b/Chart.yml"])
    assert layout.roots == ()
    assert not layout.owned("a.yaml")


def test_grouped_is_files_of_for_every_chart() -> None:
    paths = ["a/Chart.yaml", "a/t/x.yaml", "b/c/Chart.yaml", "b/c/v.yaml", "b/d.yaml", "e.yaml"]
    layout = chart_layout(paths)
    assert layout.grouped(paths) == {r: layout.files_of(r, paths) for r in layout.roots}
    assert layout.grouped(paths) == {
        "a": ["Chart.yaml", "t/x.yaml"],
        "b/c": ["Chart.yaml", "v.yaml"],
    }
