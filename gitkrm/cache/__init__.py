"""gitkrm.cache: the one watch cache of a store (informers per kind and scope, shared by
controllers, drift detection, the health follower and `wait_for`; see docs/architecture.md)."""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .informer import (
        EVERYTHING,
        NAMESPACE_INDEX,
        Handler,
        IndexFn,
        Informer,
        Key,
        Scope,
        key_of,
        rv_of,
    )
    from .watchcache import CacheStats, Subscription, WatchCache

__getattr__ = exports(
    __name__,
    {
        "CacheStats": ".watchcache",
        "EVERYTHING": ".informer",
        "Handler": ".informer",
        "IndexFn": ".informer",
        "Informer": ".informer",
        "Key": ".informer",
        "NAMESPACE_INDEX": ".informer",
        "Scope": ".informer",
        "Subscription": ".watchcache",
        "WatchCache": ".watchcache",
        "key_of": ".informer",
        "rv_of": ".informer",
    },
)

__all__ = [
    "EVERYTHING",
    "NAMESPACE_INDEX",
    "CacheStats",
    "Handler",
    "IndexFn",
    "Informer",
    "Key",
    "Scope",
    "Subscription",
    "WatchCache",
    "key_of",
    "rv_of",
]
