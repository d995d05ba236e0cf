"""The create walk (`create.walk`; `shapes.created` with compiled shapes: every create's
Update entry) against SMD's Compare of the kind's zero value with the object, on W10k
objects and on generated ones whose shapes vary (absent, empty, null and mistyped values,
missing list keys), and on variants of objects whose shape was compiled."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.workload import deployment, service
from gitkrm.krm import GVK
from gitkrm.krm.types import ManagedFieldsEntry
from gitkrm.patch.fieldmanager import managed_fields_for_update
from gitkrm.patch.fieldmanager.create import walk
from gitkrm.patch.fieldmanager.entries import STRIP
from gitkrm.patch.fieldmanager.fieldpath import Tree, canonical, difference, union
from gitkrm.patch.fieldmanager.shapes import created
from gitkrm.patch.fieldmanager.typed import SchemaType
from gitkrm.patch.fieldmanager.walk import SchemaMismatch, compare
from gitkrm.schema import ssa_type_for
from tests.support.builders import managed_fields_entry

DEPLOYMENT = GVK(group="apps", version="v1", kind="Deployment")
SERVICE = GVK(group="", version="v1", kind="Service")
POD = GVK(group="", version="v1", kind="Pod")
CONFIGMAP = GVK(group="", version="v1", kind="ConfigMap")
UNKNOWN = GVK(group="example.com", version="v1", kind="Thing")


def reference(t: SchemaType, obj: dict[str, Any]) -> Tree | None:
    """What an Update records (SMD Compare of the zero value and obj: added and modified
    paths), less the server-owned fields (None when the object cannot be typed)."""
    try:
        c = compare(t, {}, obj)
        return canonical(difference(union(c.modified, c.added), STRIP))
    except SchemaMismatch:
        return None


def walked(t: SchemaType, obj: dict[str, Any]) -> Tree | None:
    try:
        out = created(t, obj)
    except SchemaMismatch:
        return None
    assert out == walk(t, obj)
    return out


def wire(tree: Tree | None) -> bytes | None:
    return None if tree is None else orjson.dumps(tree)  # key order matters on the wire


def test_w10k_objects_match_compare_and_repeat_shared_subtrees() -> None:
    dt, stype = ssa_type_for(DEPLOYMENT), ssa_type_for(SERVICE)
    for i in range(30):
        for t, obj in ((dt, deployment(i)), (stype, service(i))):
            assert wire(walked(t, obj)) == wire(reference(t, obj))
    a, b = walk(dt, deployment(1)), walk(dt, deployment(2))
    assert a == b
    assert a["f:metadata"]["f:labels"] is b["f:metadata"]["f:labels"]  # leaf maps shared
    # A recurring shape is compiled: objects of that shape then share one result.
    assert created(dt, deployment(40)) is created(dt, deployment(41))


def test_results_survive_later_shapes() -> None:
    """A cached shape is not changed by objects that reuse part of it."""
    dt = ssa_type_for(DEPLOYMENT)
    first = wire(created(dt, deployment(1)))
    other = deployment(2)
    other["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "X"})
    other["metadata"]["labels"]["extra"] = "1"
    assert wire(created(dt, other)) == wire(reference(dt, other))
    assert wire(created(dt, deployment(1))) == first


def test_create_entry_is_the_update_entry_of_a_create() -> None:
    dt = ssa_type_for(DEPLOYMENT)

    def entries(obj: dict[str, Any]) -> list[ManagedFieldsEntry]:
        return managed_fields_for_update(
            old=None, new=obj, manager="m", api_version="apps/v1", subresource=None, typ=dt, now="t"
        )

    obj = deployment(7)
    fields = reference(dt, obj)
    assert fields is not None
    assert entries(obj) == [
        managed_fields_entry("m", "Update", fields, api_version="apps/v1", time="t")
    ]
    untyped = copy.deepcopy(obj)
    untyped["spec"]["template"]["spec"]["containers"].append({"image": "no-name"})
    assert entries(untyped) == []


# --- generated objects ---------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "web", "MODE", "IDX"])
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 100), st.sampled_from(["", "x", "TCP", "UDP"])
)


def _values(depth: int) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return _SCALARS
    inner = _values(depth - 1)
    return st.one_of(
        _SCALARS,
        st.just({}),
        st.just([]),
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["x", "y", "name", "value"]), inner, max_size=3),
    )


def _port_key(p: dict[str, Any]) -> tuple[int, str]:
    return int(p.get("containerPort") or p.get("port") or 0), p.get("protocol", "TCP")


def _name(d: dict[str, Any]) -> Any:
    return d.get("name")


# Keyed lists without repeated keys: for repeats Compare keeps the last item where the
# walk (and merge) keep the first; the API server rejects most repeats anyway.
_PORT: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"containerPort": st.sampled_from([80, 443, 80.0])},
    optional={"protocol": st.sampled_from(["TCP", "UDP"]), "name": _NAMES},
)
_ENV: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"name": _NAMES},
    optional={"value": _SCALARS, "valueFrom": st.one_of(st.just({}), _values(1))},
)
_CONTAINER = st.fixed_dictionaries(
    {},
    optional={
        "name": _NAMES,
        "image": st.just("nginx"),
        "ports": st.one_of(st.none(), st.lists(_PORT, max_size=3, unique_by=_port_key), _values(1)),
        "env": st.one_of(st.none(), st.lists(_ENV, max_size=3, unique_by=_name)),
        "args": st.lists(st.just("a"), max_size=2),
        "resources": st.one_of(
            st.just({}),
            st.fixed_dictionaries({}, optional={"requests": st.just({"cpu": "1"})}),
        ),
        "securityContext": _values(2),
    },
)
_POD_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.one_of(st.none(), st.lists(_CONTAINER, max_size=2, unique_by=_name)),
        "restartPolicy": st.just("Always"),
        "securityContext": st.one_of(st.just({}), st.just({"runAsUser": 1})),
        "nodeSelector": st.one_of(st.just({}), st.just({"a": "b"})),
        "tolerations": st.lists(st.just({"key": "k"}), max_size=2),  # atomic: repeats are fine
        "volumes": st.one_of(st.none(), st.just([{"name": "v", "emptyDir": {}}])),
    },
)
_META = st.fixed_dictionaries(
    {},
    optional={
        "name": st.just("n"),
        "namespace": st.just("ns"),
        "uid": st.just("u"),
        "generation": st.just(1),
        "labels": st.one_of(st.just({}), st.dictionaries(_NAMES, st.just("v"), max_size=3)),
        "annotations": st.one_of(st.none(), st.just({"a": "1"})),
        "finalizers": st.one_of(st.just([]), st.just(["b", "a"])),
        "ownerReferences": st.just([{"uid": "1", "name": "o"}]),
    },
)


@st.composite
def _deployments(draw: st.DrawFn) -> dict[str, Any]:
    template = draw(
        st.fixed_dictionaries(
            {}, optional={"metadata": st.one_of(_META, st.none()), "spec": _POD_SPEC}
        )
    )
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "replicas": st.integers(0, 3),
                "selector": st.just({"matchLabels": {"a": "b"}}),
                "template": st.one_of(st.just(template), st.just({}), st.none()),
                "strategy": st.one_of(
                    st.just({}), st.just({"rollingUpdate": {"maxSurge": 1}, "type": "R"})
                ),
            },
        )
    )
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment"}
    obj.update(draw(st.fixed_dictionaries({}, optional={"metadata": _META, "spec": st.just(spec)})))
    return obj


_SERVICE_PORT: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"port": st.sampled_from([80, 81])},
    optional={"protocol": st.just("UDP"), "targetPort": _values(0)},
)

_SERVICE_PORTS: st.SearchStrategy[list[dict[str, Any]]] = st.lists(
    _SERVICE_PORT, max_size=3, unique_by=_port_key
)


@st.composite
def _others(draw: st.DrawFn) -> tuple[GVK, dict[str, Any]]:
    gvk = draw(st.sampled_from([SERVICE, CONFIGMAP, POD, UNKNOWN]))
    body: dict[str, Any] = {"apiVersion": gvk.api_version, "kind": gvk.kind}
    body["metadata"] = draw(st.one_of(_META, _values(1)))
    if gvk == SERVICE:
        body["spec"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "ports": _SERVICE_PORTS,
                    "selector": st.just({"a": "b"}),
                    "ipFamilies": st.lists(st.sampled_from(["IPv4", "IPv6"]), max_size=2),
                },
            )
        )
    elif gvk == POD:
        body["spec"] = draw(_POD_SPEC)
        body["status"] = draw(_values(2))
    else:
        body["data"] = draw(_values(2))
        body["spec"] = draw(_values(3))
    return gvk, body


@settings(max_examples=150, deadline=None)
@given(_deployments())
def test_generated_deployments_match_compare(obj: dict[str, Any]) -> None:
    t = ssa_type_for(DEPLOYMENT)
    assert wire(walked(t, obj)) == wire(reference(t, obj))


@settings(max_examples=150, deadline=None)
@given(_others())
def test_generated_objects_of_other_kinds_match_compare(case: tuple[GVK, dict[str, Any]]) -> None:
    gvk, obj = case
    t = ssa_type_for(gvk)
    assert wire(walked(t, obj)) == wire(reference(t, obj))


@st.composite
def _variant(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with a few values replaced or removed at random places (so that it may or may
    not keep obj's shape)."""
    out = copy.deepcopy(obj)
    for _ in range(draw(st.integers(1, 3))):
        node: Any = out
        while True:
            kids = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            kids = [(k, v) for k, v in kids if k not in ("apiVersion", "kind")]
            if not kids:
                break
            k, v = draw(st.sampled_from(kids))
            if isinstance(v, dict | list) and v and draw(st.booleans()):
                node = v
                continue
            if isinstance(node, dict) and draw(st.booleans()):
                del node[k]
            else:
                node[k] = draw(_values(1))
            break
    return out


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compiled_shapes_only_answer_objects_of_their_shape(data: st.DataObject) -> None:
    """A shape compiled from one object gives SMD's answer for variants of it."""
    t = ssa_type_for(DEPLOYMENT)
    t.shapes.clear()
    t.last_walk.clear()
    obj = data.draw(_deployments())
    expected = wire(reference(t, obj))
    for _ in range(3):  # seen twice: compiled; the third time answered by the shape
        assert wire(walked(t, copy.deepcopy(obj))) == expected
    variant = data.draw(_variant(obj))
    assert wire(walked(t, variant)) == wire(reference(t, variant))
