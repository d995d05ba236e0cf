"""Validation of CustomResourceDefinition objects (apiextensions validation, 1.33).

Names must agree (`metadata.name` is `<plural>.<group>`), names are DNS-1035 labels, the
group is a dotted domain (protected `*.k8s.io` groups need the approval annotation),
exactly one version is the storage version, every version has a structural schema.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema_rs

from gitkrm.errors import Cause
from gitkrm.krm.names import is_dns1035_label, is_dns1123_subdomain
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.cel.rules import rule_errors
from gitkrm.schema.custom import compile_schema

_APPROVAL = "api-approved.kubernetes.io"
_SCOPES = ("Cluster", "Namespaced")
_JSON_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_MAX_SELECTABLE_FIELDS = 8
_JSON_PATH = re.compile(r"(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _protected(group: str) -> bool:
    return any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))


def validate_crd(crd: Obj) -> list[Cause]:
    """Every problem of a CRD object (empty = valid)."""
    out: list[Cause] = []
    meta = _as_dict(crd.get("metadata"))
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    group = spec.get("group")
    names = _as_dict(spec.get("names"))
    plural = names.get("plural")
    name = meta.get("name")
    if isinstance(plural, str) and isinstance(group, str) and name != f"{plural}.{group}":
        out.append(fe.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        out.append(fe.required("spec.group"))
    elif isinstance(group, str):
        out.extend(fe.invalid("spec.group", group, m) for m in is_dns1123_subdomain(group))
        if "." not in group:
            out.append(fe.invalid("spec.group", group, "should be a domain with at least one dot"))
        annotations = meta.get("annotations") or {}
        if _protected(group) and not (isinstance(annotations, dict) and annotations.get(_APPROVAL)):
            out.append(
                fe.required(
                    f"metadata.annotations[{_APPROVAL}]",
                    f'protected groups must have approval annotation "{_APPROVAL}", see '
                    "https://github.com/kubernetes/enhancements/pull/1111",
                )
            )
    scope = spec.get("scope")
    if not scope:
        out.append(fe.required("spec.scope"))
    elif scope not in _SCOPES:
        out.append(fe.not_supported("spec.scope", scope, _SCOPES))
    if spec.get("preserveUnknownFields") is True:
        out.append(
            fe.invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    out.extend(_names(names))
    out.extend(_versions(spec.get("versions")))
    return out


def _names(names: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    base = "spec.names"
    for key in ("plural", "singular", "kind", "listKind"):
        value = names.get(key)
        if not value:
            out.append(fe.required(f"{base}.{key}"))
            continue
        if not isinstance(value, str):
            continue
        mixed = key in ("kind", "listKind")
        errs = is_dns1035_label(value.lower() if mixed else value)
        if errs:
            prefix = "may have mixed case, but should otherwise match: " if mixed else ""
            out.append(fe.invalid(f"{base}.{key}", value, prefix + ",".join(errs)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        out.append(
            fe.invalid(
                f"{base}.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    for key in ("shortNames", "categories"):
        values = names.get(key)
        for i, value in enumerate(values if isinstance(values, list) else ()):
            if isinstance(value, str):
                errs = is_dns1035_label(value)
                if errs:
                    out.append(fe.invalid(f"{base}.{key}[{i}]", value, ",".join(errs)))
    return out


def _versions(versions: object) -> list[Cause]:
    out: list[Cause] = []
    if not isinstance(versions, list) or not versions:
        return [
            fe.required("spec.versions", "must have exactly one version marked as storage version")
        ]
    seen: set[str] = set()
    storage = 0
    for i, version in enumerate(versions):
        if not isinstance(version, dict):
            continue
        path = f"spec.versions[{i}]"
        vname = version.get("name")
        if not vname:
            out.append(fe.required(path + ".name"))
        elif isinstance(vname, str):
            out.extend(fe.invalid(path + ".name", vname, m) for m in is_dns1035_label(vname))
            if vname in seen:
                out.append(fe.duplicate(path + ".name", vname))
            seen.add(vname)
        if version.get("storage") is True:
            storage += 1
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            out.append(fe.required(path + ".schema.openAPIV3Schema", "schemas are required"))
        else:
            errors = structural_errors(schema, path + ".schema.openAPIV3Schema")
            out.extend(errors or _compile_errors(schema, path + ".schema.openAPIV3Schema"))
            if not errors:
                out.extend(rule_errors(schema, path + ".schema.openAPIV3Schema"))
        out.extend(_selectable_fields(version.get("selectableFields"), path + ".selectableFields"))
    if storage != 1:
        out.append(
            fe.invalid(
                "spec.versions",
                _version_names(versions),
                "must have exactly one version marked as storage version",
            )
        )
    if not any(isinstance(v, dict) and v.get("served") is True for v in versions):
        out.append(
            fe.invalid(
                "spec.versions",
                _version_names(versions),
                "must have at least one version marked as served",
            )
        )
    return out


def _compile_errors(schema: dict[str, Any], path: str) -> list[Cause]:
    """Schema keywords jsonschema-rs rejects (an invalid `pattern` regex, mostly)."""
    try:
        compile_schema(schema)
    except jsonschema_rs.ValidationError as e:
        where = path
        after_properties = False
        for part in e.instance_path:
            if after_properties:
                where += f"[{part}]"
            else:
                where = fe.join(where, part)
            after_properties = part == "properties"
        return [fe.invalid(where, e.instance, e.message)]
    return []


def _version_names(versions: list[object]) -> list[object]:
    return [v.get("name") for v in versions if isinstance(v, dict)]


def _selectable_fields(fields: object, path: str) -> list[Cause]:
    out: list[Cause] = []
    if not isinstance(fields, list):
        return out
    if len(fields) > _MAX_SELECTABLE_FIELDS:
        out.append(fe.too_many(path, _MAX_SELECTABLE_FIELDS))
    seen: set[str] = set()
    for i, f in enumerate(fields):
        json_path = f.get("jsonPath") if isinstance(f, dict) else None
        p = f"{path}[{i}].jsonPath"
        if not json_path:
            out.append(fe.required(p))
        elif not isinstance(json_path, str) or not _JSON_PATH.fullmatch(json_path):
            out.append(fe.invalid(p, json_path, "must be a simple JSON path (e.g. .spec.color)"))
        elif json_path in seen:
            out.append(fe.duplicate(p, json_path))
        else:
            seen.add(json_path)
    return out


def structural_errors(schema: dict[str, Any], path: str) -> list[Cause]:
    """The structural-schema violations that matter most (kube's structural.Validate)."""
    out: list[Cause] = []
    typ = schema.get("type")
    if typ != "object":
        if not typ:
            out.append(fe.required(path + ".type", "must not be empty at the root"))
        else:
            out.append(fe.invalid(path + ".type", typ, "must be object at the root"))
    _node(schema, path, out, root=True)
    meta = (schema.get("properties") or {}).get("metadata")
    if isinstance(meta, dict):
        extra = set(meta.get("properties") or {}) - {"name", "generateName"}
        allowed_keys = {"type", "properties", "description"}
        if extra or set(meta) - allowed_keys:
            out.append(
                fe.forbidden(
                    path + ".properties[metadata]",
                    "must not specify anything other than name and generateName, but "
                    "metadata is implicitly specified",
                )
            )
    return out


def _node(s: dict[str, Any], path: str, out: list[Cause], *, root: bool = False) -> None:
    typ = s.get("type")
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if typ is not None and typ not in _JSON_TYPES:
        out.append(fe.not_supported(path + ".type", typ, _JSON_TYPES))
    if int_or_string and typ:
        out.append(
            fe.forbidden(path + ".type", "must be empty if x-kubernetes-int-or-string is true")
        )
    if preserve is False:
        out.append(
            fe.invalid(
                path + ".x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"
            )
        )
    if s.get("x-kubernetes-embedded-resource") is True and typ != "object":
        out.append(
            fe.invalid(
                path + ".type", typ, "must be object if x-kubernetes-embedded-resource is true"
            )
        )
    if not typ and not int_or_string and not root and preserve is not True:
        if "properties" in s or "additionalProperties" in s:
            out.append(fe.required(path + ".type", "must not be empty for specified object fields"))
        elif "items" in s:
            out.append(fe.required(path + ".type", "must not be empty for specified array items"))
        else:
            out.append(fe.required(path + ".type", "must not be empty for specified fields"))
    props = s.get("properties")
    extra = s.get("additionalProperties")
    if isinstance(props, dict) and props and extra not in (None, False) and extra != {}:
        out.append(
            fe.forbidden(
                path + ".additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if extra is False:
        out.append(
            fe.forbidden(path + ".additionalProperties", "must not be false in a structural schema")
        )
    if typ == "array" and not isinstance(s.get("items"), dict):
        out.append(fe.required(path + ".items", "must be specified"))
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                _node(sub, f"{path}.properties[{key}]", out)
    if isinstance(extra, dict):
        _node(extra, path + ".additionalProperties", out)
    items = s.get("items")
    if isinstance(items, dict):
        _node(items, path + ".items", out)
