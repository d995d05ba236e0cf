"""Per-object health as rows and tables, for `gitkrm status` (pure: no Git, no store).

`health_rows` turns a status document (`localstatus.read_local_status`) or `live_rows`
verdicts into rows; `health_table` prints them (`aligned`: the columns of every table
`gitkrm status` and `gitkrm history` print); `source_health` gives the per-source
columns (aggregate health, objects not Current).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gitkrm.health import Health, HealthResult
from gitkrm.krm import ObjectRef

HEADERS = ("SOURCE", "NAMESPACE", "KIND", "NAME", "HEALTH", "MESSAGE")


def _kind(group: str, kind: str) -> str:
    return f"{group}/{kind}" if group else kind


def health_rows(doc: Mapping[str, Any], *, sources: Iterable[str] | None = None) -> list[list[str]]:
    """One row per object of a status document (of the given sources only)."""
    wanted = None if sources is None else set(sources)
    rows: list[list[str]] = []
    for source, entry in sorted((doc.get("sources") or {}).items()):
        if wanted is not None and source not in wanted:
            continue
        for o in entry.get("objects") or ():
            rows.append(
                [
                    source,
                    str(o.get("namespace") or "-"),
                    _kind(str(o.get("group", "")), str(o.get("kind", ""))),
                    str(o.get("name", "")),
                    str(o.get("health", "")),
                    str(o.get("message") or ""),
                ]
            )
    return rows


def live_rows(source: str, verdicts: Mapping[ObjectRef, HealthResult]) -> list[list[str]]:
    """Rows for verdicts computed now (e.g. with `gitkrm.health.health_of` on the store)."""
    rows = []
    for ref, h in sorted(
        verdicts.items(),
        key=lambda rh: (rh[0].namespace or "", rh[0].group, rh[0].kind, rh[0].name),
    ):
        message = "" if h.status is Health.CURRENT else h.message
        rows.append(
            [
                source,
                ref.namespace or "-",
                _kind(ref.group, ref.kind),
                ref.name,
                h.status.value,
                message,
            ]
        )
    return rows


def aligned(lines: Sequence[Sequence[str]]) -> list[str]:
    """Lines of cells (the first: the headers) in columns like kubectl's, three spaces
    apart; the last column is not padded. Each line ends with a newline."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    out = []
    for line in lines:
        cells = [c.ljust(w) for c, w in zip(line[:-1], widths, strict=True)]
        out.append("   ".join([*cells, line[-1]]).rstrip() + "\n")
    return out


def health_table(rows: Sequence[Sequence[str]], *, headers: Sequence[str] = HEADERS) -> str:
    """Aligned columns like kubectl's; the last column is not padded."""
    return "".join(aligned([list(headers), *[[c.replace("\n", " ") for c in r] for r in rows]]))


def source_health(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """source -> {health, revision, objects, notCurrent, updated}: columns for the sources
    table of `gitkrm status`."""
    out: dict[str, dict[str, Any]] = {}
    for source, entry in (doc.get("sources") or {}).items():
        objects = entry.get("objects") or []
        out[source] = {
            "health": entry.get("health"),
            "revision": entry.get("revision"),
            "objects": len(objects),
            "notCurrent": sum(1 for o in objects if o.get("health") != Health.CURRENT.value),
            "updated": entry.get("updated"),
        }
    return out
