"""Name, label and annotation syntax checks, with apimachinery's exact messages.

Each `is_*` function returns a list of messages (empty = valid) rather than raising, so
callers can collect every problem of an object into one `Invalid` error, as the API
server does. Messages match k8s.io/apimachinery/pkg/util/validation word for word,
because users search for them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache

from gitkrm.errors import Cause

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)


def _matcher(fmt: str) -> re.Pattern[str]:
    """An ASCII-only pattern; fullmatch gives Go's ^...$ (Python's $ would accept a
    trailing \n). Its groups do not capture: a match costs 40% less."""
    return re.compile(fmt.replace("(", "(?:"), re.ASCII)


_DNS1123_LABEL_RE = _matcher(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = _matcher(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = _matcher(_DNS1035_LABEL_FMT)
_QNAME_RE = _matcher(_QNAME_FMT)
_LABEL_VALUE_RE = _matcher(_LABEL_VALUE_FMT)


class NameRule(StrEnum):
    """Which syntax a kind's `metadata.name` must follow (the API server's per-kind choice)."""

    DNS1123_SUBDOMAIN = "DNS1123Subdomain"
    DNS1123_LABEL = "DNS1123Label"
    DNS1035_LABEL = "DNS1035Label"
    PATH_SEGMENT = "PathSegment"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError: the message, examples and the regex used."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Literally as Go builds it, including the double space before "or".
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def _byte_len(value: str) -> int:
    # Go measures strings in bytes; most names are ASCII, where both agree.
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _length_and_format(
    value: str,
    *,
    max_length: int,
    pattern: re.Pattern[str],
    msg: str,
    fmt: str,
    examples: tuple[str, ...],
) -> list[str]:
    """apimachinery's usual pair of checks: at most `max_length` bytes, and matching `fmt`."""
    errs: list[str] = []
    if _byte_len(value) > max_length:
        errs.append(max_len_error(max_length))
    if not pattern.fullmatch(value):
        errs.append(regex_error(msg, fmt, *examples))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    return _length_and_format(
        value,
        max_length=DNS1123_SUBDOMAIN_MAX_LENGTH,
        pattern=_DNS1123_SUBDOMAIN_RE,
        msg=_DNS1123_SUBDOMAIN_MSG,
        fmt=_DNS1123_SUBDOMAIN_FMT,
        examples=("example.com",),
    )


def is_dns1035_label(value: str) -> list[str]:
    return _length_and_format(
        value,
        max_length=DNS1035_LABEL_MAX_LENGTH,
        pattern=_DNS1035_LABEL_RE,
        msg=_DNS1035_LABEL_MSG,
        fmt=_DNS1035_LABEL_FMT,
        examples=("my-name", "abc-123"),
    )


def is_path_segment_name(value: str) -> list[str]:
    """Names that only have to be usable as one URL path segment (RBAC kinds and others)."""
    for bad in (".", ".."):
        if value == bad:
            return [f"may not be '{bad}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def is_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys, finalizers: `[prefix/]name`, prefix a DNS-1123 subdomain."""
    return list(_qualified_name_errors(value))


def is_valid_label_value(value: str) -> list[str]:
    return list(_label_value_errors(value))


# Label keys and values repeat across every object of a sync: remember the verdicts.
@lru_cache(maxsize=16384)
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return (
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errs)


@lru_cache(maxsize=16384)
def _label_value_errors(value: str) -> tuple[str, ...]:
    return tuple(
        _length_and_format(
            value,
            max_length=LABEL_VALUE_MAX_LENGTH,
            pattern=_LABEL_VALUE_RE,
            msg=_LABEL_VALUE_MSG,
            fmt=_LABEL_VALUE_FMT,
            examples=("MyValue", "my_value", "12345"),
        )
    )


def validate_name(value: str, rule: NameRule) -> list[str]:
    """Check `value` against the name rule of a kind."""
    if rule is NameRule.DNS1123_SUBDOMAIN:
        return is_dns1123_subdomain(value)
    if rule is NameRule.DNS1123_LABEL:
        return is_dns1123_label(value)
    if rule is NameRule.DNS1035_LABEL:
        return is_dns1035_label(value)
    return is_path_segment_name(value)


def _mask_trailing_dash(name: str) -> str:
    # A generateName prefix may end in '-': the generated suffix makes it valid.
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def validate_name_prefix(value: str, rule: NameRule) -> list[str]:
    """Check a `generateName` prefix (apimachinery's name functions with prefix=true)."""
    if rule is NameRule.PATH_SEGMENT:
        return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]
    return validate_name(_mask_trailing_dash(value), rule)


# ---- ObjectMeta (apimachinery's ValidateObjectMetaAccessor) ----

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_FINALIZER_ORPHAN = "orphan"
_FINALIZER_FOREGROUND = "foregroundDeletion"


def _show(value: object) -> str:
    """A bad value as field.Error prints it (%q for strings)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) or value is None:
        return "null" if value is None else str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def invalid(field: str, value: object, detail: str) -> Cause:
    return Cause(
        type="FieldValueInvalid", message=f"Invalid value: {_show(value)}: {detail}", field=field
    )


def required(field: str, detail: str = "") -> Cause:
    msg = f"Required value: {detail}" if detail else "Required value"
    return Cause(type="FieldValueRequired", message=msg, field=field)


def forbidden(field: str, detail: str) -> Cause:
    return Cause(type="FieldValueForbidden", message=f"Forbidden: {detail}", field=field)


def too_long(field: str, limit: int) -> Cause:
    return Cause(
        type="FieldValueTooLong", message=f"Too long: must have at most {limit} bytes", field=field
    )


def _string_map(value: object, field: str, causes: list[Cause]) -> Mapping[str, str]:
    """A labels/annotations map, reporting non-string keys or values instead of raising."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        causes.append(invalid(field, value, "must be a map of string keys to string values"))
        return {}
    if all(type(k) is str and type(v) is str for k, v in value.items()):
        return value
    good: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            causes.append(invalid(f"{field}[{k}]", v, "must be a string"))
        else:
            good[k] = v
    return good


def _validate_labels(value: object, causes: list[Cause]) -> None:
    field = "metadata.labels"
    for k, v in _string_map(value, field, causes).items():
        # Hot path: most keys and values are valid and their verdicts cached.
        if errs := _qualified_name_errors(k):
            causes.extend(invalid(field, k, m) for m in errs)
        if errs := _label_value_errors(v):
            causes.extend(invalid(field, v, m) for m in errs)


def _validate_annotations(value: object, causes: list[Cause]) -> None:
    field = "metadata.annotations"
    annotations = _string_map(value, field, causes)
    size = 0
    for k, v in annotations.items():
        # Keys are qualified names compared case-insensitively.
        if errs := _qualified_name_errors(k.lower()):
            causes.extend(invalid(field, k, m) for m in errs)
        size += _byte_len(k) + _byte_len(v)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT))


def _validate_owner_references(value: object, causes: list[Cause]) -> None:
    field = "metadata.ownerReferences"
    if value is None:
        return
    if not isinstance(value, list):
        causes.append(invalid(field, value, "must be a list"))
        return
    first_controller = ""
    for ref in value:
        if not isinstance(ref, Mapping):
            causes.append(invalid(field, ref, "must be an object"))
            continue
        api_version = ref.get("apiVersion") or ""
        kind = ref.get("kind") or ""
        version = str(api_version).rpartition("/")[2]
        if not version:
            causes.append(invalid(f"{field}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            causes.append(invalid(f"{field}.kind", kind, "kind must not be empty"))
        if not ref.get("name"):
            causes.append(invalid(f"{field}.name", ref.get("name") or "", "name must not be empty"))
        if not ref.get("uid"):
            causes.append(invalid(f"{field}.uid", ref.get("uid") or "", "uid must not be empty"))
        if api_version == "v1" and kind == "Event":
            causes.append(
                invalid(field, dict(ref), "/v1, Kind=Event is disallowed from being an owner")
            )
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                causes.append(
                    invalid(
                        field,
                        f"{first_controller}, {current}",
                        "Only one reference can have Controller set to true. "
                        f'Found "true" in references for {first_controller} and {current}',
                    )
                )
            else:
                first_controller = current


def _validate_finalizers(value: object, causes: list[Cause]) -> None:
    field = "metadata.finalizers"
    if value is None:
        return
    if not isinstance(value, list):
        causes.append(invalid(field, value, "must be a list of strings"))
        return
    for f in value:
        if not isinstance(f, str):
            causes.append(invalid(field, f, "must be a string"))
            continue
        causes.extend(invalid(field, f, m) for m in is_qualified_name(f))
    if _FINALIZER_ORPHAN in value and _FINALIZER_FOREGROUND in value:
        causes.append(
            invalid(
                field,
                value,
                f"finalizer {_FINALIZER_ORPHAN} and {_FINALIZER_FOREGROUND} cannot be both set",
            )
        )


def _validate_name_fields(meta: Mapping[str, object], rule: NameRule, causes: list[Cause]) -> None:
    name = meta.get("name")
    generate_name = meta.get("generateName")
    if generate_name is not None and not isinstance(generate_name, str):
        causes.append(invalid("metadata.generateName", generate_name, "must be a string"))
        generate_name = None
    if generate_name:
        causes.extend(
            invalid("metadata.generateName", generate_name, m)
            for m in validate_name_prefix(generate_name, rule)
        )
    if name is not None and not isinstance(name, str):
        causes.append(invalid("metadata.name", name, "must be a string"))
    elif not name:
        # With generateName the server generates the name before validating it.
        if not generate_name:
            causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes.extend(invalid("metadata.name", name, m) for m in validate_name(name, rule))


# Valid values seen by the fast path (names of namespaces, label keys and values recur
# across the objects of a sync). Sets: a lookup costs a third of an lru_cache hit.
_KNOWN_VALID_MAX = 16384
_valid_namespaces: set[str] = set()
_valid_label_keys: set[str] = set()
_valid_label_values: set[str] = set()


def _remember(known: set[str], value: str) -> None:
    if len(known) >= _KNOWN_VALID_MAX:
        known.clear()
    known.add(value)


# name rule -> (pattern, maximum length); names here are ASCII (len counts bytes).
_NAME_SYNTAX = {
    NameRule.DNS1123_SUBDOMAIN: (_DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_MAX_LENGTH),
    NameRule.DNS1123_LABEL: (_DNS1123_LABEL_RE, DNS1123_LABEL_MAX_LENGTH),
    NameRule.DNS1035_LABEL: (_DNS1035_LABEL_RE, DNS1035_LABEL_MAX_LENGTH),
}


def _name_valid(name: str, rule: NameRule) -> bool:
    syntax = _NAME_SYNTAX.get(rule)
    if syntax is None:
        return not validate_name(name, rule)
    pattern, limit = syntax
    return len(name) <= limit and name.isascii() and pattern.fullmatch(name) is not None


def _labels_valid(labels: dict[object, object]) -> bool:
    for k, v in labels.items():
        if type(k) is not str or type(v) is not str:
            return False
        if k not in _valid_label_keys:
            if _qualified_name_errors(k):
                return False
            _remember(_valid_label_keys, k)
        if v not in _valid_label_values:
            if _label_value_errors(v):
                return False
            _remember(_valid_label_values, v)
    return True


def _annotations_valid(annotations: dict[object, object]) -> bool:
    size = 0
    for k, v in annotations.items():
        if type(k) is not str or type(v) is not str or _qualified_name_errors(k.lower()):
            return False
        size += _byte_len(k) + _byte_len(v)
    return size <= TOTAL_ANNOTATION_SIZE_LIMIT


def _meta_valid(
    meta: Mapping[str, object], namespaced: bool, name_rule: NameRule, labels_checked: bool
) -> bool:
    """The common ObjectMeta proven valid without building any cause: a name, no
    generateName, owner references or finalizers, string labels and annotations. False
    means "not proven": the full check then finds the causes, in its order."""
    name = meta.get("name")
    if type(name) is not str or not name or meta.get("generateName") is not None:
        return False
    if not _name_valid(name, name_rule):
        return False
    namespace = meta.get("namespace")
    if namespaced:
        if type(namespace) is not str:
            return False
        if namespace not in _valid_namespaces:
            if not namespace or is_dns1123_label(namespace):
                return False
            _remember(_valid_namespaces, namespace)
    elif namespace is not None and (type(namespace) is not str or namespace):
        return False
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        return False
    if meta.get("ownerReferences") is not None or meta.get("finalizers") is not None:
        return False
    labels = meta.get("labels")
    if not (labels is None or labels_checked or (type(labels) is dict and _labels_valid(labels))):
        return False
    annotations = meta.get("annotations")
    return annotations is None or (type(annotations) is dict and _annotations_valid(annotations))


def validate_object_meta(
    obj: Mapping[str, object],
    *,
    namespaced: bool,
    name_rule: NameRule,
    labels_checked: bool = False,
) -> list[Cause]:
    """Every ObjectMeta problem of `obj`, as causes of an `Invalid` error (empty = valid).

    Same checks and messages as apimachinery's ValidateObjectMetaAccessor: name (or
    generateName), namespace presence and syntax, labels, annotations (keys and 256 KiB
    total), ownerReferences, finalizers and generation. `labels_checked`: the caller has
    proven metadata.labels valid (admission's fast-path schema does).
    """
    meta = obj.get("metadata")
    if type(meta) is dict and _meta_valid(meta, namespaced, name_rule, labels_checked):
        return []  # the hot path of every write (a third of the full check's cost)
    return object_meta_causes(obj, namespaced=namespaced, name_rule=name_rule)


def object_meta_causes(
    obj: Mapping[str, object], *, namespaced: bool, name_rule: NameRule
) -> list[Cause]:
    """validate_object_meta without its fast path (tests prove the two agree)."""
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        return [invalid("metadata", meta, "must be an object")]
    causes: list[Cause] = []
    _validate_name_fields(meta, name_rule, causes)
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        causes.append(invalid("metadata.namespace", namespace, "must be a string"))
    elif namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            causes.extend(
                invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace)
            )
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        causes.append(
            invalid("metadata.generation", generation, "must be greater than or equal to 0")
        )
    _validate_labels(meta.get("labels"), causes)
    _validate_annotations(meta.get("annotations"), causes)
    _validate_owner_references(meta.get("ownerReferences"), causes)
    _validate_finalizers(meta.get("finalizers"), causes)
    return causes
