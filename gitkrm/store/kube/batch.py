"""Many writes against a cluster: concurrent, bounded, best-effort.

A Kubernetes API has no transactions, so a batch cannot be all or nothing as on the
embedded store. Ops on one object keep their order (a create, then a patch, then a delete
of the same object run one after the other); ops on different objects run concurrently,
at most `concurrency` at a time. Every op is tried; when some failed, the error of the first
failed op (in batch order) is raised after the others completed, and the ops after it on
the same object are not tried. Callers that need to know which writes landed (the sync
engine does) write again object by object, reading what is there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from gitkrm.errors import BadRequest, GitkrmError
from gitkrm.krm import Obj
from gitkrm.store.protocol import BatchOp, BatchOpKind

RunOne = Callable[[BatchOp], Awaitable[Obj]]


def _object_key(op: BatchOp) -> tuple[str, str, str, str]:
    if op.ref is not None:
        r = op.ref
        return (r.group, r.kind, r.namespace or "", r.name)
    if op.obj is None:
        raise BadRequest(f"batch {op.op} needs an object or a ref")
    md = op.obj.get("metadata") or {}
    api_version = str(op.obj.get("apiVersion") or "")
    return (
        api_version.rpartition("/")[0],
        str(op.obj.get("kind") or ""),
        str(md.get("namespace") or ""),
        str(md.get("name") or md.get("generateName") or id(op)),
    )


def check(op: BatchOp) -> None:
    """BadRequest for an op missing what its kind needs."""
    if op.op in (BatchOpKind.PATCH, BatchOpKind.DELETE):
        if op.ref is None:
            raise BadRequest(f"batch {op.op} needs a ref")
    elif op.obj is None:
        raise BadRequest(f"batch {op.op} needs an object")


async def run_batch(ops: Sequence[BatchOp], run: RunOne, *, concurrency: int) -> list[Obj]:
    """Run `ops` as the module docstring says; the results in op order."""
    for op in ops:
        check(op)
    chains: dict[tuple[str, str, str, str], list[int]] = {}
    for i, op in enumerate(ops):
        chains.setdefault(_object_key(op), []).append(i)
    results: list[Obj | None] = [None] * len(ops)
    errors: dict[int, GitkrmError] = {}
    queue = list(chains.values())
    queue.reverse()  # pop() from the end: the first chain first

    async def worker() -> None:
        while queue:
            chain = queue.pop()
            for i in chain:
                try:
                    results[i] = await run(ops[i])
                except GitkrmError as e:
                    errors[i] = e
                    break

    workers = min(max(1, concurrency), len(queue))
    if workers:
        await asyncio.gather(*(worker() for _ in range(workers)))
    if errors:
        raise errors[min(errors)]
    out: list[Obj] = []
    for r in results:
        assert r is not None
        out.append(r)
    return out
