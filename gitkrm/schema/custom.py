"""Admission of custom resources: prune, default and validate against a CRD version schema.

The compiled validator of a schema is cached per process by the schema's canonical JSON,
so re-registering the same CRDs (every store open does) compiles nothing again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import jsonschema_rs
import orjson

from gitkrm.errors import Cause
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.cel.rules import CrdRules
from gitkrm.schema.formats import FORMATS
from gitkrm.schema.listtypes import list_type_errors
from gitkrm.schema.resources import ResourceInfo
from gitkrm.schema.structural import PathT, Schema, apply_defaults, has_defaults, prune
from gitkrm.schema.structural import to_json_schema as _to_json_schema
from gitkrm.schema.validation import cause_for

_CACHE: dict[bytes, jsonschema_rs.Validator] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 512


def compile_schema(schema: Schema) -> jsonschema_rs.Validator:
    """The (cached) validator of an openAPIV3Schema; jsonschema_rs.ValidationError when the
    schema itself is not valid (a bad `pattern`, an unknown `type`)."""
    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    validator = jsonschema_rs.validator_for(
        _to_json_schema(schema), formats=FORMATS, validate_formats=True
    )
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = validator
    return validator


@dataclass(slots=True)
class CustomVersion:
    """One served version of a custom kind: its table entry and its structural schema."""

    info: ResourceInfo
    schema: Schema
    crd_name: str
    defaults: bool = False
    _validator: jsonschema_rs.Validator | None = field(default=None, repr=False)
    _rules: CrdRules | bool | None = field(default=False, repr=False)  # False: not compiled yet

    @classmethod
    def of(cls, info: ResourceInfo, schema: Schema, crd_name: str) -> CustomVersion:
        return cls(info=info, schema=schema, crd_name=crd_name, defaults=has_defaults(schema))

    @property
    def validator(self) -> jsonschema_rs.Validator:
        if self._validator is None:
            self._validator = compile_schema(self.schema)
        return self._validator

    def prune(self, obj: Obj) -> list[PathT]:
        """Drop unspecified fields; return the paths of those that were dropped."""
        return prune(obj, self.schema)

    def default(self, obj: Obj) -> None:
        if self.defaults:
            apply_defaults(obj, self.schema)

    @property
    def rules(self) -> CrdRules | None:
        """The schema's compiled x-kubernetes-validations (None when it has none)."""
        if self._rules is False:
            self._rules = CrdRules.of(self.schema)
        assert not isinstance(self._rules, bool)
        return self._rules

    def validate(self, obj: Obj, old: Obj | None = None) -> list[Cause]:
        causes: list[Cause] = []
        v = self.validator
        if not v.is_valid(obj):
            causes.extend(cause_for(e) for e in v.iter_errors(obj))
        causes.extend(list_type_errors(obj, self.schema))
        causes.extend(_embedded_errors(obj, self.schema, ()))
        # As apiextensions-apiserver: CEL rules run only over a schema-valid object.
        if not causes and (rules := self.rules) is not None:
            causes.extend(rules.validate(obj, old))
        return causes


def _embedded_errors(obj: object, schema: Schema, path: PathT) -> list[Cause]:
    """Embedded resources' metadata must be an object (names are checked by the owner)."""
    out: list[Cause] = []
    if isinstance(obj, dict):
        if path and schema.get("x-kubernetes-embedded-resource") is True:
            meta = obj.get("metadata")
            if meta is not None and not isinstance(meta, dict):
                out.append(fe.invalid(fe.path_of((*path, "metadata")), meta, "must be an object"))
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if key in obj and isinstance(sub, dict):
                    out.extend(_embedded_errors(obj[key], sub, (*path, key)))
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                out.extend(_embedded_errors(item, items, (*path, i)))
    return out
