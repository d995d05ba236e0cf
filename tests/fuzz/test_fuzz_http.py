"""Fuzzing the HTTP API in process: any method, path, query string, headers and body get a
well-formed answer, a 2xx or a `kind: Status` body with the same 4xx code, never a 5xx
(no faults are injected here), an exception out of the app, or a hang.

Each example runs against a fresh in-memory store (`sqlite:///:memory:`) holding a
namespace, a ConfigMap, a Deployment, a CRD and one of its objects, so requests reach
objects that exist as well as ones that do not."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final
from urllib.parse import quote, urlencode

import orjson
import yaml
from hypothesis import event, example, given
from hypothesis import strategies as st

from gitkrm.errors import GitkrmError
from gitkrm.server import ApiServer
from gitkrm.server.pbwire import Writer
from gitkrm.server.proto_types import KINDS
from gitkrm.server.protobuf import MAGIC, decode_object
from gitkrm.store import open_store
from gitkrm.store.sqlite import SqliteStore
from tests.fuzz.fuzz_asgi import Answer, call
from tests.fuzz.fuzz_values import json_values, only_gitkrm_errors
from tests.support.builders import configmap, crd, custom_resource, deployment, namespace

NS: Final = "fuzz"
SEEDS: Final = [
    namespace(NS),
    crd(),
    configmap("cm", NS, a="1"),
    deployment("web", NS, replicas=2),
    custom_resource("Widget", "w", NS, size=1),
]

# ---- paths ----

PREFIXES: Final = st.sampled_from(
    [
        *("/api/v1", "/apis/apps/v1", "/apis/example.com/v1", "/apis/batch/v1", "/api/v2"),
        *("/apis/apiextensions.k8s.io/v1", "/apis/nope.example/v9", "/apis/apps", "/apis"),
        *("/api", "/openapi/v2", "/openapi/v3", "/openapi/v3/apis/apps/v1", "/openapi/v3/x"),
        *("/version", "/healthz", "/livez", "/readyz", "/metrics", "", "/apis/example.com"),
    ]
)
NAMESPACES: Final = st.sampled_from([NS, "default", "nope", "", "UPPER", "a" * 70, "-x"])
RESOURCES: Final = st.sampled_from(
    [
        *("configmaps", "deployments", "pods", "namespaces", "nodes", "secrets", "services"),
        *("events", "widgets", "customresourcedefinitions", "leases", "replicasets", "jobs"),
        *("deployments.apps", "ConfigMap", "bogus", "componentstatuses", "bindings"),
    ]
)
NAMES: Final = st.sampled_from(
    ["cm", "web", "w", NS, "widgets.example.com", "missing", "", "..", ".", "a" * 300, "A_b"]
)
SUBRESOURCES: Final = st.sampled_from(
    ["status", "scale", "finalize", "log", "exec", "binding", "eviction", "proxy", "x", ""]
)


def _segment(text: str) -> str:
    return quote(text, safe="")


@st.composite
def paths(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:  # any ASCII at all, percent signs included
        return ("/" + draw(st.text(st.characters(min_codepoint=32, max_codepoint=126)))).encode()
    parts = [draw(PREFIXES)]
    if draw(st.booleans()):
        parts.append("watch")
    if draw(st.booleans()):
        parts += ["namespaces", _segment(draw(st.one_of(NAMESPACES, st.text(max_size=8))))]
    if draw(st.integers(0, 5)):
        parts.append(_segment(draw(st.one_of(RESOURCES, st.text(max_size=8)))))
        if draw(st.booleans()):
            parts.append(_segment(draw(st.one_of(NAMES, st.text(max_size=8)))))
            if draw(st.booleans()):
                parts.append(_segment(draw(st.one_of(SUBRESOURCES, st.text(max_size=6)))))
    extra = draw(st.lists(st.text(max_size=4).map(_segment), max_size=2))
    path = "/".join(p.strip("/") for p in [*parts, *extra] if p)
    return ("/" + path + ("/" if draw(st.booleans()) else "")).encode()


# ---- query strings ----

PARAMS: Final = [
    *("labelSelector", "fieldSelector", "watch", "resourceVersion", "resourceVersionMatch"),
    *("limit", "continue", "timeoutSeconds", "allowWatchBookmarks", "dryRun", "fieldManager"),
    *("fieldValidation", "force", "propagationPolicy", "gracePeriodSeconds", "pretty"),
    *("orphanDependents", "includeObject", "sendInitialEvents", "hash", "container"),
]
PARAM_VALUES: Final = st.one_of(
    st.sampled_from(
        [
            *("", "1", "0", "-1", "true", "false", "True", "t", "yes", "All", "Strict", "Warn"),
            *("Ignore", "Exact", "NotOlderThan", "Foreground", "Background", "Orphan", "Object"),
            *("None", "Metadata", "99999999999999999999", "1e3", "a=b", "a in (b)", "!a"),
            *("metadata.name=cm", "metadata.name!=x,status.phase=Running", "x" * 200),
            *("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", "%", "\x00", "é"),
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.text(max_size=12),
)


@st.composite
def queries(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=30)).replace(b"#", b"").replace(b" ", b"+")
    pairs = draw(
        st.lists(
            st.tuples(st.one_of(st.sampled_from(PARAMS), st.text(max_size=5)), PARAM_VALUES),
            max_size=5,
        )
    )
    return urlencode(pairs).encode()


# ---- headers and bodies ----

CONTENT_TYPES: Final = st.sampled_from(
    [
        *("application/json", "application/yaml", "application/vnd.kubernetes.protobuf"),
        *("application/merge-patch+json", "application/strategic-merge-patch+json"),
        *("application/json-patch+json", "application/apply-patch+yaml", "text/plain"),
        *("application/apply-patch+cbor", "application/json; charset=utf-8", "", "*/*", ";;"),
    ]
)
ACCEPTS: Final = st.sampled_from(
    [
        *("application/json", "*/*", "application/yaml", "application/vnd.kubernetes.protobuf"),
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        *("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "text/html", ";q=x"),
    ]
)


def _mutate(obj: Any, path: list[str | int], value: Any) -> Any:
    """`obj` with the value at `path` (as far as it exists) replaced by `value`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict) and isinstance(head, str):
        return {**obj, head: _mutate(obj.get(head), rest, value)}
    if isinstance(obj, list) and isinstance(head, int) and obj:
        i = head % len(obj)
        return [*obj[:i], _mutate(obj[i], rest, value), *obj[i + 1 :]]
    return value


FIELD_PATHS: Final[st.SearchStrategy[list[str | int]]] = st.sampled_from(
    [
        *(["apiVersion"], ["kind"], ["metadata"], ["metadata", "name"], ["spec"], ["data"]),
        *(["metadata", "namespace"], ["metadata", "resourceVersion"], ["metadata", "uid"]),
        *(["metadata", "labels"], ["metadata", "annotations"], ["metadata", "finalizers"]),
        *(["metadata", "ownerReferences"], ["metadata", "managedFields"], ["status"]),
        *(["metadata", "generateName"], ["metadata", "deletionTimestamp"], ["spec", "replicas"]),
        *(["spec", "selector"], ["spec", "template", "spec", "containers", 0, "image"]),
        *(["spec", "template", "metadata", "labels"], ["metadata", "labels", "app"], ["items"]),
    ]
)


@st.composite
def objects(draw: st.DrawFn, seed: Any = None, name: str | None = None) -> Any:
    """A seed (or `seed`), named `name` if given, with 0 to 3 fields replaced by anything."""
    obj: Any = draw(st.sampled_from(SEEDS)) if seed is None else seed
    if name is not None:
        obj = _mutate(obj, ["metadata", "name"], name)
    for _ in range(draw(st.sampled_from([0, 0, 1, 2, 3]))):
        obj = _mutate(obj, draw(FIELD_PATHS), draw(json_values(max_leaves=6)))
    return obj


_HOLE: Final = "<deep value>"


@st.composite
def deep_bodies(draw: st.DrawFn) -> bytes:
    """A seed with a value nested deeper than gitkrm stores (orjson reads 1,024 levels and
    writes 254), as JSON text."""
    depth = draw(st.one_of(st.integers(190, 260), st.integers(900, 1100)))
    obj = _mutate(draw(st.sampled_from(SEEDS)), draw(FIELD_PATHS), _HOLE)
    deep = b"[" * depth + b'"x"' + b"]" * depth
    return orjson.dumps(obj).replace(orjson.dumps(_HOLE), deep)


def _protobuf(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = Writer()
    type_meta.raw(1, api_version.encode())
    type_meta.raw(2, kind.encode())
    unknown = Writer()
    unknown.message(1, type_meta)
    unknown.raw(2, raw)
    return MAGIC + bytes(unknown.buf)


@st.composite
def pb_messages(draw: st.DrawFn, depth: int = 0) -> Writer:
    """A protobuf message of random fields: strings (any bytes), varints, fixed-width
    numbers and nested messages, by the field numbers Kubernetes' messages use."""
    w = Writer()
    for _ in range(draw(st.integers(0, 6))):
        num = draw(st.integers(1, 20))
        wire = draw(st.sampled_from(["bytes", "varint", "message", "fixed64", "fixed32"]))
        if wire == "bytes":
            w.raw(num, draw(st.one_of(st.binary(max_size=8), st.text(max_size=6).map(str.encode))))
        elif wire == "varint":
            w._tag(num, 0)
            w._varint(draw(st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1))))
        elif wire == "message" and depth < 4:
            w.message(num, draw(pb_messages(depth + 1)))
        elif wire == "fixed64":
            w._tag(num, 1)
            w.buf += draw(st.binary(min_size=8, max_size=8))
        elif wire == "fixed32":
            w._tag(num, 5)
            w.buf += draw(st.binary(min_size=4, max_size=4))
    return w


PB_KINDS: Final = st.sampled_from(sorted(KINDS))
PB_OBJECTS: Final = st.builds(
    lambda kind, w: _protobuf(kind[0], kind[1], bytes(w.buf)), PB_KINDS, pb_messages()
)


def _json(value: Any) -> bytes:
    """JSON text of any value (integers beyond 64 bits too, which orjson refuses)."""
    return json.dumps(value).encode()


def _yaml(value: Any) -> bytes:
    return yaml.safe_dump(value).encode()


BODIES: Final = st.one_of(
    st.just(b""),
    st.binary(max_size=200),
    objects().map(_json),
    objects().map(_yaml),
    deep_bodies(),
    json_values(max_leaves=12).map(_json),
    st.lists(
        st.fixed_dictionaries(
            {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"])},
            optional={
                "path": st.sampled_from(["/metadata/labels/x", "/spec/replicas", "/data", ""]),
                "from": st.sampled_from(["/metadata/name", "/spec", "/x"]),
                "value": json_values(max_leaves=4),
            },
        ),
        max_size=3,
    ).map(_json),
    st.builds(
        _protobuf,
        st.one_of(st.sampled_from(sorted({a for a, _ in KINDS})), st.text(max_size=4)),
        st.one_of(st.sampled_from(sorted({k for _, k in KINDS})), st.text(max_size=4)),
        st.binary(max_size=120),
    ),
    st.builds(
        lambda head, tail: MAGIC + head + tail, st.binary(max_size=4), st.binary(max_size=80)
    ),
)
METHODS: Final = st.sampled_from(
    ["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "get"]
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, bytes, bytes, list[tuple[bytes, bytes]], bytes]:
    method = draw(METHODS)
    body = draw(BODIES) if method not in ("GET", "HEAD") or draw(st.booleans()) else b""
    headers: list[tuple[bytes, bytes]] = []
    if draw(st.booleans()):
        headers.append((b"content-type", draw(CONTENT_TYPES).encode()))
    if draw(st.booleans()):
        headers.append((b"accept", draw(ACCEPTS).encode()))
    length = draw(st.sampled_from(["right", "right", "none", "wrong", "junk", "huge"]))
    if length != "none":
        value = {
            "right": str(len(body)),
            "wrong": str(len(body) + 5),
            "junk": "x1",
            "huge": str(2**40),
        }[length]
        headers.append((b"content-length", value.encode()))
    if draw(st.booleans()):
        headers.append((b"user-agent", draw(st.text(max_size=12)).encode("utf-8")))
    return method, draw(paths()), draw(queries()), headers, body


# Requests aimed at the seeds: the right path for the method, the body in the format the
# content type names, so that decoding, admission and the store are reached.
_TARGETS: Final = {
    "configmaps": ("/api/v1/namespaces/fuzz/configmaps", "cm", SEEDS[2]),
    "deployments": ("/apis/apps/v1/namespaces/fuzz/deployments", "web", SEEDS[3]),
    "widgets": ("/apis/example.com/v1/namespaces/fuzz/widgets", "w", SEEDS[4]),
    "namespaces": ("/api/v1/namespaces", NS, SEEDS[0]),
}
_PATCH_BODIES: Final = {
    "application/merge-patch+json": st.one_of(
        objects().map(_json), json_values(max_leaves=8).map(_json), deep_bodies()
    ),
    "application/strategic-merge-patch+json": st.one_of(objects().map(_json), deep_bodies()),
    "application/apply-patch+yaml": st.one_of(
        objects().map(_json), objects().map(_yaml), deep_bodies()
    ),
    "application/json-patch+json": st.one_of(
        st.lists(
            st.fixed_dictionaries(
                {
                    "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
                    "path": st.sampled_from(["/spec", "/spec/x", "/metadata/labels", "/data/k"]),
                },
                optional={
                    "from": st.sampled_from(["/spec", "/metadata", "/data", "/metadata/labels"]),
                    "value": json_values(max_leaves=4),
                },
            ),
            max_size=40,
        ).map(_json),
        deep_bodies(),
    ),
}


DELETE_OPTIONS: Final = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["DeleteOptions", "Status", ""]),
        "apiVersion": st.sampled_from(["v1", "meta.k8s.io/v1", "x"]),
        "propagationPolicy": st.one_of(
            st.sampled_from(["Foreground", "Background", "Orphan"]), json_values(max_leaves=2)
        ),
        "gracePeriodSeconds": st.one_of(st.integers(-5, 100), json_values(max_leaves=2)),
        "orphanDependents": json_values(max_leaves=2),
        "dryRun": st.one_of(st.just(["All"]), json_values(max_leaves=3)),
        "preconditions": st.one_of(
            st.fixed_dictionaries({}, optional={"uid": st.text(max_size=5)}),
            json_values(max_leaves=3),
        ),
    },
).map(_json)


@st.composite
def targeted(draw: st.DrawFn) -> tuple[str, bytes, bytes, list[tuple[bytes, bytes]], bytes]:
    collection, name, seed = _TARGETS[draw(st.sampled_from(sorted(_TARGETS)))]
    method = draw(st.sampled_from(["POST", "PUT", "PATCH", "PATCH", "DELETE", "GET"]))
    # A new object to create (the seed's own name already exists), the seed to update.
    own = objects(
        seed, draw(st.sampled_from(["new", "new-2", "x.y"])) if method == "POST" else name
    )
    path = collection if method == "POST" else f"{collection}/{name}"
    if method == "PUT" and draw(st.booleans()):
        path += "/" + draw(st.sampled_from(["status", "scale", "finalize"]))
    headers: list[tuple[bytes, bytes]] = []
    if method == "PATCH":
        ctype = draw(st.sampled_from(sorted(_PATCH_BODIES)))
        body = draw(_PATCH_BODIES[ctype])
    elif method in ("DELETE", "GET"):
        ctype, body = "application/json", draw(st.one_of(st.just(b""), DELETE_OPTIONS))
    else:
        ctype, body = draw(
            st.one_of(
                st.tuples(st.just("application/json"), own.map(_json)),
                st.tuples(st.just("application/json"), objects().map(_json)),
                st.tuples(st.just("application/json"), deep_bodies()),
                st.tuples(st.just("application/yaml"), own.map(_yaml)),
                st.tuples(st.just("application/vnd.kubernetes.protobuf"), PB_OBJECTS),
            )
        )
    headers.append((b"content-type", ctype.encode()))
    query = draw(st.one_of(st.just(b""), queries()))
    return method, path.encode(), query, headers, body


# ---- the check ----


def check_answer(answer: Answer, request: Any) -> None:
    code = answer.status
    assert 200 <= code < 300 or 400 <= code < 500, f"HTTP {code} for {request}: {answer.body!r}"
    if code >= 400:
        assert answer.content_type == "application/json", answer.headers
        status = orjson.loads(answer.body)
        assert status["kind"] == "Status"
        assert status["apiVersion"] == "v1"
        assert status["status"] == "Failure"
        assert status["code"] == code
        assert isinstance(status["message"], str)
        assert isinstance(status["reason"], str)
        assert status["reason"]
        return
    if answer.content_type.startswith("application/json") and answer.body:
        if answer.complete:
            orjson.loads(answer.body)
        else:  # a watch cut off: whole lines are whole events
            for line in answer.body.split(b"\n")[:-1]:
                orjson.loads(line)


async def _scenario(reqs: list[tuple[str, bytes, bytes, list[tuple[bytes, bytes]], bytes]]) -> None:
    store = await open_store("sqlite:///:memory:")
    assert isinstance(store, SqliteStore)
    try:
        for seed in SEEDS:
            await store.create(seed)
        app = ApiServer(store)
        for r in reqs:
            answer = await call(app, *r)
            event(f"{r[0]} answered {answer.status}")
            check_answer(answer, r)
    finally:
        app_closing = getattr(locals().get("app"), "begin_shutdown", None)
        if app_closing is not None:
            app_closing()
        await store.close()


@given(st.lists(st.one_of(requests(), targeted()), min_size=1, max_size=3))
@example([("GET", b"/api/v1/namespaces/fuzz/configmaps/cm", b"", [], b"")])
@example([("GET", b"/api/v1/namespaces/fuzz/configmaps", b"watch=1", [], b"")])
@example([("POST", b"/api/v1/namespaces/fuzz/configmaps", b"", [], b"\xff")])
@example(
    [
        (
            "POST",
            b"/api/v1/namespaces/fuzz/configmaps",
            b"",
            [(b"content-type", b"application/vnd.kubernetes.protobuf")],
            _protobuf("v1", "ConfigMap", b"\x0a\x03\x0a\x01\xff"),  # metadata.name: \xff
        )
    ]
)
@example(
    [
        (
            "POST",
            b"/apis/example.com/v1/namespaces/fuzz/widgets",
            b"",
            [(b"content-type", b"application/json")],
            b'{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"deep"},'
            b'"spec":' + b"[" * 260 + b"]" * 260 + b"}",
        )
    ]
)
@example(
    [
        (
            "PATCH",
            b"/api/v1/namespaces/fuzz/configmaps/cm",
            b"",
            [(b"content-type", b"application/json-patch+json")],
            orjson.dumps(
                [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
                + [
                    {"op": "copy", "from": "/metadata", "path": f"/metadata/c{i}"}
                    for i in range(40)
                ]
            ),
        )
    ]
)
def test_http_api_answers_every_request(
    reqs: list[tuple[str, bytes, bytes, list[tuple[bytes, bytes]], bytes]],
) -> None:
    asyncio.run(_scenario(reqs))


@given(
    st.one_of(
        PB_OBJECTS,
        st.builds(_protobuf, st.text(max_size=8), st.text(max_size=8), st.binary(max_size=64)),
    )
)
@example(_protobuf("v1", "ConfigMap", b"\x0a\x03\x0a\x01\xff"))
@example(_protobuf("v1", "ConfigMap", b"\x0a\x02\x08\x01"))  # metadata.name as a varint
@example(_protobuf("v1", "ConfigMap", b"\x10\x01"))  # data (a map) as a varint
def test_protobuf_bodies_decode_or_are_refused(body: bytes) -> None:
    got = only_gitkrm_errors(decode_object, body)
    if not isinstance(got, GitkrmError):
        assert isinstance(got, dict)
        orjson.dumps(got)
