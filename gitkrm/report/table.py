"""Per-object health for `gitkrm status`: read from the status files an agent wrote into its
source caches (no store needed, works while the agent runs), or from live verdicts.

`read_local_status(state_dir)` gives each agent's status document; `health_rows` turns a
document (or `live_rows` verdicts) into rows; `health_table` prints them; `source_health`
gives the per-source columns (aggregate health, objects not Current).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gitkrm.errors import Invalid
from gitkrm.health import Health, HealthResult
from gitkrm.krm import ObjectRef
from gitkrm.source.gitcli import base_env

from .formats import STATUS_KIND, parse
from .statusfile import STATUS_REF

HEADERS = ("SOURCE", "NAMESPACE", "KIND", "NAME", "HEALTH", "MESSAGE")


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        env=base_env({"GIT_CONFIG_COUNT": "0"}),
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def read_local_status(state_dir: Path) -> dict[str, dict[str, Any]]:
    """agent -> its status document, from the local status ref of every source cache under
    `<state>/git/` (the newest `updated` where several caches have an agent's file)."""
    out: dict[str, dict[str, Any]] = {}
    root = state_dir / "git"
    if not root.is_dir():
        return out
    for cache in sorted(p for p in root.iterdir() if (p / "HEAD").is_file()):
        listed = _git(cache, "ls-tree", "-z", f"{STATUS_REF}:status")
        if listed.returncode != 0:
            continue
        for record in listed.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            parts = meta.split()
            if len(parts) != 3 or parts[1] != b"blob" or not name.endswith(b".yaml"):
                continue
            blob = _git(cache, "cat-file", "blob", parts[2].decode())
            if blob.returncode != 0:
                continue
            try:
                doc = parse(blob.stdout, kind=STATUS_KIND, what=name.decode())
            except Invalid:
                continue
            agent = str(doc.get("agent") or name.decode()[: -len(".yaml")])
            if agent not in out or str(doc.get("updated", "")) > str(out[agent].get("updated", "")):
                out[agent] = doc
    return out


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


def health_table(rows: Sequence[Sequence[str]], *, headers: Sequence[str] = HEADERS) -> str:
    """Aligned columns like kubectl's; the last column is not padded."""
    lines = [list(headers), *[[c.replace("\n", " ") for c in r] for r in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers) - 1)]
    out = []
    for line in lines:
        cells = [c.ljust(w) for c, w in zip(line[:-1], widths, strict=True)]
        out.append("   ".join([*cells, line[-1]]).rstrip() + "\n")
    return "".join(out)


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


def status_health_text(
    state_dir: Path, *, agent: str | None = None, sources: Iterable[str] | None = None
) -> str:
    """The per-object health table of an agent's state directory (every agent whose status
    file is there, or only `agent`), for `gitkrm status`; "" when no status was written."""
    docs = read_local_status(state_dir)
    wanted = None if sources is None else list(sources)
    rows: list[list[str]] = []
    for name, doc in sorted(docs.items()):
        if agent is None or name == agent:
            rows.extend(health_rows(doc, sources=wanted))
    return health_table(rows) if rows else ""
