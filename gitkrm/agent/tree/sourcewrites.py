"""Writing the statuses interpreters give the objects declaring objects read their source
from (`Interpreter.source_statuses`: a Flux GitRepository, HelmRepository, OCIRepository),
only where they differ from what the object has."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from gitkrm.errors import Conflict, GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store

from .model import SourceStatus
from .naming import describe

log = logging.getLogger("gitkrm.agent")


async def write(
    store: Store,
    items: Iterable[SourceStatus],
    *,
    write_status: Callable[[Obj, ObjectRef], Awaitable[Obj]],
    wrote: Callable[[Obj], None],
) -> None:
    """Each object's new status (the last item for an object wins); an object that is
    absent or changed meanwhile is left to the next time its children's state changes."""
    by_ref = {item.ref: item for item in items}
    for ref, item in by_ref.items():
        try:
            live = await store.get(ref)
        except NotFound:
            continue
        except GitkrmError as e:
            log.warning("%s: status not written: %s", describe(ref), e.message)
            continue
        status = item.status(live)
        if status == live.get("status"):
            continue
        try:
            written = await write_status({**live, "status": status}, ref)
        except Conflict:
            continue
        except GitkrmError as e:
            log.warning("%s: status not written: %s", describe(ref), e.message)
            continue
        wrote(written)
