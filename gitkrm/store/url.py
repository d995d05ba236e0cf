"""`open_store(url)`: the one entry point to a store, chosen by the URL's scheme."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gitkrm.errors import BadRequest
from gitkrm.store.protocol import Store
from gitkrm.store.sqlite.store import SqliteStore


@dataclass(frozen=True, slots=True)
class StoreURL:
    scheme: str
    path: str  # sqlite: a file path or ":memory:"
    query: dict[str, list[str]]


def parse_store_url(url: str) -> StoreURL:
    """`sqlite:///rel/path.db`, `sqlite:////abs/path.db` (SQLAlchemy's slashes),
    `sqlite:///:memory:`; `kube://?kubeconfig=...&context=...`."""
    if not isinstance(url, str) or "://" not in url:
        raise BadRequest(f"store URL {url!r} must look like sqlite:///path or kube://")
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/"):
            raise BadRequest(
                f"store URL {url!r}: use sqlite:///relative/path.db, "
                "sqlite:////absolute/path.db or sqlite:///:memory:"
            )
        path, _, query = rest[1:].partition("?")
        if not path:
            raise BadRequest(f"store URL {url!r} names no database file")
        return StoreURL(scheme="sqlite", path=path, query=parse_qs(query))
    parts = urlsplit(url)
    return StoreURL(scheme=scheme, path=parts.path, query=parse_qs(parts.query))


async def open_store(url: str, **options: Any) -> Store:
    """Open the store a URL names.

    sqlite options: read_only (a reader process: no writer lock, writes refused),
    history_limit (revisions of history kept for watch and continue), registry,
    watch_queue_size, bookmark_interval, poll_interval (seconds; read_only watches).
    """
    target = parse_store_url(url)
    if target.scheme == "sqlite":
        return SqliteStore.open(target.path, **options)
    if target.scheme == "kube":
        raise BadRequest("store URL kube://: the cluster target is not available yet")
    raise BadRequest(f"store URL {url!r}: unknown scheme {target.scheme!r} (use sqlite://)")
