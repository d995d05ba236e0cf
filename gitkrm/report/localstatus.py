"""The status files an agent wrote into its source caches, read back without the store
(works while the agent runs): each agent's status document, and the per-object health
table of `gitkrm status`.

`read_local_status(state_dir)` gives each agent's status document; `status_health_text`
renders its objects with `table.health_rows` and `table.health_table`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gitkrm.errors import GitkrmError, Invalid
from gitkrm.source.catfile import CatFile
from gitkrm.source.gitcli import GitRunner

from .formats import STATUS_KIND, parse
from .statusfile import STATUS_REF
from .table import health_rows, health_table


def _status_files(cache: Path) -> dict[str, bytes]:
    """File name -> content of the `status/*.yaml` files on the local status ref of one
    cache (empty when it has none): one `ls-tree`, one `cat-file` for all of them."""
    runner = GitRunner(git_dir=cache)
    try:
        listed = runner.run_sync("ls-tree", "-z", "--end-of-options", f"{STATUS_REF}:status")
    except GitkrmError:
        return {}  # no status ref (nothing reported from here yet), or no status/ in it
    blobs: dict[str, str] = {}
    for record in listed.stdout.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob" and name.endswith(b".yaml"):
            blobs[name.decode("utf-8", "replace")] = parts[2].decode()
    if not blobs:
        return {}
    reader = CatFile(cache, runner=runner)
    try:
        data = reader.read_objects(sorted(set(blobs.values())))
    except GitkrmError:
        return {}
    finally:
        reader.close()
    return {name: raw for name, blob in blobs.items() if (raw := data.get(blob)) is not None}


def read_local_status(state_dir: Path) -> dict[str, dict[str, Any]]:
    """agent -> its status document, from the local status ref of every source cache under
    `<state>/git/` (the newest `updated` where several caches have an agent's file)."""
    out: dict[str, dict[str, Any]] = {}
    root = state_dir / "git"
    if not root.is_dir():
        return out
    for cache in sorted(p for p in root.iterdir() if (p / "HEAD").is_file()):
        for name, raw in sorted(_status_files(cache).items()):
            try:
                doc = parse(raw, kind=STATUS_KIND, what=name)
            except Invalid:
                continue
            agent = str(doc.get("agent") or name[: -len(".yaml")])
            if agent not in out or str(doc.get("updated", "")) > str(out[agent].get("updated", "")):
                out[agent] = doc
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
