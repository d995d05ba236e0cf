"""Apply order: Namespaces and CRDs first, waves, Helm's kind order, depends-on edges."""

from __future__ import annotations

import orjson

from gitkrm.krm import ObjectRef
from gitkrm.sync.desired import Desired, make_desired, parse_dependency
from gitkrm.sync.order import order, prune_order


def obj(
    kind: str,
    name: str,
    *,
    ns: str | None = "apps",
    api: str = "v1",
    wave: int | None = None,
    deps: str | None = None,
) -> Desired:
    if kind == "Deployment":
        api = "apps/v1"
    ann: dict[str, str] = {}
    if wave is not None:
        ann["gitkrm.io/wave"] = str(wave)
    if deps is not None:
        ann["config.kubernetes.io/depends-on"] = deps
    md: dict[str, object] = {"name": name}
    if ns:
        md["namespace"] = ns
    if ann:
        md["annotations"] = ann
    doc = orjson.dumps({"apiVersion": api, "kind": kind, "metadata": md})
    d, problems = make_desired(
        doc=doc,
        api_version=api,
        kind=kind,
        name=name,
        namespace=ns or "",
        path=f"{name}.yaml",
        line=1,
    )
    assert d is not None, problems
    return d


def names(objs: tuple[Desired, ...]) -> list[str]:
    return [f"{d.ref.kind}/{d.ref.name}" for d in objs]


def test_namespaces_and_crds_first_then_helm_kind_order_then_namespace_and_name() -> None:
    objs = [
        obj("Deployment", "b"),
        obj("Service", "z"),
        obj("Widget", "w", api="example.com/v1"),
        obj("ConfigMap", "cfg", ns="b-ns"),
        obj("ConfigMap", "cfg", ns="a-ns"),
        obj(
            "CustomResourceDefinition",
            "widgets.example.com",
            ns=None,
            api="apiextensions.k8s.io/v1",
        ),
        obj("Namespace", "apps", ns=None),
        obj("Deployment", "a"),
        obj("Gadget", "g", api="example.com/v1"),
    ]
    result = order(objs)
    assert result.errors == ()
    assert names(result.objects) == [
        "Namespace/apps",
        "CustomResourceDefinition/widgets.example.com",
        "ConfigMap/cfg",  # a-ns
        "ConfigMap/cfg",  # b-ns
        "Service/z",
        "Deployment/a",
        "Deployment/b",
        "Gadget/g",  # unknown kinds last, alphabetically
        "Widget/w",
    ]
    assert [d.ref.namespace for d in result.objects[2:4]] == ["a-ns", "b-ns"]


def test_waves_come_before_kind_order_but_after_namespaces() -> None:
    objs = [
        obj("ConfigMap", "late", wave=2),
        obj("Deployment", "early", wave=-1),
        obj("Service", "default"),
        obj("Namespace", "apps", ns=None, wave=5),
    ]
    assert names(order(objs).objects) == [
        "Namespace/apps",
        "Deployment/early",
        "Service/default",
        "ConfigMap/late",
    ]


def test_depends_on_puts_the_dependency_first_within_a_wave() -> None:
    objs = [
        obj("ConfigMap", "a", deps="apps/namespaces/apps/Deployment/db"),
        obj("Deployment", "db"),
        obj(
            "Deployment",
            "web",
            deps="apps/namespaces/apps/Deployment/db,/namespaces/apps/Service/s",
        ),
        obj("Service", "s"),
    ]
    result = order(objs)
    assert result.errors == ()
    got = names(result.objects)
    assert got.index("Deployment/db") < got.index("ConfigMap/a")
    assert got.index("Service/s") < got.index("Deployment/web")
    assert got.index("Deployment/db") < got.index("Deployment/web")


def test_a_dependency_in_a_later_wave_is_an_error_naming_both() -> None:
    objs = [
        obj("ConfigMap", "a", deps="/namespaces/apps/ConfigMap/b"),
        obj("ConfigMap", "b", wave=1),
    ]
    result = order(objs)
    assert len(result.errors) == 1
    d, message = result.errors[0]
    assert d.ref.name == "a"
    assert "ConfigMap apps/a (wave 0) depends on ConfigMap apps/b at b.yaml:1" in message
    assert "applied later (wave 1)" in message


def test_a_namespace_depending_on_a_configmap_is_an_error() -> None:
    result = order(
        [obj("Namespace", "n", ns=None, deps="/namespaces/apps/ConfigMap/c"), obj("ConfigMap", "c")]
    )
    assert "Namespaces and CRDs stage" in result.errors[0][1]


def test_a_cycle_is_an_error_naming_its_objects() -> None:
    objs = [
        obj("ConfigMap", "a", deps="/namespaces/apps/ConfigMap/b"),
        obj("ConfigMap", "b", deps="/namespaces/apps/ConfigMap/c"),
        obj("ConfigMap", "c", deps="/namespaces/apps/ConfigMap/a"),
        obj("ConfigMap", "d", deps="/namespaces/apps/ConfigMap/a"),
    ]
    result = order(objs)
    assert len(result.errors) == 1
    message = result.errors[0][1]
    assert message.startswith("dependency cycle: ")
    cycle = message.removeprefix("dependency cycle: ").split(" -> ")
    assert sorted(set(cycle)) == ["ConfigMap apps/a", "ConfigMap apps/b", "ConfigMap apps/c"]
    assert cycle[0] == cycle[-1]
    assert len(cycle) == 4


def test_self_dependency_is_a_cycle_and_outside_dependencies_are_ignored() -> None:
    assert order([obj("ConfigMap", "a", deps="/namespaces/apps/ConfigMap/a")]).errors
    outside = order([obj("ConfigMap", "a", deps="/namespaces/other/ConfigMap/x")])
    assert outside.errors == ()


def test_depends_on_syntax() -> None:
    assert parse_dependency("apps/namespaces/n/Deployment/d") == ObjectRef(
        group="apps", kind="Deployment", name="d", namespace="n"
    )
    assert parse_dependency(" rbac.authorization.k8s.io/ClusterRole/r ") == ObjectRef(
        group="rbac.authorization.k8s.io", kind="ClusterRole", name="r"
    )
    for bad in ("apps/Deployment", "a/b/c/d/e", "/Kind/"):
        doc = orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "annotations": {"config.kubernetes.io/depends-on": bad}},
            }
        )
        d, problems = make_desired(
            doc=doc, api_version="v1", kind="ConfigMap", name="x", namespace="n", path="p", line=1
        )
        assert d is None
        assert "depends-on" in problems[0]


def test_invalid_wave_is_a_problem() -> None:
    doc = orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x", "annotations": {"gitkrm.io/wave": "soon"}},
        }
    )
    d, problems = make_desired(
        doc=doc, api_version="v1", kind="ConfigMap", name="x", namespace="n", path="p", line=1
    )
    assert d is None
    assert problems == ["annotation gitkrm.io/wave must be an integer, got 'soon'"]


def test_prune_order_is_the_reverse_of_apply_order() -> None:
    ns = ObjectRef(group="", kind="Namespace", name="apps")
    dep = ObjectRef(group="apps", kind="Deployment", name="d", namespace="apps")
    cm = ObjectRef(group="", kind="ConfigMap", name="c", namespace="apps")
    late = ObjectRef(group="", kind="ConfigMap", name="late", namespace="apps")
    live_late = {"metadata": {"annotations": {"gitkrm.io/wave": "3"}}}
    got = prune_order([(ns, None), (cm, None), (dep, None), (late, live_late)])
    assert got == [late, dep, cm, ns]
