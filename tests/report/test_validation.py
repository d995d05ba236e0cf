from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gitkrm.errors import Invalid
from gitkrm.report import validate_note, validate_status
from gitkrm.report.validation import NOTE_SCHEMA, SCHEMA_DIR, STATUS_SCHEMA, load_schema

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"

ENTRY: dict[str, Any] = {
    "revision": "a" * 40,
    "time": "2024-05-01T10:00:00Z",
    "updated": "2024-05-01T10:00:00Z",
    "result": "Succeeded",
    "health": "InProgress",
    "counts": {"created": 1, "configured": 0, "pruned": 0, "unchanged": 0, "failed": 0},
    "errors": [],
    "objects": [
        {
            "group": "apps",
            "kind": "Deployment",
            "namespace": "d",
            "name": "w",
            "health": "InProgress",
        }
    ],
}


def _note(**changes: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "SyncNote",
        "agent": "edge-1",
        "sources": {"default": {**ENTRY, **changes}},
    }


@pytest.mark.parametrize("name", [NOTE_SCHEMA, STATUS_SCHEMA])
def test_docs_hold_the_same_schemas_as_the_package(name: str) -> None:
    assert (DOCS / name).read_bytes() == (SCHEMA_DIR / name).read_bytes()
    jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_a_valid_note_passes() -> None:
    validate_note(_note())


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"revision": "main"}, "sources.default.revision"),
        ({"result": "Maybe"}, "sources.default.result"),
        ({"counts": {"created": 1}}, "sources.default.counts"),
        (
            {"objects": [{**ENTRY["objects"][0], "health": "Current"}]},
            "sources.default.objects.0.health",
        ),
        ({"extra": 1}, "sources.default"),
        ({"time": "yesterday"}, "sources.default.time"),
    ],
)
def test_bad_notes_are_invalid_naming_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as e:
        validate_note(_note(**changes))
    assert field in [c.field for c in e.value.causes]


def test_status_needs_where_the_source_reads_from() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "AgentStatus",
        "agent": "edge-1",
        "updated": "2024-05-01T10:00:00Z",
        "sources": {"default": {**ENTRY, "url": "https://h/r", "ref": "branch main", "path": ""}},
    }
    validate_status(doc)
    current = {**ENTRY["objects"][0], "health": "Current"}
    # The status file lists every object (a new list: ENTRY's is shared by the tests).
    doc["sources"]["default"]["objects"] = [*ENTRY["objects"], current]
    validate_status(doc)
    del doc["sources"]["default"]["url"]
    with pytest.raises(Invalid, match="status file"):
        validate_status(doc)
    with pytest.raises(Invalid):
        validate_status({**doc, "agent": "Not_A_Label"})


def test_jsonschema_has_the_last_word_on_what_jsonschema_rs_refuses() -> None:
    """jsonschema-rs decides fast; a document it refuses is checked again by jsonschema,
    which accepts a revision with a newline at the end (Python's `$` matches before it)."""
    from gitkrm.report.validation import _fast

    doc = _note(revision="a" * 40 + "\n")
    assert not _fast(NOTE_SCHEMA).is_valid(doc)
    validate_note(doc)


def test_a_valid_document_loads_no_jsonschema() -> None:
    """jsonschema (70 ms of imports) only explains refusals."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from gitkrm.report.validation import validate_note\n"
        f"validate_note({_note()!r})\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
