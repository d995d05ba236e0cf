"""Type aliases for raw KRM objects: plain dicts, as they come from YAML or JSON."""

from __future__ import annotations

from typing import Any, TypeAlias

Obj: TypeAlias = dict[str, Any]
"""A raw KRM object (`apiVersion`, `kind`, `metadata`, `spec`, `status`, ...)."""
