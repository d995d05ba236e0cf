"""What a sync engine remembers between passes over its source, in one place.

Invariants (kept by `SyncEngine`, relied on by its quiet paths):
- `rendered` is the render of `rendered_key` (revision and the CRDs the store served), and
  `registry` the schema registry that render used; a new key renders again.
- `synced` is the render last applied (what a drift check restores). `settled` is True
  only when every object of `synced` was applied and recorded (none failed, refused or
  skipped, every prune done) and the inventory was written: then `inventory` is the
  inventory as written, else None (read again next time).
- `unsettled` holds the keys of `synced`'s objects that did not settle: they are read
  and planned again on the next pass, whatever the drift tracker says.
- `unchanged` is the "all unchanged" result of `synced`, built on first use and dropped
  when `synced` changes.
- `reuse_steps` and `reuse_results` hold the plan steps and "unchanged" results of
  objects in sync, valid while their `Desired` is the same object (identity): a quiet
  object allocates nothing.
- `hooks` are the hooks of `rendered` (not among its objects); `hooked` the revision the
  hooks last ran for (they run once per revision, or when asked), `hook_failure` the
  result of its PreSync phase when that failed (the revision is not applied until a new
  revision or a request runs the hooks again).
- `gates` and `warnings`: a render's health-gate groups (None: not gated) and annotation
  warnings, computed once per render.
- `started_at` is the store revision the pass under way first read ("" when it read
  nothing before its plan); `settled_at` the store revision after the last pass that
  settled with only its own writes since `started_at` (None otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitkrm.sync.hooks import NO_HOOKS, Hooks

if TYPE_CHECKING:  # types only: the memory is pure data
    from gitkrm.schema import Registry
    from gitkrm.sync.desired import Desired
    from gitkrm.sync.gates import GroupKey
    from gitkrm.sync.inventory import Inventory
    from gitkrm.sync.render import RenderResult
    from gitkrm.sync.results import ObjectResult, SyncResult
    from gitkrm.sync.steps import Step

RenderKey = tuple[str, tuple[tuple[str, str], ...], str]  # revision, CRDs, post-build digest


@dataclass(slots=True)
class EngineMemo:
    """See the module docstring."""

    rendered: RenderResult | None = None
    rendered_key: RenderKey | None = None
    registry: Registry | None = None
    synced: RenderResult | None = None
    unsettled: set[str] = field(default_factory=set)
    settled: bool = False
    inventory: Inventory | None = None
    unchanged: tuple[ObjectResult, ...] | None = None
    reuse_steps: dict[str, Step] = field(default_factory=dict)
    reuse_results: dict[str, tuple[Desired, ObjectResult]] = field(default_factory=dict)
    started_at: str = ""
    settled_at: str | None = None
    hooks: Hooks = NO_HOOKS
    hooked: str | None = None
    hook_failure: SyncResult | None = None
    gates: tuple[RenderResult | None, dict[str, GroupKey] | None] = (None, None)
    warnings: tuple[RenderResult | None, tuple[str, ...]] = (None, ())
