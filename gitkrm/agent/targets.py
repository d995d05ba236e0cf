"""What the agent syncs into, behind one interface: `Target`.

- `EmbeddedTarget` (`gitkrm.agent.embedded`): the SQLite store of the state directory, its
  watch cache, the API server (`--listen`) and the bundled controllers; one term for the
  agent's whole life, begun when it opens.
- `ClusterTarget` (`gitkrm.agent.cluster`): a Kubernetes API (`KubeStore`), its watch cache,
  the Lease elector, the task that renews the Lease and the probes (`--listen`); a term per
  leadership.

A target asks the agent (`Terms`) to begin and end terms; the term (`gitkrm.agent.term`) owns
the runners, workers and reports in between. Each target is imported only when used: the
embedded one loads no leader election, the cluster one no controllers or API server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gitkrm.cache import WatchCache
    from gitkrm.store import Store

    from .shutdown import Shutdown
    from .status import Outcome
    from .term import Term


class Terms(Protocol):
    """The agent, as a target sees it: the one owner of the term."""

    @property
    def term(self) -> Term | None:
        """The term under way (None between two)."""
        ...

    async def begin(self) -> Term:
        """Begin a term: GitSource objects, runners, reports."""
        ...

    async def end(self, *, flush: bool) -> None:
        """End the term under way, if any (see `Term.end`)."""
        ...


class Target(Protocol):
    """`open` first, `close` last (also after errors, or when `open` failed)."""

    @property
    def store(self) -> Store:
        """The open store (RuntimeError before `open`)."""
        ...

    @property
    def cache(self) -> WatchCache:
        """The store's one watch cache: controllers, drift, health follower and --wait."""
        ...

    async def open(self) -> None:
        """Connect (a setup error when the target can't be used). Embedded: also begin
        the term."""
        ...

    async def serves_gitsources(self) -> bool:
        """Whether the GitSource kind is served now (asked as each term begins)."""
        ...

    def observe_sync(self, source: str, result: str, seconds: float) -> None:
        """A sync's duration, into the metrics served on `--listen` (if any)."""
        ...

    def readiness(self) -> tuple[bool, str]:
        """(ready, why): the `/readyz` answer."""
        ...

    async def sync_once(self, shutdown: Shutdown | None) -> list[Outcome]:
        """`run --once`: sync every source that is not suspended, once."""
        ...

    async def run(self, shutdown: Shutdown) -> None:
        """The long-lived agent: serve, then sync until `shutdown`, then stop gracefully."""
        ...

    async def start_controllers(self) -> None:
        """Start the bundled controllers when the options ask for them (embedded only)."""
        ...

    async def stop_controllers(self) -> None:
        """Stop them gracefully: work in flight finishes."""
        ...

    async def close(self) -> None:
        """End the term (reports flushed), release what the target holds, close the store."""
        ...
