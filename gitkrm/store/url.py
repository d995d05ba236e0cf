"""`open_store(url)`: the one entry point to a store, chosen by the URL's scheme."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from gitkrm.errors import BadRequest

if TYPE_CHECKING:
    from gitkrm.store.kube.store import KubeStore
    from gitkrm.store.protocol import Store

_KUBE_NUMBERS = {"qps": float, "burst": int, "concurrency": int, "timeout": float}
_KUBE_KEYS = frozenset({"kubeconfig", "context", *_KUBE_NUMBERS})


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

    kube options (in the query or as keywords; keywords win): kubeconfig, context (the
    pod's service account without a kubeconfig), qps, burst, concurrency, timeout
    (seconds).
    """
    target = parse_store_url(url)
    if target.scheme == "sqlite":
        from gitkrm.store.sqlite.store import SqliteStore  # each target imports its own

        return SqliteStore.open(target.path, **options)
    if target.scheme == "kube":
        return open_kube(target, **options)
    raise BadRequest(
        f"store URL {url!r}: unknown scheme {target.scheme!r} (use sqlite:// or kube://)"
    )


def open_kube(target: StoreURL, **options: Any) -> KubeStore:
    """The cluster target of a `kube://?kubeconfig=..&context=..&qps=..` URL."""
    from gitkrm.store.kube.client import ClientOptions  # aiohttp: only for a cluster
    from gitkrm.store.kube.store import KubeStore

    merged: dict[str, Any] = {k: v[-1] for k, v in target.query.items()}
    merged.update(options)
    unknown = sorted(set(merged) - _KUBE_KEYS)
    if unknown:
        raise BadRequest(
            f"store URL kube://: unknown option {unknown[0]!r} "
            f"(use {', '.join(sorted(_KUBE_KEYS))})"
        )
    numbers: dict[str, Any] = {}
    for key, kind in _KUBE_NUMBERS.items():
        if merged.get(key) is not None:
            try:
                numbers[key] = kind(merged[key])
            except (TypeError, ValueError):
                raise BadRequest(f"store URL kube://: {key}={merged[key]!r} is no number") from None
    client = ClientOptions(**numbers)
    kubeconfig = merged.get("kubeconfig")
    return KubeStore.from_kubeconfig(
        str(kubeconfig) if kubeconfig else None,
        context=merged.get("context") or None,
        options=client,
    )
