"""Type aliases for raw KRM objects: plain dicts, as they come from YAML or JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeAlias

Obj: TypeAlias = dict[str, Any]
"""A raw KRM object (`apiVersion`, `kind`, `metadata`, `spec`, `status`, ...)."""


class FieldValidation(StrEnum):
    """What a write does with fields the schema does not know (as `fieldValidation=`)."""

    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"
