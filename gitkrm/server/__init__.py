"""gitkrm.server: the Kubernetes-compatible HTTP API of the embedded store (docs/kubectl.md).

`ApiServer` is the ASGI app; `serve.serve()` runs it with uvicorn in a running loop, and
`ServerThread` runs one in a background thread. See docs/kubectl.md.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from gitkrm.server.app import ApiServer
    from gitkrm.server.listen import parse_listen
    from gitkrm.server.metrics import Metrics
    from gitkrm.server.serve import (
        Bound,
        ServeOptions,
        ServerThread,
        is_loopback,
    )

__getattr__ = exports(
    __name__,
    {
        "ApiServer": ".app",
        "Bound": ".serve",
        "Metrics": ".metrics",
        "ServeOptions": ".serve",
        "ServerThread": ".serve",
        "is_loopback": ".serve",
        "parse_listen": ".listen",
    },
)

__all__ = [
    "ApiServer",
    "Bound",
    "Metrics",
    "ServeOptions",
    "ServerThread",
    "is_loopback",
    "parse_listen",
]
