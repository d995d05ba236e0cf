"""The embedded SQLite store."""

from gitkrm.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
