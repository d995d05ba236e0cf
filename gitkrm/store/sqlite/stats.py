"""Cheap figures about a SqliteStore for monitoring (the API server's /metrics)."""

from __future__ import annotations

from gitkrm.store.sqlite.store import SqliteStore


def object_counts(store: SqliteStore) -> dict[str, int]:
    """Objects stored per group/kind key (`apps/Deployment`, `/ConfigMap`), by one query."""
    core = store._core  # this module belongs to the store package
    rows = core.conn.execute("SELECT gk, count(*) FROM objects GROUP BY gk").fetchall()
    return {str(gk): int(n) for gk, n in rows}
