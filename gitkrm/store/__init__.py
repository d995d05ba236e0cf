"""gitkrm.store: the Store protocol and `open_store(url)` (see docs/architecture.md)."""

from gitkrm.store.protocol import (
    BatchOp,
    BatchOpKind,
    EventType,
    PatchType,
    Preconditions,
    Propagation,
    Store,
    WatchEvent,
    WriteOptions,
)
from gitkrm.store.url import StoreURL, open_store, parse_store_url

__all__ = [
    "BatchOp",
    "BatchOpKind",
    "EventType",
    "PatchType",
    "Preconditions",
    "Propagation",
    "Store",
    "StoreURL",
    "WatchEvent",
    "WriteOptions",
    "open_store",
    "parse_store_url",
]
