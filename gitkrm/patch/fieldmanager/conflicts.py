"""The 409 of a server-side apply that would change fields other managers own, worded
exactly as apimachinery's NewConflictError (one FieldManagerConflict cause per field)."""

from __future__ import annotations

from gitkrm.errors import Cause, Conflict
from gitkrm.patch.fieldmanager.entries import APPLY, Entry
from gitkrm.patch.fieldmanager.fieldpath import Tree, members, path_string


def print_manager(e: Entry) -> str:
    """`"name"`, plus ` with subresource "status"`, plus ` using apps/v1` for Updates."""
    out = f'"{e.manager}"'
    if e.subresource:
        out += f' with subresource "{e.subresource}"'
    if e.operation != APPLY:
        out += f" using {e.api_version}"
    return out


def conflict_error(conflicts: list[tuple[Entry, Tree]]) -> Conflict:
    """One Conflict for all conflicting fields, managers in identifier order."""
    ordered = sorted(conflicts, key=lambda c: c[0].identifier())
    pairs = [(e, path_string(p)) for e, s in ordered for p in members(s)]
    causes = [
        Cause("FieldManagerConflict", f"conflict with {print_manager(e)}", f) for e, f in pairs
    ]
    if len(pairs) == 1:
        e, f = pairs[0]
        message = f"Apply failed with 1 conflict: conflict with {print_manager(e)}: {f}"
    else:
        lines: list[str] = []
        for e, s in ordered:
            lines.append(f"conflicts with {print_manager(e)}:")
            lines.extend(f"- {path_string(p)}" for p in members(s))
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return Conflict(message, causes=causes)
