"""A desired object: what one manifest asks for, ready to plan, with where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.sync import keys, peers
from gitkrm.sync.objkey import key_of
from gitkrm.sync.order_keys import SortKey, sort_key

if TYPE_CHECKING:
    from gitkrm.sync.parse import ParsedObject


class Desired(NamedTuple):
    """One desired object. `applied` is its last-applied configuration, the compact JSON
    that goes into the annotation; `obj` decodes it (a new dict each time: the engine keeps
    JSON, not thousands of dict trees the garbage collector would walk after every sync).
    A named tuple: immutable, and five times cheaper to build than a frozen dataclass (a
    cold render builds 10,000)."""

    ref: ObjectRef
    api_version: str
    applied: str
    path: str
    line: int
    key: str = ""  # the inventory key (see objkey): the engine's key for the object
    order_key: SortKey = (1, 0, 0, "", "", "")
    wave: int = 0
    depends_on: tuple[ObjectRef, ...] = ()
    prune: bool = True
    reconcile: bool = True
    force: bool = False
    hook: str = ""  # hook phases, comma-joined (see `hooks`); "" for a synced object
    hook_delete: str = ""  # the hook's delete policies, comma-joined
    ssa: str = ""  # Flux's ssa mode (IfNotPresent, Ignore, Override, Merge), "" unset
    server_side: bool = False  # Argo CD's ServerSideApply=true: applied server-side
    extraneous: bool = False  # Argo CD's IgnoreExtraneous
    warnings: tuple[str, ...] = ()  # about this object's annotations (Replace=true, ...)
    unhonoured: tuple[str, ...] = ()  # peers' annotations gitkrm does not honour

    @property
    def obj(self) -> Obj:
        """The prepared object (a fresh dict: the caller may change it)."""
        out: Obj = orjson.loads(self.applied)
        return out

    @property
    def gvk(self) -> GVK:
        version = self.api_version.rpartition("/")[2]
        return GVK(group=self.ref.group, version=version, kind=self.ref.kind)

    @property
    def location(self) -> str:
        """`file:line`, or the kustomization file of a build (its output has no lines)."""
        return f"{self.path}:{self.line}" if self.line else f"{self.path} (a kustomize build)"


_NO_PEERS = peers.PeerSettings()
_NO_HOOK: tuple[str, str, list[str]] = ("", "", [])


def parse_dependency(text: str) -> ObjectRef:
    """One cli-utils depends-on reference: `group/namespaces/ns/Kind/name` or
    `group/Kind/name` (cluster-scoped); group may be empty (the core group)."""
    fields = text.strip().split("/")
    if len(fields) == 3:
        group, kind, name = fields
        namespace = None
    elif len(fields) == 5 and fields[1] == "namespaces":
        group, _, namespace, kind, name = fields
    else:
        raise BadRequest(
            f"invalid depends-on reference {text.strip()!r}: expected "
            "group/namespaces/<namespace>/<Kind>/<name> or group/<Kind>/<name>"
        )
    if not kind or not name:
        raise BadRequest(
            f"invalid depends-on reference {text.strip()!r}: kind and name are required"
        )
    return ObjectRef(group=group, kind=kind, name=name, namespace=namespace or None)


def format_dependency(ref: ObjectRef) -> str:
    if ref.namespace:
        return f"{ref.group}/namespaces/{ref.namespace}/{ref.kind}/{ref.name}"
    return f"{ref.group}/{ref.kind}/{ref.name}"


def wave_of(ann: Mapping[str, Any]) -> tuple[int, str | None]:
    """The wave of `gitkrm.io/wave` or its alias Argo CD's `sync-wave` (gitkrm's first),
    and a problem with its value."""
    key = keys.WAVE if keys.WAVE in ann else peers.ARGO_WAVE
    raw_wave = ann.get(key)
    if raw_wave is None:
        return 0, None
    try:
        return int(str(raw_wave).strip()), None
    except ValueError:
        return 0, f"annotation {key} must be an integer, got {raw_wave!r}"


def _settings(ann: Mapping[str, Any]) -> tuple[int, tuple[ObjectRef, ...], list[str]]:
    problems: list[str] = []
    wave, problem = wave_of(ann)
    if problem is not None:
        problems.append(problem)
    deps: list[ObjectRef] = []
    raw_deps = ann.get(keys.DEPENDS_ON)
    if isinstance(raw_deps, str) and raw_deps.strip():
        for part in raw_deps.split(","):
            try:
                deps.append(parse_dependency(part))
            except BadRequest as e:
                problems.append(f"annotation {keys.DEPENDS_ON}: {e.message}")
    return wave, tuple(deps), problems


def _flag(ann: Mapping[str, Any], key: str, value: str) -> bool:
    v = ann.get(key)
    return isinstance(v, str) and v.strip().lower() == value


def desired_of(po: ParsedObject, *, path: str) -> tuple[Desired | None, list[str]]:
    """`make_desired` of a parsed object of the file `path`."""
    return make_desired(
        doc=po.doc,
        api_version=po.api_version,
        kind=po.kind,
        name=po.name,
        namespace=po.namespace,
        path=path,
        line=po.line,
    )


def make_desired(
    *, doc: bytes, api_version: str, kind: str, name: str, namespace: str, path: str, line: int
) -> tuple[Desired | None, list[str]]:
    """A Desired from a prepared object's JSON, or the problems of its gitkrm annotations."""
    group = api_version.rpartition("/")[0]
    # Most objects carry no annotations: then there is nothing to decode.
    obj = orjson.loads(doc) if b'"annotations"' in doc else None
    ann = keys.annotations_of(obj) if obj is not None else {}
    wave, deps, problems = _settings(ann) if ann else (0, (), [])
    peer = peers.read(ann) if ann and peers.has_peer_keys(ann) else _NO_PEERS
    hook, hook_delete, hook_problems = peers.read_hook(ann) if peer is not _NO_PEERS else _NO_HOOK
    problems.extend(peer.problems)
    problems.extend(hook_problems)
    if problems:
        return None, problems
    if not name and hook and obj is not None:  # a hook named by generateName
        name = str(keys.metadata(obj).get("generateName") or "")
    ref = ObjectRef(group=group, kind=kind, name=name, namespace=namespace or None)
    return (
        Desired(
            ref,
            api_version,
            doc.decode(),
            path,
            line,
            key_of(group=group, kind=kind, name=name, namespace=namespace),
            sort_key(ref, wave),
            wave,
            deps,
            peer.prune and not (ann and _flag(ann, keys.PRUNE, keys.DISABLED)),
            peer.reconcile and not (ann and _flag(ann, keys.RECONCILE, keys.DISABLED)),
            peer.force or (bool(ann) and _flag(ann, keys.FORCE, keys.ENABLED)),
            hook,
            hook_delete,
            peer.ssa,
            peer.server_side,
            peer.extraneous,
            peer.warnings,
            peer.unhonoured,
        ),
        [],
    )
