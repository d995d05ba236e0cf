"""The record of a source's last settled sync: how `run --once` and `diff` know, without
rendering or planning, that there is nothing to do.

A store's resourceVersion counts every write to it (the embedded store's global revision;
on a cluster, etcd's). When the agent ends, it records per source (in the state dir,
`cache/synced/<source>.json`): the revision of the last sync, a fingerprint of the
source's settings, the store's identity (the uid of its `kube-system` namespace) and its
resourceVersion now. It records it only when that sync settled every object and every
write to the store since the sync started was the sync's own or the agent's GitSource
status writes: the store then holds exactly what the revision says.

A later `run --once` (without `--wait`) or `diff` of the same source, with the same
settings and the same gitkrm, that finds the store at that resourceVersion and the remote
at that revision (one `ls-remote`) has nothing to do: it says so and stops. Any write in
between (a `kubectl edit`, a controller, another source's sync, a requested sync) or a new
commit means a full sync. A source with signature verification is never trusted this way
(keys and signatures expire without a commit).

On a cluster (and on the embedded store after other sources wrote) other writers move the
resourceVersion all the time. There the record also holds a digest of the source's owned
objects as the sync left them (`gitkrm.sync.owned`: keys, uids, generations, labels and
annotations, so a rollout's status updates don't count), taken when the agent ends after
checking each object still stands as the sync saw it. A later run whose resourceVersion
differs lists the owned objects (one list per kind of the revision) and has nothing to do
when their digest is the same. A source whose render reads objects of the store
(`substituteFrom`, a decryption Secret) is not trusted this way: their changes are not in
the digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

import orjson

from gitkrm import __version__
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.source import Source
from gitkrm.store import Store
from gitkrm.sync import live, owned
from gitkrm.sync.drift import Seen
from gitkrm.sync.parsecache import write_private
from gitkrm.sync.results import Counts, Timings

from .config import ApplyMode, SourceConfig
from .state import last_sync_file
from .status import Outcome, Reason

if TYPE_CHECKING:
    from .runner import SourceRunner

log = logging.getLogger("gitkrm.agent")

FORMAT: Final = 2
KUBE_SYSTEM: Final = ObjectRef(group="", kind="Namespace", name="kube-system")
_VOLATILE: Final = ("interval", "suspend", "timeout")  # spec fields that change no result


@dataclass(frozen=True, slots=True)
class LastSync:
    source: str
    fingerprint: str
    revision: str
    store_id: str
    resource_version: str
    objects: int  # the objects the sync left in place (all unchanged since)
    settings: str = ""  # the fingerprint without the tracked ref (`settled`; "" unknown)
    owned: str = ""
    """The digest of the owned objects (`gitkrm.sync.owned`), "" when not taken."""
    kinds: tuple[str, ...] = ()
    """The revision's kinds the digest lists (`group/version/Kind`)."""

    def outcome(self, *, git_ms: float) -> Outcome:
        """The outcome of a pass that found nothing to do: every object unchanged."""
        return Outcome(
            revision=self.revision,
            succeeded=True,
            reason=Reason.SUCCEEDED,
            counts=Counts(unchanged=self.objects),
            timings_ms=Timings.of({"git": git_ms}),
            nothing_changed=True,
        )


def of_sync(
    source: str,
    outcome: Outcome,
    *,
    fingerprint: str | None,
    synced_revision: str | None,
    settled_at: str | None,
    settings: str | None = None,
) -> LastSync | None:
    """The record of a sync that settled at store revision `settled_at` (None: others
    wrote meanwhile, the owned objects' digest may stand in, see `Term`); its store
    identity is filled in when it is saved; None when there is nothing to record."""
    if (
        not outcome.succeeded
        or fingerprint is None
        or not outcome.revision
        or outcome.revision != synced_revision
    ):
        return None
    c = outcome.counts or Counts()
    objects = c.created + c.configured + c.unchanged
    return LastSync(
        source=source,
        fingerprint=fingerprint,
        revision=outcome.revision,
        store_id="",
        resource_version=settled_at or "",
        objects=objects,
        settings=settings or "",
    )


def fingerprint(
    config: SourceConfig, *, agent_name: str, apply_mode: ApplyMode, any_ref: bool = False
) -> str | None:
    """What a sync's result depends on besides the revision and the store (None: the
    source is never trusted without a sync). `any_ref`: the settings alone, whatever ref
    is tracked (`settled`)."""
    if config.verify is not None:
        return None
    spec = config.to_object(agent_name=agent_name)["spec"]
    for key in (*_VOLATILE, "ref") if any_ref else _VOLATILE:
        spec.pop(key, None)
    data = {
        "format": FORMAT,
        "gitkrm": __version__,
        "source": config.name,
        "agent": agent_name,
        "applyMode": apply_mode,
        "spec": spec,
    }
    if config.overlay is not None:  # not a GitSource field: a Flux or Argo CD child's
        data["overlay"] = repr(config.overlay)
    if config.app_source is not None:  # not GitSource fields: an Application's child
        data["appSource"] = repr(config.app_source)
        data["sync"] = [config.automated, config.self_heal]
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()


def load(path: Path) -> LastSync | None:
    """The record at `path` (None when there is none or it can't be read)."""
    try:
        data = orjson.loads(path.read_bytes())
        if data.pop("format", None) != FORMAT:
            return None
        record = LastSync(**data)
    except (OSError, ValueError, TypeError):
        return None
    fields = (
        record.source,
        record.fingerprint,
        record.revision,
        record.store_id,
        record.resource_version,
    )
    if not all(isinstance(f, str) for f in fields) or not isinstance(record.objects, int):
        return None
    if not isinstance(record.owned, str) or not isinstance(record.kinds, list | tuple):
        return None
    return replace(record, kinds=tuple(str(k) for k in record.kinds))


async def settled(path: Path, *, store: Store, settings: str | None) -> bool:
    """Whether the store holds exactly what the source's last settled sync left, under
    these settings (the fingerprint `any_ref`), whatever revision it synced: then an
    object whose last-applied configuration is what a revision would apply is unchanged by
    it (`gitkrm plan` of a branch skips their three-way diffs)."""
    record = load(path)
    if record is None or not settings or record.settings != settings:
        return False
    store_id, rv = await store_position(store)
    return bool(rv) and rv == record.resource_version and store_id == record.store_id


def save(path: Path, record: LastSync) -> None:
    """Write the record (mode 0600; a failure only costs the next run a full sync)."""
    with contextlib.suppress(OSError):
        write_private(path, orjson.dumps({"format": FORMAT, **asdict(record)}))


def discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


async def store_position(store: Store) -> tuple[str, str]:
    """The store's identity (its `kube-system` namespace's uid) and resourceVersion."""
    rv = await live.current_revision(store)
    try:
        ns = await store.get(KUBE_SYSTEM)
    except NotFound:
        return "", rv
    return str((ns.get("metadata") or {}).get("uid") or ""), rv


def reads_store(config: SourceConfig) -> bool:
    """Whether the source's render reads objects of the store (their changes are not in
    the owned objects' digest)."""
    pb = config.postbuild
    return pb is not None and (
        bool(pb.substitute_from) or (pb.decryption is not None and bool(pb.decryption.secret_name))
    )


def kind_names(kinds: Iterable[GVK]) -> tuple[str, ...]:
    return tuple(sorted(f"{g.group}/{g.version}/{g.kind}" for g in kinds))


def _kinds(names: Iterable[str]) -> list[GVK]:
    out = []
    for name in names:
        group, version, kind = name.split("/")
        out.append(GVK(group=group, version=version, kind=kind))
    return out


async def with_owned(
    store: Store,
    record: LastSync,
    *,
    config: SourceConfig,
    settled: tuple[Mapping[str, Seen], Sequence[GVK]] | None,
) -> LastSync | None:
    """The record with its owned objects' digest, when the sync settled (`settled`: the
    objects as it saw them and its kinds) and each object still stands as it saw it; None
    when that can't be told."""
    if settled is None or reads_store(config):
        return None
    seen, kinds = settled
    objects = await owned.listed(store, source=record.source, kinds=kinds)
    if not owned.as_seen(objects, seen):
        return None
    return replace(record, owned=owned.digest(objects), kinds=kind_names(kinds))


async def owned_unchanged(store: Store, record: LastSync) -> bool:
    """Whether the owned objects stand as the record's digest says."""
    if not record.owned:
        return False
    objects = await owned.listed(store, source=record.source, kinds=_kinds(record.kinds))
    return owned.digest(objects) == record.owned


async def unchanged(
    path: Path, *, store: Store, source: Source, fingerprint: str | None
) -> LastSync | None:
    """The record of the source's last sync when nothing changed since: same settings,
    same store at the same resourceVersion (or, when it moved, the owned objects with the
    same digest), the remote at the same revision; else None. Errors of the store or the
    source are raised."""
    record = load(path)
    if record is None or fingerprint is None or record.fingerprint != fingerprint:
        return None
    store_id, rv = await store_position(store)
    if not rv or store_id != record.store_id:
        return None
    if rv != record.resource_version and not await owned_unchanged(store, record):
        return None
    if await source.poll() != record.revision:
        return None
    return record


async def record_settled(
    store: Store,
    runners: Sequence[SourceRunner],
    *,
    ours: set[int],
    state_dir: Path,
    by_digest: bool,
) -> None:
    """Record each source's last settled sync at the store's revision now, when every
    write since that sync was the agent's own (`ours`: the tree's; the runners' GitSource
    status writes are added), or else with the digest of its owned objects when they stand
    as it left them. `by_digest` (a cluster, where the next run's Lease moves the
    resourceVersion): always the digest."""
    settled = [r for r in runners if r.last_sync is not None]
    if not settled:
        return
    try:
        store_id, now = await store_position(store)
    except GitkrmError as e:
        log.debug("the last syncs are not recorded: %s", e.message)
        return
    ours = set(ours)
    for runner in runners:
        ours |= runner.written
    for runner in settled:
        record = runner.last_sync
        assert record is not None
        if (record.store_id, record.resource_version) == (store_id, now):
            continue  # recorded as it is (a pass with nothing to do)
        done: LastSync | None = replace(record, store_id=store_id, resource_version=now)
        if not live.contiguous(record.resource_version, now, ours):
            done = None  # others wrote meanwhile: the owned objects' digest may tell
        if done is None or by_digest:
            try:
                found = await with_owned(
                    store, record, config=runner.config, settled=runner.settled_objects()
                )
            except GitkrmError as e:
                log.debug("the last sync of %s is not recorded: %s", runner.name, e.message)
                continue
            if found is not None:
                done = replace(found, store_id=store_id, resource_version=now)
        if done is None:
            continue
        if done != record:
            save(last_sync_file(state_dir, runner.name), done)
