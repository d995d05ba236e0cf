"""The schema Registry: which kinds exist, and admission (default, prune, validate) of writes.

One Registry per store. Built-in kinds come from the shared resource table and schemas of
the pinned release (loaded once per process); custom kinds are added by registering CRDs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from gitkrm.errors import BadRequest, Cause, Invalid, NotFound
from gitkrm.krm.names import NameRule, validate_object_meta
from gitkrm.krm.refs import GVK, GroupKind
from gitkrm.krm.types import FieldValidation, Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.carryover import carry_over
from gitkrm.schema.crd import (
    crd_name,
    custom_versions,
    names_conflict,
    set_status,
)
from gitkrm.schema.crd_validation import validate_crd
from gitkrm.schema.custom import CustomVersion
from gitkrm.schema.defaults import Defaulter, apply_defaults, defaulter_for
from gitkrm.schema.immutable import metadata_update, validate_update
from gitkrm.schema.openapi import definition_name
from gitkrm.schema.resources import ResourceInfo, builtin_resources
from gitkrm.schema.rules import Rule, rule_for
from gitkrm.schema.secrets import merge_string_data
from gitkrm.schema.validation import PathT, check, fast_validator

__all__ = ["Registry", "ResourceInfo", "unknown_field_error", "version_priority"]


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others, by name)."""
    m = re.fullmatch(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?", version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


def unknown_field_error(gvk: GVK, paths: Iterable[str]) -> BadRequest:
    """Kube's Strict-mode refusal, word for word: `Deployment in version "v1" cannot be
    handled as a Deployment: strict decoding error: unknown field "spec.foo", ...`."""
    listed = ", ".join(f'unknown field "{p}"' for p in paths)
    return BadRequest(
        f'{gvk.kind} in version "{gvk.version}" cannot be handled as a {gvk.kind}: '
        f"strict decoding error: {listed}"
    )


def _delete_path(obj: Obj, path: PathT) -> None:
    node: object = obj
    for key in path[:-1]:
        if isinstance(node, dict) and isinstance(key, str):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


@dataclass(frozen=True, slots=True)
class _Kind:
    """What admission needs about one served kind, looked up once per (apiVersion, kind)."""

    gvk: GVK
    info: ResourceInfo
    custom: CustomVersion | None
    definition: str  # its OpenAPI definition ("" for custom kinds)
    fast_valid: Callable[[object], bool] | None  # the fast-path schema (built-in kinds)
    defaulter: Defaulter | None
    rule: Rule | None
    is_secret: bool


class Registry:
    """Served kinds (built-in and custom) and admission of objects of those kinds."""

    def __init__(self, resources: Iterable[ResourceInfo] = ()) -> None:
        self._by_gvk: dict[GVK, ResourceInfo] = {}
        self._by_name: dict[tuple[str, str, str], ResourceInfo] = {}
        self._custom: dict[GVK, CustomVersion] = {}
        self._crds: dict[str, list[GVK]] = {}
        # (apiVersion, kind) -> what admission needs, so the hot path builds no GVK.
        self._types: dict[tuple[str, str], _Kind] = {}
        for info in resources:
            self._add(info)

    @classmethod
    def builtin(cls) -> Registry:
        """A new registry holding the built-in kinds of the pinned release (Kubernetes 1.33).

        Cheap to call repeatedly: the table and schemas are loaded once per process.
        """
        return cls(builtin_resources())

    # ---- the resource table ----

    def _add(self, info: ResourceInfo) -> None:
        self._types.clear()
        self._by_gvk[info.gvk] = info
        for name in (info.plural, info.singular, *info.short_names):
            self._by_name.setdefault((info.group, info.version, name.lower()), info)

    def _remove(self, info: ResourceInfo) -> None:
        self._types.clear()
        self._by_gvk.pop(info.gvk, None)
        for name in (info.plural, info.singular, *info.short_names):
            key = (info.group, info.version, name.lower())
            if self._by_name.get(key) is info:
                del self._by_name[key]

    def info(self, gvk: GVK) -> ResourceInfo:
        info = self._by_gvk.get(gvk)
        if info is None:
            raise NotFound(f'no matches for kind "{gvk.kind}" in version "{gvk.api_version}"')
        return info

    def info_for_resource(self, *, group: str, version: str, resource: str) -> ResourceInfo:
        """The kind served at a REST resource name (plural, singular or short name)."""
        info = self._by_name.get((group, version, resource.lower()))
        if info is None:
            gv = f"{group}/{version}" if group else version
            raise NotFound(f'the server doesn\'t have a resource type "{resource}" in "{gv}"')
        return info

    def infos(self) -> list[ResourceInfo]:
        """All served kinds, built-in and custom."""
        return list(self._by_gvk.values())

    def versions_of(self, gk: GroupKind) -> list[ResourceInfo]:
        """All served versions of a group/kind, the preferred one first."""
        found = [i for i in self._by_gvk.values() if i.group == gk.group and i.kind == gk.kind]
        return sorted(found, key=lambda i: version_priority(i.version))

    # ---- admission ----

    def admit(
        self,
        obj: Obj,
        *,
        old: Obj | None = None,
        field_validation: FieldValidation = FieldValidation.STRICT,
        subresource: str | None = None,
    ) -> list[str]:
        """Default, prune and validate `obj` in place for a create (old is None) or update.

        Raises Invalid with every cause, or BadRequest for unknown fields under Strict;
        returns warnings (unknown fields under Warn). Server-managed metadata is left to
        the store.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        resolved = (
            self._types.get((api_version, kind))
            if type(api_version) is str and type(kind) is str
            else None
        )
        if resolved is None:
            resolved = self._resolve(GVK.of(obj))
        if resolved.custom is not None:
            return self._admit_custom(
                obj, resolved.custom, old=old, field_validation=field_validation
            )
        gvk, info = resolved.gvk, resolved.info
        warnings: list[str] = []
        causes: list[Cause] = []
        if resolved.is_secret:
            merge_string_data(obj)
        is_valid = resolved.fast_valid
        try:
            fast = is_valid is not None and is_valid(obj)
        except ValueError as e:  # a value JSON cannot hold (a date, a set, ...)
            raise BadRequest(f"{gvk.kind} {_name_of(obj)!r}: not a JSON object: {e}") from e
        if not fast:
            report = check(resolved.definition, obj)
            if report is not None:
                if report.unknown:
                    warnings = self._unknown(obj, gvk, report.unknown, field_validation)
                causes.extend(report.causes)
                if report.mistyped:
                    causes.extend(
                        validate_object_meta(
                            obj, namespaced=info.namespaced, name_rule=info.name_rule
                        )
                    )
                    raise _invalid(obj, gvk, causes)
        if old is not None:
            carry_over(obj, old, group=gvk.group, kind=gvk.kind)
        if resolved.defaulter is not None:
            resolved.defaulter(obj, old is None)
        # The fast-path schema checked metadata.labels (defaulting only copies labels it
        # checked too, from a pod template).
        if meta_causes := validate_object_meta(
            obj, namespaced=info.namespaced, name_rule=info.name_rule, labels_checked=fast
        ):
            causes.extend(meta_causes)
        if subresource is None and resolved.rule is not None:
            causes.extend(resolved.rule(obj, fast))
        if old is not None:
            causes.extend(validate_update(obj, old, group=gvk.group, kind=gvk.kind))
        if causes:
            raise _invalid(obj, gvk, causes)
        return warnings

    def drop_unknown(self, obj: Obj) -> list[str]:
        """Delete the fields of `obj` its kind's schema does not know, in place, as a write
        with fieldValidation=Ignore stores it (`kubectl apply --validate=false`); their
        paths. An unknown kind: nothing dropped (admission names it)."""
        try:
            resolved = self._resolve(GVK.of(obj))
        except NotFound:
            return []
        if resolved.custom is not None:
            paths = resolved.custom.prune(obj)
        else:
            report = check(resolved.definition, obj)
            paths = list(report.unknown) if report is not None else []
            for p in paths:
                _delete_path(obj, p)
        return [fe.path_of(p) for p in paths]

    def update_defaulter(self, gvk: GVK) -> Callable[[Obj], None] | None:
        """What admission does to an update's object of `gvk` before storing it that can
        change its value: a custom resource pruned and defaulted by its schema, a built-in
        kind's defaults (None: nothing, or an unknown kind). Lets a planner see an apply
        whose result the server turns back into the live object."""
        try:
            resolved = self._resolve(gvk)
        except NotFound:
            return None
        custom = resolved.custom
        if custom is not None:

            def default_custom(obj: Obj) -> None:
                custom.prune(obj)
                custom.default(obj)

            return default_custom
        builtin = resolved.defaulter
        if builtin is None:
            return None
        return lambda obj: builtin(obj, False)

    def _resolve(self, gvk: GVK) -> _Kind:
        info = self.info(gvk)
        custom = self._custom.get(gvk)
        definition = ""
        if custom is None:
            found = definition_name(gvk)
            if found is None:
                raise NotFound(f'no schema for kind "{gvk.kind}" in version "{gvk.api_version}"')
            definition = found
        resolved = _Kind(
            gvk=gvk,
            info=info,
            custom=custom,
            definition=definition,
            fast_valid=fast_validator(definition) if custom is None else None,
            defaulter=defaulter_for(gvk.group, gvk.kind),
            rule=rule_for(gvk.group, gvk.kind),
            is_secret=gvk.group == "" and gvk.kind == "Secret",
        )
        self._types[(gvk.api_version, gvk.kind)] = resolved
        return resolved

    def _admit_custom(
        self, obj: Obj, custom: CustomVersion, *, old: Obj | None, field_validation: FieldValidation
    ) -> list[str]:
        """Prune, default, validate a custom resource as the apiextensions server does."""
        try:
            return self._admit_custom_json(obj, custom, old=old, field_validation=field_validation)
        except ValueError as e:  # a value JSON cannot hold (a date, a set, ...)
            kind = custom.info.kind
            raise BadRequest(f"{kind} {_name_of(obj)!r}: not a JSON object: {e}") from e

    def _admit_custom_json(
        self, obj: Obj, custom: CustomVersion, *, old: Obj | None, field_validation: FieldValidation
    ) -> list[str]:
        warnings: list[str] = []
        unknown = custom.prune(obj)
        if unknown:
            shown = [fe.path_of(p) for p in unknown]
            if field_validation is FieldValidation.STRICT:
                raise unknown_field_error(custom.info.gvk, shown)
            if field_validation is FieldValidation.WARN:
                warnings = [f'unknown field "{s}"' for s in shown]
        custom.default(obj)
        info = custom.info
        causes = validate_object_meta(
            obj, namespaced=info.namespaced, name_rule=NameRule.DNS1123_SUBDOMAIN
        )
        causes.extend(custom.validate(obj, old))
        if old is not None:
            causes.extend(metadata_update(obj, old))
        if causes:
            raise _invalid(obj, info.gvk, causes)
        return warnings

    # ---- CustomResourceDefinitions ----

    def register_crd(self, crd: Obj) -> None:
        """Register the kinds of a CRD and set its status (acceptedNames, conditions).

        Defaults (singular, listKind) and validates the CRD first (Invalid). On a name clash
        with another kind of the same group, NamesAccepted is False and no kind is registered.
        """
        apply_defaults(crd, group=_CRD_GVK.group, kind=_CRD_GVK.kind, create=False)
        causes = validate_crd(crd)
        if causes:
            raise _invalid(crd, _CRD_GVK, causes)
        name = crd_name(crd)
        previous = self._crds.get(name, [])
        others = [i for g, i in self._by_gvk.items() if g not in previous]
        conflict = names_conflict(crd, others)
        set_status(crd, conflict)
        if conflict is not None:
            return
        self.unregister_crd(name)
        versions = custom_versions(crd)
        for cv in versions:
            self._add(cv.info)
            self._custom[cv.info.gvk] = cv
        self._crds[name] = [cv.info.gvk for cv in versions]

    def unregister_crd(self, name: str) -> None:
        """Forget the kinds of a CRD (by its metadata.name, `<plural>.<group>`)."""
        for gvk in self._crds.pop(name, ()):
            info = self._by_gvk.get(gvk)
            if info is not None:
                self._remove(info)
            self._custom.pop(gvk, None)

    def custom_schema(self, gvk: GVK) -> dict[str, object] | None:
        """The openAPIV3Schema of a served custom kind version (None for built-in kinds)."""
        cv = self._custom.get(gvk)
        return cv.schema if cv is not None else None

    @staticmethod
    def _unknown(obj: Obj, gvk: GVK, paths: list[PathT], mode: FieldValidation) -> list[str]:
        shown = [fe.path_of(p) for p in paths]
        if mode is FieldValidation.STRICT:
            raise unknown_field_error(gvk, shown)
        for p in paths:
            _delete_path(obj, p)
        if mode is FieldValidation.WARN:
            return [f'unknown field "{s}"' for s in shown]
        return []


_CRD_GVK = GVK(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition")


def _name_of(obj: Obj) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _invalid(obj: Obj, gvk: GVK, causes: list[Cause]) -> Invalid:
    unique = list(dict.fromkeys(causes))
    if gvk.group == "" and gvk.kind == "Secret":
        unique = _mask_secret_values(obj, unique)
    return Invalid.for_object(kind=gvk.kind, group=gvk.group, name=_name_of(obj), causes=unique)


REDACTED = '"[redacted]"'


def _mask_secret_values(obj: Obj, causes: list[Cause]) -> list[Cause]:
    """A Secret's values never appear in an error: errors reach logs, Git and GitSource status.

    Each value is masked as the messages show it (`fielderrors.show`), whatever its type.
    """
    shown = [
        fe.show(value)
        for key in ("data", "stringData")
        if isinstance(section := obj.get(key), dict)
        for value in section.values()
    ]
    shown = sorted({v for v in shown if v not in ("null", '""')}, key=len, reverse=True)
    if not shown:
        return causes
    masked = []
    for cause in causes:
        message = cause.message
        for text in shown:
            message = message.replace(text, REDACTED)
        masked.append(replace(cause, message=message))
    return masked
