"""The two apply modes, each planning an object in one place.

`ClientSide`: the three-way patch of kubectl (last-applied annotation = original, Git =
modified, live = current; strategic merge for built-in kinds, JSON merge for custom ones).
`ServerSide`: the apply of the whole object by the field manager `gitkrm`, decided by
running it locally (see `serverside`). `planner_for` picks one per plan; `plan_object`
(in `plan`) decides what both modes share and calls the planner once per object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from gitkrm.errors import GitkrmError
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema import ssa_type_for
from gitkrm.schema.defaults import defaulter_for
from gitkrm.store import PatchType
from gitkrm.sync.desired import Desired
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.patching import create_body, three_way
from gitkrm.sync.serverside import DefaultsLookup, TypeLookup, apply_config, predict
from gitkrm.sync.steps import MetaLookup, Op, Step


def builtin_type(gvk: GVK) -> SchemaType:
    """The server-side apply type of a kind without a registry of custom kinds."""
    return ssa_type_for(gvk)


def builtin_defaults(gvk: GVK) -> Callable[[Obj], None] | None:
    """The defaulting of a built-in kind on update (without a registry of custom kinds)."""
    builtin = defaulter_for(gvk.group, gvk.kind)
    if builtin is None:
        return None
    return lambda obj: builtin(obj, False)


def ignored_pointers(ref: ObjectRef, options: SyncOptions) -> tuple[str, ...]:
    out: list[str] = []
    for ig in options.ignore_differences:
        if ig.matches(group=ref.group, kind=ref.kind, name=ref.name, namespace=ref.namespace):
            out.extend(ig.json_pointers)
    return tuple(out)


class ObjectPlanner(Protocol):
    """How one apply mode creates an object and plans a change to it."""

    def create_body(self, d: Desired) -> Obj:
        """What is sent to create `d` (client-side: the object with the last-applied
        annotation; server-side: the applied configuration)."""
        ...

    def change(self, d: Desired, live: Obj, *, adopt: bool) -> Step:
        """The step that brings an existing object this source may change to `d`."""
        ...


class Patch(NamedTuple):
    """How a mode changes an object: the PATCH step's patch (see `Step`)."""

    patch: Any
    patch_type: PatchType
    after: Obj | None = None
    migrate: list[dict[str, Any]] | None = None
    force: bool = False


def _change(
    d: Desired, live: Obj, adopt: bool, plan: Callable[[Desired, Obj], Patch | None]
) -> Step:
    """The step a mode's `plan` gives: FAIL with its error, UNCHANGED, or the PATCH."""
    try:
        p = plan(d, live)
    except GitkrmError as e:
        return Step(Op.FAIL, d.ref, d.key, desired=d, live=live, message=e.message)
    if p is None:
        return Step(Op.UNCHANGED, d.ref, d.key, desired=d, live=live)
    return Step(
        Op.PATCH,
        d.ref,
        d.key,
        desired=d,
        live=live,
        patch=p.patch,
        patch_type=p.patch_type,
        adopt=adopt,
        message="adopted" if adopt else "",
        after=p.after,
        migrate=p.migrate,
        force=p.force,
    )


@dataclass(frozen=True, slots=True)
class ClientSide:
    options: SyncOptions
    revision: str
    meta: MetaLookup

    def create_body(self, d: Desired) -> Obj:
        return create_body(d, self.revision)

    def change(self, d: Desired, live: Obj, *, adopt: bool) -> Step:
        return _change(d, live, adopt, self._patch)

    def _patch(self, d: Desired, live: Obj) -> Patch | None:
        patch, patch_type = three_way(
            d,
            live,
            meta=self.meta(d.gvk),
            ignore=ignored_pointers(d.ref, self.options),
            revision=self.revision,
        )
        return None if patch is None else Patch(patch, patch_type)


@dataclass(frozen=True, slots=True)
class ServerSide:
    options: SyncOptions
    revision: str
    meta: MetaLookup
    typ: TypeLookup
    defaults: DefaultsLookup = builtin_defaults

    def create_body(self, d: Desired) -> Obj:
        return apply_config(d, revision=self.revision)

    def change(self, d: Desired, live: Obj, *, adopt: bool) -> Step:
        return _change(d, live, adopt, self._patch)

    def _patch(self, d: Desired, live: Obj) -> Patch | None:
        applied = predict(
            d,
            live,
            typ=self.typ(d.gvk),
            revision=self.revision,
            ignore=ignored_pointers(d.ref, self.options),
            meta=self.meta(d.gvk),
            defaults=self.defaults,
        )
        if applied is None:
            return None
        if applied.config is None:  # only the client-side to server-side move
            return Patch(applied.migrate, "json", after=applied.after)
        return Patch(
            applied.config,
            "apply",
            after=applied.after,
            migrate=applied.migrate,
            force=applied.force,
        )


def planner_for(
    *,
    options: SyncOptions,
    revision: str,
    meta: MetaLookup,
    typ: TypeLookup = builtin_type,
    defaults: DefaultsLookup = builtin_defaults,
) -> ObjectPlanner:
    """The planner of the source's apply mode."""
    if options.server_side:
        return ServerSide(options, revision, meta, typ, defaults)
    return ClientSide(options, revision, meta)
