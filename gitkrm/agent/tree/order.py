"""The order children sync in: each after the children its `dependsOn` names are Ready
(and healthy, for those that `wait`), one at a time, the status of each written as it goes.

`run --once` syncs the whole tree below its sources in this order (`sync_children`); a
long-lived agent syncs each child in its own worker (`sync_child`), and a child that
synced asks those that wait for it (`after_sync`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from gitkrm.health import Health, aggregate
from gitkrm.krm import ObjectRef

from ..scheduler import Trigger
from .child import Child, child_key
from .naming import describe

if TYPE_CHECKING:
    from ..status import Outcome
    from .children import Tree

log = logging.getLogger("gitkrm.agent")


async def sync_children(
    tree: Tree, *, stopped: Callable[[], bool], outcomes: list[Outcome]
) -> None:
    """Sync every child of the tree once, in `dependsOn` order, into `outcomes`, then
    write their statuses; a child left waiting (a cycle, a dependency never declared)
    is shown Pending."""
    done: set[str] = set()
    while not stopped():
        todo = [c for c in tree.runnable() if c.name not in done]
        # A child's turn comes when every child it depends on had its turn (a cycle of
        # dependsOn, or one on an object never declared, leaves children Pending).
        turns = {c.name for c in todo}
        ready_now = [
            c
            for c in todo
            if c.spec is None
            or not any(
                (d := tree.children.get(r.key)) is not None and d.name in turns
                for r in c.spec.depends_on
            )
        ]
        if not ready_now:
            for child in todo:
                await ready(tree, child.name)  # shown Pending, with what it waits for
            break
        # One child a turn, then look again: a child that depends on another may wait
        # on that one's health, which can rest on children its pass just declared (a
        # Kustomization that waits for its HelmReleases): those go first.
        child = min(ready_now, key=lambda c: bool(c.spec is not None and c.spec.depends_on))
        done.add(child.name)
        await sync_child(tree, child.name, frozenset({Trigger.START}), outcomes)
    await tree.statuses.flush()


async def sync_child(
    tree: Tree, name: str, triggers: frozenset[Trigger], outcomes: list[Outcome] | None = None
) -> None:
    """One pass of a child: its dependencies first, then its sync, its status and its
    own children."""
    runner = tree.host.runner(name)
    if runner is None:
        return
    if not await ready(tree, name):
        await tree.statuses.flush()
        return
    if runner.config.suspend:
        log.info("source %s is suspended: not synced", name)
    outcome = await runner.reconcile(triggers)
    if outcome is not None and outcomes is not None:
        outcomes.append(outcome)
    child = tree.by_name(name)
    if (
        child is not None
        and child.spec is not None
        and child.spec.wait
        and outcome is not None
        and outcome.succeeded
        and not outcome.nothing_changed
    ):
        # Flux's `wait` (a HelmRelease's default): Ready once its objects are healthy,
        # so the status written next says so (and a parent's --wait sees it).
        await tree.host.healthy(runner)
    after_sync(tree, name)
    await tree.after_pass(runner)


async def ready(tree: Tree, name: str) -> bool:
    """Whether the child's dependencies are Ready (health-gated when they `wait`); a
    child that waits is shown Pending with what it waits for."""
    child = tree.by_name(name)
    if child is None or child.spec is None:
        return True
    waiting: list[ObjectRef] = []
    for dep in child.spec.depends_on:
        other = tree.children.get(child_key(dep))
        runner = None
        if other is not None and other.error is None:
            runner = other.runner or (
                tree.host.runner(other.parent) if other.mirrors_parent else None
            )
        outcome = None if runner is None else runner.last_outcome
        if (
            runner is None
            or outcome is None
            or not outcome.succeeded
            or (
                other is not None
                and other.spec is not None
                and other.spec.wait
                and (_timed_out(other, outcome) or await tree.host.healthy(runner) is not None)
            )
        ):
            waiting.append(dep)
    child.waiting_for = tuple(waiting)
    child.pending = bool(waiting)
    tree.statuses.due(child_key(child.ref))
    if waiting:
        log.info(
            "child source %s waits for %s",
            child.name,
            ", ".join(describe(r) for r in waiting),
        )
    return not waiting


def _timed_out(other: Child, outcome: Outcome) -> bool:
    """Its last wait on health, at this revision, ran out and nothing says Current since:
    not Ready (Flux's HealthCheckFailed), and not waited out again for each dependent."""
    failed = other.health_failed
    if failed is None or failed[0] != outcome.revision or other.runner is None:
        return False
    verdicts = [h.status for h in other.runner.health.values()]
    return not verdicts or aggregate(verdicts) is not Health.CURRENT


def dependents(tree: Tree, name: str) -> list[str]:
    """The pending children that wait for `name`'s declaring object."""
    child = tree.by_name(name)
    if child is None:
        return []
    key = child_key(child.ref)
    return [
        c.name
        for c in tree.children.values()
        if c.pending and c.spec is not None and any(child_key(d) == key for d in c.spec.depends_on)
    ]


def health_checked(tree: Tree, name: str, failure: str | None) -> None:
    """A wait on the health of the child's objects ended: healthy (None) or not, and why
    (what it still waited for when its timeout passed); its status is due."""
    child = tree.by_name(name)
    if child is None:
        return
    outcome = None if child.runner is None else child.runner.last_outcome
    revision = None if outcome is None else outcome.revision
    child.health_failed = None if failure is None else (revision, failure)
    tree.statuses.due(child_key(child.ref))


def after_sync(tree: Tree, name: str) -> None:
    """A child synced: its status is due; the children waiting for it are asked."""
    child = tree.by_name(name)
    if child is None:
        return
    tree.statuses.due(child_key(child.ref))
    for dependent in dependents(tree, name):
        tree.host.request_sync(dependent)
