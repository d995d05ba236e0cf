"""Field selectors (`fieldSelector=`): parsing, the per-kind supported fields, matching.

Parsing and escaping follow apimachinery's `fields.ParseSelector`; the table of
supported fields mirrors the API server's field-label conversion functions, and the
values compared are those of the API server's "selectable fields" sets (for example a
missing `spec.hostNetwork` reads as "false", a Job's `status.successful` is its
`status.succeeded` count), so a selector selects the same objects here as on a cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gitkrm.errors import BadRequest

Extractor = Callable[[Mapping[str, object]], str]


def field_value(obj: object, *path: str) -> Any:
    """obj[path[0]][path[1]]...: None where a step is missing or not a mapping. The tolerant
    reader of an object's nested fields, for code that reads objects of any shape."""
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _render(value: object) -> str:
    """A field value as the API server's field set would hold it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return ""


def path_extractor(field_path: str) -> Extractor:
    """Read a dotted field path (`spec.nodeName`); missing means ""."""
    parts = tuple(field_path.split("."))

    def extract(obj: Mapping[str, object]) -> str:
        return _render(field_value(obj, *parts))

    return extract


def _defaulted(field_path: str, default: str) -> Extractor:
    """A path whose Go type is a bool or int: missing means its zero value."""
    parts = tuple(field_path.split("."))

    def extract(obj: Mapping[str, object]) -> str:
        v = field_value(obj, *parts)
        return default if v is None else _render(v)

    return extract


def _constant(value: str) -> Extractor:
    return lambda obj: value


def _pod_ip(obj: Mapping[str, object]) -> str:
    # The API server takes status.podIPs[0].ip (status.podIP mirrors it in v1).
    ips = field_value(obj, "status", "podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], Mapping):
        return _render(ips[0].get("ip"))
    return _render(field_value(obj, "status", "podIP"))


def _first_nonempty(*paths: str) -> Extractor:
    extractors = [path_extractor(p) for p in paths]

    def extract(obj: Mapping[str, object]) -> str:
        for ex in extractors:
            if v := ex(obj):
                return v
        return ""

    return extract


_META: Final[dict[str, Extractor]] = {
    "metadata.name": path_extractor("metadata.name"),
    "metadata.namespace": path_extractor("metadata.namespace"),
}
_NAME_ONLY: Final[dict[str, Extractor]] = {"metadata.name": _META["metadata.name"]}


_INVOLVED_OBJECT = (
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
)


def _event_fields(involved: str, reporting: str, source: str) -> dict[str, Extractor]:
    """An Event kind's fields: the core/v1 field labels, read from its JSON names of the
    involved object, the reporting component and the source."""
    return {
        **_META,
        **{f"involvedObject.{f}": path_extractor(f"{involved}.{f}") for f in _INVOLVED_OBJECT},
        "reason": path_extractor("reason"),
        "reportingComponent": path_extractor(reporting),
        "source": _first_nonempty(f"{source}.component", reporting),
        "type": path_extractor("type"),
    }


_CORE_EVENT: Final = _event_fields("involvedObject", "reportingComponent", "source")
# events.k8s.io Events are the same stored objects with other JSON names; the API server
# accepts the core/v1 field labels and reads them from the mapped fields.
_EVENTS_K8S_IO: Final = _event_fields("regarding", "reportingController", "deprecatedSource")

SUPPORTED_FIELDS: Final[dict[tuple[str, str], dict[str, Extractor]]] = {
    ("", "Pod"): {
        **_META,
        "spec.nodeName": path_extractor("spec.nodeName"),
        "spec.restartPolicy": path_extractor("spec.restartPolicy"),
        "spec.schedulerName": path_extractor("spec.schedulerName"),
        "spec.serviceAccountName": path_extractor("spec.serviceAccountName"),
        "spec.hostNetwork": _defaulted("spec.hostNetwork", "false"),
        "status.phase": path_extractor("status.phase"),
        "status.podIP": _pod_ip,
        # Accepted by the API server's conversion but absent from the pod's field set.
        "status.podIPs": _constant(""),
        "status.nominatedNodeName": path_extractor("status.nominatedNodeName"),
    },
    ("", "Node"): {**_NAME_ONLY, "spec.unschedulable": _defaulted("spec.unschedulable", "false")},
    ("", "ReplicationController"): {**_META, "status.replicas": _defaulted("status.replicas", "0")},
    ("", "Event"): _CORE_EVENT,
    ("events.k8s.io", "Event"): _EVENTS_K8S_IO,
    ("", "Namespace"): {**_NAME_ONLY, "status.phase": path_extractor("status.phase")},
    ("", "Secret"): {**_META, "type": path_extractor("type")},
    ("", "Service"): {
        **_META,
        "spec.clusterIP": path_extractor("spec.clusterIP"),
        "spec.type": path_extractor("spec.type"),
    },
    ("apps", "ReplicaSet"): {**_META, "status.replicas": _defaulted("status.replicas", "0")},
    ("batch", "Job"): {**_META, "status.successful": _defaulted("status.succeeded", "0")},
    ("certificates.k8s.io", "CertificateSigningRequest"): {
        **_NAME_ONLY,
        "spec.signerName": path_extractor("spec.signerName"),
    },
    ("certificates.k8s.io", "ClusterTrustBundle"): {
        **_NAME_ONLY,
        "spec.signerName": path_extractor("spec.signerName"),
    },
    ("resource.k8s.io", "ResourceSlice"): {
        **_NAME_ONLY,
        "spec.nodeName": path_extractor("spec.nodeName"),
        "spec.driver": path_extractor("spec.driver"),
    },
}
"""Per (group, kind), the field labels the API server accepts and how to read each value.

Kinds not listed accept `metadata.name` and `metadata.namespace` only (the API server's
default conversion); CustomResourceDefinitions add their `selectableFields`.
"""

FIELD_ALIASES: Final[dict[tuple[str, str], dict[str, str]]] = {
    ("", "Pod"): {"spec.host": "spec.nodeName"},  # old v1 clients
}


def supported_fields(*, group: str, kind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """All field labels a selector on this kind may use (plus CRD `selectableFields`)."""
    base = SUPPORTED_FIELDS.get((group, kind), _META)
    return frozenset(base) | frozenset(f.lstrip(".") for f in extra)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """`field=value` (`equals=True`) or `field!=value`."""

    field: str
    value: str
    equals: bool = True

    def __str__(self) -> str:
        return f"{self.field}{'=' if self.equals else '!='}{escape_value(self.value)}"


def escape_value(value: str) -> str:
    """apimachinery's fields.EscapeValue: `\\` `,` `=` get a backslash."""
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_value(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise BadRequest(f"invalid field selector: unescaped character in value: '{c}'")
        else:
            out.append(c)
    if in_slash:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start = 0
    in_slash = False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of `field=value` / `field!=value` terms, sorted as apimachinery sorts them."""

    requirements: tuple[FieldRequirement, ...] = ()
    _by_kind: dict[tuple[object, object], tuple[tuple[Extractor, str, bool], ...]] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    @property
    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> frozenset[str]:
        return frozenset(r.field for r in self.requirements)

    def requires_exact_match(self, field_label: str) -> str | None:
        """The value `field_label` must equal, if a term pins it (for index look-ups)."""
        for r in self.requirements:
            if r.field == field_label and r.equals:
                return r.value
        return None

    def check_supported(self, *, group: str, kind: str, extra: Iterable[str] = ()) -> None:
        """BadRequest `field label not supported: <field>` for a field the kind lacks."""
        if not self.requirements:
            return
        allowed = supported_fields(group=group, kind=kind, extra=extra)
        aliases = FIELD_ALIASES.get((group, kind), {})
        for r in self.requirements:
            if r.field not in allowed and r.field not in aliases:
                raise BadRequest(f"field label not supported: {r.field}")

    def _compiled(self, obj: Mapping[str, object]) -> tuple[tuple[Extractor, str, bool], ...]:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        # Anything but strings (an object not admitted yet) selects as no kind at all.
        key = (
            api_version if isinstance(api_version, str) else "",
            kind if isinstance(kind, str) else "",
        )
        compiled = self._by_kind.get(key)
        if compiled is None:
            group = key[0].rpartition("/")[0]
            table = SUPPORTED_FIELDS.get((group, key[1]), {})
            aliases = FIELD_ALIASES.get((group, key[1]), {})
            compiled = tuple(
                (
                    table.get(aliases.get(r.field, r.field))
                    or path_extractor(aliases.get(r.field, r.field)),
                    r.value,
                    r.equals,
                )
                for r in self.requirements
            )
            self._by_kind[key] = compiled
        return compiled

    def matches(self, obj: Mapping[str, object]) -> bool:
        """Evaluate against a raw object; a missing field reads as "" (or its Go zero value)."""
        if not self.requirements:
            return True
        for extract, value, equals in self._compiled(obj):
            if (extract(obj) == value) != equals:
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse `fieldSelector=` syntax: comma-separated `f=v`, `f==v`, `f!=v`; "" is everything.

    Values may contain `\\,` `\\=` `\\\\`; `==` is read as `=`. Raises BadRequest.
    """
    if not isinstance(text, str):
        raise BadRequest(f"field selector must be a string, got {type(text).__name__}")
    reqs: list[FieldRequirement] = []
    for part in _split_terms(text) if text else ():
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        reqs.append(FieldRequirement(field=lhs, value=_unescape_value(rhs), equals=op != "!="))
    # apimachinery sorts the raw terms; sorting the canonical terms gives the same order for
    # canonical input and makes str() round-trip through parse for any input.
    reqs.sort(key=str)
    return FieldSelector(requirements=tuple(reqs))
