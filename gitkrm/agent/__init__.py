"""gitkrm.agent: the long-lived process that keeps a store equal to its sources.

The process itself is `gitkrm.agent.agent.Agent`; this package exports the light parts
(configuration, the GitSource kind, status, logging) so that readers such as `gitkrm status`
start fast. See docs/agent.md, docs/concepts.md and docs/reference.md.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .config import SourceConfig, check_name
    from .config_flags import from_flags
    from .config_read import from_object, load_config_file
    from .crd import GITSOURCE_GVK, NAMESPACE, REQUESTED_AT, gitsource_crd
    from .duration import format_duration, parse_duration
    from .logging import LogFormat, configure
    from .shutdown import Shutdown
    from .state import store_url
    from .status import Outcome

__getattr__ = exports(
    __name__,
    {
        "GITSOURCE_GVK": ".crd",
        "LogFormat": ".logging",
        "NAMESPACE": ".crd",
        "Outcome": ".status",
        "REQUESTED_AT": ".crd",
        "Shutdown": ".shutdown",
        "SourceConfig": ".config",
        "check_name": ".config",
        "configure": ".logging",
        "format_duration": ".duration",
        "from_flags": ".config_flags",
        "from_object": ".config_read",
        "gitsource_crd": ".crd",
        "load_config_file": ".config_read",
        "parse_duration": ".duration",
        "store_url": ".state",
    },
)

__all__ = [
    "GITSOURCE_GVK",
    "NAMESPACE",
    "REQUESTED_AT",
    "LogFormat",
    "Outcome",
    "Shutdown",
    "SourceConfig",
    "check_name",
    "configure",
    "format_duration",
    "from_flags",
    "from_object",
    "gitsource_crd",
    "load_config_file",
    "parse_duration",
    "store_url",
]
