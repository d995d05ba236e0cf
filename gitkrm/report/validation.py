"""The JSON Schemas of the note and the status file, and checking documents against them.

The schema files ship in the package (gitkrm/report/schema/) and are copied verbatim to
docs/schemas/ for readers; a test keeps the two identical.

jsonschema-rs decides (a W10k status file in milliseconds); only a document it refuses is
checked again with jsonschema, whose errors name each field (and which has the last word:
the two agree on these schemas, but a document jsonschema accepts is not refused).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

from gitkrm.errors import Cause, Invalid

SCHEMA_DIR = Path(__file__).parent / "schema"
NOTE_SCHEMA = "note.schema.json"
STATUS_SCHEMA = "status.schema.json"


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return data


@functools.cache
def _fast(name: str) -> Any:
    """The jsonschema-rs validator of schema `name` (its `$ref`s to the other file resolved
    through a registry of both, by file name relative to their `$id`s)."""
    registry = jsonschema_rs.Registry(
        [(load_schema(n)["$id"], load_schema(n)) for n in (NOTE_SCHEMA, STATUS_SCHEMA)]
    )
    schema = load_schema(name)
    return jsonschema_rs.validator_for(schema, registry=registry, validate_formats=False)


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # only to explain a refusal: its import costs 70 ms
    from referencing import Registry, Resource

    resources = [(n, Resource.from_contents(load_schema(n))) for n in (NOTE_SCHEMA, STATUS_SCHEMA)]
    # Both by file name (the relative `$ref`s) and by `$id`.
    registry: Registry[Any] = Registry().with_resources(
        resources + [(r.contents["$id"], r) for _, r in resources]
    )
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry)


def _check(name: str, doc: Mapping[str, Any], what: str) -> None:
    if _fast(name).is_valid(doc):
        return
    errors = sorted(_validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        causes = [
            Cause(
                type="FieldValueInvalid",
                field=".".join(str(p) for p in e.absolute_path) or "<root>",
                message=e.message,
            )
            for e in errors[:20]
        ]
        raise Invalid(f"{what} does not match {name}: {causes[0].message}", causes=causes)


def validate_note(doc: Mapping[str, Any], *, what: str = "note") -> None:
    """`Invalid` (with one cause per problem) unless `doc` is a valid SyncNote."""
    _check(NOTE_SCHEMA, doc, what)


def validate_status(doc: Mapping[str, Any], *, what: str = "status file") -> None:
    """`Invalid` (with one cause per problem) unless `doc` is a valid AgentStatus."""
    _check(STATUS_SCHEMA, doc, what)
