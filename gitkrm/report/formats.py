"""The two documents gitkrm writes into Git (DESIGN.md 4.5), built from plain values.

- A note on each synced commit, under `refs/notes/gitkrm/<agent>`: kind `SyncNote`, keyed by
  source, each with the revision, times, result, aggregate health, counts, errors and the
  objects that are not Current.
- `status/<agent>.yaml` on the branch `gitkrm/status`: kind `AgentStatus`, keyed by source,
  with every object's health for the latest revision of each source.

Both are described by the JSON Schemas in docs/schemas/ (and gitkrm/report/schemas/).
Building is pure; the strings that come from outside (errors, health messages) are
redacted with the source's redactor before they are kept.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import yaml

from gitkrm.errors import Invalid
from gitkrm.health import Health, HealthResult, aggregate
from gitkrm.krm import ObjectRef
from gitkrm.sync.results import Action, Counts, ObjectResult, SyncResult, SyncStatus

from . import yamlemit
from .scrub import scrub_secret_values

API_VERSION = "gitkrm.io/v1alpha1"
NOTE_KIND = "SyncNote"
STATUS_KIND = "AgentStatus"
NOTES_REF_PREFIX = "refs/notes/gitkrm/"
STATUS_BRANCH = "gitkrm/status"
MAX_ERRORS = 100
MAX_TEXT = 1024

Redact = Callable[[str], str]

_NOT_OBSERVED = HealthResult(Health.UNKNOWN, "health not observed", "NotObserved")
REASON_FAILED = "SyncFailed"
REASON_REFUSED = "SyncRefused"


def notes_ref(agent: str) -> str:
    return NOTES_REF_PREFIX + agent


def status_path(agent: str) -> str:
    return f"status/{agent}.yaml"


def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def _clip(text: str) -> str:
    text = text.replace("\r", "")
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _no_redact(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a source reads from, as it may be shown: the URL without user-info."""

    name: str
    url: str
    ref: str = ""
    path: str = ""
    parent: str = ""
    """A child source of a source tree: the source that declares it."""


Key = tuple[str, str, str, str]
"""An object as the reports key it: (group, kind, namespace or "", name); any version."""


def key_of(ref: ObjectRef) -> Key:
    return (ref.group, ref.kind, ref.namespace or "", ref.name)


def ref_of(key: Key) -> ObjectRef:
    group, kind, namespace, name = key
    return ObjectRef(group=group, kind=kind, name=name, namespace=namespace or None)


_GONE = (Action.PRUNED, Action.SKIPPED)
_NOT_APPLIED = {Action.FAILED: REASON_FAILED, Action.REFUSED: REASON_REFUSED}


def sync_verdict(o: ObjectResult) -> HealthResult | None:
    """The verdict the sync itself gives an object it failed to apply or refused: Failed
    (what the revision wants of it can't be reached without intervention), whatever the
    live object's own health is (the previous revision's, or another owner's object)."""
    reason = _NOT_APPLIED.get(o.action)
    if reason is None:
        return None
    return HealthResult(Health.FAILED, o.message or f"{o.action.value} by the sync", reason)


def aggregate_of(health: Mapping[Key, HealthResult], *, applied: bool) -> Health:
    """The aggregate health of a report's objects; `Unknown` for a revision that was not
    applied (nothing of it was observed), not the `Current` of an empty set."""
    if not applied and not health:
        return Health.UNKNOWN
    return aggregate([h.status for h in health.values()])


@dataclass(frozen=True, slots=True)
class SourceReport:
    """One source's latest word on one revision. Immutable: `health` is its own copy,
    keyed by `key_of(ref)` (tuples: 10,000 objects are keyed in milliseconds)."""

    source: SourceInfo
    revision: str
    result: SyncStatus
    synced_at: dt.datetime
    updated_at: dt.datetime
    counts: Counts
    errors: tuple[str, ...]
    health: Mapping[Key, HealthResult]
    aggregate: Health
    pinned: frozenset[Key] = frozenset()
    """Objects the sync failed to apply or refused: their verdict is the sync's (Failed),
    not what a later look at the live object says."""
    applied: bool = True
    """False for a revision refused outright (invalid manifests, an untrusted commit, a
    missing path): nothing of it was applied, so its health is `Unknown`."""
    releases: tuple[Mapping[str, str], ...] = ()
    """The Helm releases the revision rendered: release, namespace, chart, version, digest."""
    hooks: tuple[Mapping[str, Any], ...] = ()
    """The hooks the sync ran (`HookRun.to_dict`), messages redacted."""
    warnings: tuple[str, ...] = ()
    """Annotations of Flux and Argo CD that gitkrm does not honour."""

    @classmethod
    def of_sync(
        cls,
        *,
        source: SourceInfo,
        result: SyncResult,
        health: Mapping[ObjectRef, HealthResult],
        now: dt.datetime,
        redact: Redact = _no_redact,
    ) -> SourceReport:
        """A sync's report: objects are those health was given for and those the sync
        kept (pruned ones are gone); an object without a verdict is Unknown; an object the
        sync failed to apply or refused is Failed (`sync_verdict`), whatever its live
        health; a revision refused outright (a failed result without objects) is Unknown."""
        objects: dict[Key, HealthResult] = dict.fromkeys(
            [key_of(o.ref) for o in result.objects if o.action not in _GONE], _NOT_OBSERVED
        )
        objects.update([(key_of(ref), h) for ref, h in health.items()])
        pinned: dict[Key, HealthResult] = {}
        for o in result.objects:
            verdict = sync_verdict(o)
            if verdict is not None:
                pinned[key_of(o.ref)] = verdict
        objects.update(pinned)
        applied = result.status is SyncStatus.SUCCEEDED or bool(result.objects)
        problems = [_clip(redact(scrub_secret_values(p))) for p in result.problems()]
        if len(problems) > MAX_ERRORS:
            more = len(problems) - MAX_ERRORS + 1
            problems = [*problems[: MAX_ERRORS - 1], f"... and {more} more"]
        return cls(
            source=source,
            revision=result.revision,
            result=result.status,
            synced_at=now,
            updated_at=now,
            counts=result.counts,
            errors=tuple(problems),
            health=MappingProxyType(objects),
            aggregate=aggregate_of(objects, applied=applied),
            pinned=frozenset(pinned),
            applied=applied,
            releases=result.releases,
            hooks=tuple(_hook_entry(h.to_dict(), redact) for h in result.hooks[:MAX_ERRORS]),
            warnings=tuple(_clip(redact(w)) for w in result.warnings[:MAX_ERRORS]),
        )

    def verdict(self, ref: ObjectRef) -> HealthResult | None:
        return self.health.get(key_of(ref))

    def with_health(
        self,
        health: Mapping[ObjectRef, HealthResult] | Mapping[Key, HealthResult],
        *,
        now: dt.datetime,
    ) -> SourceReport | None:
        """This report with new verdicts for (some of) its objects (by ref or by key);
        None if none changed. Objects the sync did not report are added (an object the
        revision created later); the sync's own verdicts (`pinned`) stay."""
        mine = self.health
        changed: dict[Key, HealthResult] = {}
        for ref, h in health.items():
            key = ref if isinstance(ref, tuple) else key_of(ref)
            if key not in self.pinned and mine.get(key) != h:
                changed[key] = h
        if not changed:
            return None
        merged = dict(mine)
        merged.update(changed)
        return replace(
            self,
            updated_at=now,
            health=MappingProxyType(merged),
            aggregate=aggregate_of(merged, applied=self.applied),
        )


def object_entry(key: Key, h: HealthResult, *, redact: Redact) -> dict[str, Any]:
    """`{group, kind, namespace, name, health}` (+ reason and message unless Current)."""
    group, kind, namespace, name = key
    out: dict[str, Any] = {"group": group, "kind": kind}
    if namespace:
        out["namespace"] = namespace
    out["name"] = name
    out["health"] = h.status.value
    if h.status is not Health.CURRENT:
        if h.reason:
            out["reason"] = h.reason
        if h.message:
            out["message"] = _clip(redact(scrub_secret_values(h.message)))
    return out


def _objects(
    report: SourceReport, *, only_not_current: bool, redact: Redact
) -> list[dict[str, Any]]:
    items: Iterable[tuple[Key, HealthResult]] = report.health.items()
    if only_not_current:
        items = [(k, h) for k, h in items if h.status is not Health.CURRENT]
    seen: dict[str, str] = {}  # thousands of objects share a few messages: redact each once

    def once(text: str) -> str:
        out = seen.get(text)
        if out is None:
            out = seen[text] = redact(text)
        return out

    return [object_entry(k, h, redact=once) for k, h in sorted(items)]


def _hook_entry(entry: dict[str, object], redact: Redact) -> dict[str, object]:
    message = entry.get("message")
    if isinstance(message, str):
        entry["message"] = _clip(redact(scrub_secret_values(message)))
    return entry


def _common(report: SourceReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "revision": report.revision,
        **({"parent": report.source.parent} if report.source.parent else {}),
        "time": rfc3339(report.synced_at),
        "updated": rfc3339(report.updated_at),
        "result": report.result.value,
        "health": report.aggregate.value,
        "counts": report.counts.shown(),
        "errors": list(report.errors),
    }
    if report.releases:
        out["releases"] = [dict(r) for r in report.releases]
    if report.hooks:
        out["hooks"] = [dict(h) for h in report.hooks]
    if report.warnings:
        out["warnings"] = list(report.warnings)
    return out


def note_entry(report: SourceReport, *, redact: Redact = _no_redact) -> dict[str, Any]:
    """One source's part of a commit's note: the objects that are not Current."""
    out = _common(report)
    out["objects"] = _objects(report, only_not_current=True, redact=redact)
    return out


def status_entry(report: SourceReport, *, redact: Redact = _no_redact) -> dict[str, Any]:
    """One source's part of the status file: where it reads from, and every object."""
    src = report.source
    out: dict[str, Any] = {"url": src.url, "ref": src.ref, "path": src.path}
    out.update(_common(report))
    out["objects"] = _objects(report, only_not_current=False, redact=redact)
    return out


def entry_applied(entry: Mapping[str, Any]) -> bool:
    """Whether a note or status entry is of a revision that was applied (at least in part):
    False for a failed sync that touched no object (the revision was refused outright)."""
    if entry.get("result") != SyncStatus.FAILED.value or entry.get("objects"):
        return True
    counts = entry.get("counts") or {}
    return any(isinstance(v, int) and v > 0 for v in counts.values())


def entry_health(entry: Mapping[str, Any]) -> str:
    """The aggregate health an entry states, read truthfully also from entries written
    before gitkrm judged failed syncs (they said `Current` of a revision not applied, and
    of objects failed or refused): `Unknown` for a revision not applied, `Failed` when
    objects failed or were refused."""
    health = str(entry.get("health", ""))
    if health != Health.CURRENT.value:
        return health
    if not entry_applied(entry):
        return Health.UNKNOWN.value
    counts = entry.get("counts") or {}
    if any(isinstance(counts.get(k), int) and counts[k] > 0 for k in ("failed", "refused")):
        return Health.FAILED.value
    return health


def note_document(agent: str, sources: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": NOTE_KIND,
        "agent": agent,
        "sources": {k: sources[k] for k in sorted(sources)},
    }


def status_document(
    agent: str, sources: Mapping[str, Mapping[str, Any]], *, updated: dt.datetime
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": STATUS_KIND,
        "agent": agent,
        "updated": rfc3339(updated),
        "sources": {k: sources[k] for k in sorted(sources)},
    }


def render(doc: Mapping[str, Any]) -> bytes:
    """A note or status document as the YAML written to Git."""
    kind = doc.get("kind")
    header = (
        f"gitkrm {kind} of agent {doc.get('agent')} ({API_VERSION}); format: docs/status-format.md"
    )
    return yamlemit.dump(doc, header=header).encode("utf-8")


def parse(data: bytes, *, kind: str, what: str) -> dict[str, Any]:
    """A document read back from Git; `Invalid` (naming `what`) when it is not one."""
    try:
        doc = yamlemit.load(data)  # what gitkrm wrote, read back in milliseconds
    except (yamlemit.NotOurs, UnicodeDecodeError, RecursionError):
        try:
            doc = yaml.load(data, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as e:
            raise Invalid(f"{what}: not YAML: {str(e).splitlines()[0]}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != kind
        or not isinstance(doc.get("sources"), dict)
    ):
        raise Invalid(f"{what}: not a gitkrm {kind} document")
    return doc


_NAME_LINE = re.compile(rb"  ([a-z0-9](?:[-a-z0-9]*[a-z0-9])?):\Z")


def source_names(data: bytes, *, kind: str) -> set[str] | None:
    """The source names of a `kind` document as `render` lays it out (one line
    `  <name>:` per source under `sources:`), without parsing it; None when the text is
    not laid out so (then only `parse` can tell)."""
    if not data.startswith(b"# gitkrm %s of agent " % kind.encode()):
        return None
    head, sep, body = data.partition(b"\nsources:\n")
    if not sep or b"\nkind: %s\n" % kind.encode() not in head:
        return None
    names: set[str] = set()
    for line in body.split(b"\n"):
        if line[:2] != b"  " or line[2:3] == b" ":
            if line and not line.startswith(b"  "):
                return None  # another top-level key after sources: not our layout
            continue
        m = _NAME_LINE.match(line)
        if m is None:
            return None
        names.add(m[1].decode())
    return names


def merge_notes(base: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """Two versions of one commit's note as one: every source of both; where both have a
    source, the entry updated last (ours on a tie)."""
    merged: dict[str, Any] = dict(base.get("sources") or {})
    for name, entry in (ours.get("sources") or {}).items():
        theirs = merged.get(name)
        if not isinstance(theirs, dict) or str(entry.get("updated", "")) >= str(
            theirs.get("updated", "")
        ):
            merged[name] = entry
    return note_document(str(ours.get("agent") or base.get("agent") or ""), merged)
