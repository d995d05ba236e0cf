"""gitkrm.store: the Store protocol and `open_store(url)` (see docs/architecture.md)."""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
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

__getattr__ = exports(
    __name__,
    {
        "BatchOp": ".protocol",
        "BatchOpKind": ".protocol",
        "EventType": ".protocol",
        "PatchType": ".protocol",
        "Preconditions": ".protocol",
        "Propagation": ".protocol",
        "Store": ".protocol",
        "StoreURL": ".url",
        "WatchEvent": ".protocol",
        "WriteOptions": ".protocol",
        "open_store": ".url",
        "parse_store_url": ".url",
    },
)

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
