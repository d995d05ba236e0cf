"""gitkrm's own declaring objects: a GitSource in a synced revision declares a child source.

Rules (docs/concepts.md, "Source trees"):

- A declared GitSource may live in any namespace but `gitkrm-system`, which holds the
  agent's own GitSource objects (configured sources and the children's); its name and
  namespace are its own, the child source is named by `naming.child_name`.
- `url: .`, or the parent's URL, is the parent's repository: the child fetches it with the
  parent's credentials, and without a `ref` follows the parent's. Another URL is a
  repository of its own (a remote URL; a local path only under a parent that is itself on
  this machine), fetched without credentials.
- Fields naming files on the agent's machine (`auth`, `caFile`, `verify`,
  `decryption.keyFiles`) are refused: a commit must not make the agent read its files.
- The parent's repository, ref and path again is the parent itself (`same_as_parent`: no
  child runs, its status mirrors the parent's).
- `dependsOn` names other GitSources (namespace: the object's own); `wait: true` makes the
  child Ready only when its objects are healthy.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gitkrm.errors import GitkrmError, ManifestError
from gitkrm.krm import GroupKind, Obj, ObjectRef
from gitkrm.source.redact import split_userinfo

from .. import status as st
from ..conditions import Conditions
from ..config import is_git_repository, is_remote_url
from ..config_read import from_object
from ..crd import API_VERSION, GROUP, KIND, NAMESPACE
from .model import ChildSpec, ChildState, Context, Peer, Phase, SourceStatus
from .naming import child_name, describe

FINALIZER: Final = "gitkrm.io/prune"
_REFUSED: Final = ("auth", "caFile", "verify")


def _same_url(a: str, b: str) -> bool:
    def norm(u: str) -> str:
        return split_userinfo(u).url.rstrip("/").removesuffix(".git")

    return norm(a) == norm(b)


def _norm_path(p: str) -> str:
    return "/".join(x for x in p.split("/") if x not in ("", "."))


class GitSourceInterpreter:
    """The `Interpreter` of `gitkrm.io` GitSource objects (see the module docstring)."""

    peer: Peer | None = None
    kinds: frozenset[GroupKind] = frozenset({GroupKind(group=GROUP, kind=KIND)})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        ref = ObjectRef.of(obj)
        ref = dataclasses.replace(ref, version=None)
        parent = ctx.parent

        def bad(message: str) -> ManifestError:
            return ManifestError(message, path=f"source {parent.name}", object=describe(ref))

        if ref.namespace in (None, NAMESPACE):
            raise bad(
                f"a GitSource in a synced revision may not live in {NAMESPACE} (the agent's "
                "own GitSource objects are there): give it another namespace"
            )
        spec: dict[str, Any] = copy.deepcopy(dict(obj.get("spec") or {}))
        refused = [f"spec.{k}" for k in _REFUSED if k in spec]
        if (spec.get("decryption") or {}).get("keyFiles"):
            refused.append("spec.decryption.keyFiles")
        if refused:
            raise bad(
                f"{', '.join(refused)}: files on the agent's machine can't be named from Git "
                "(a child of the parent's repository uses the parent's credentials)"
            )
        url = str(spec.get("url") or "")
        same_repo = url == "." or _same_url(url, parent.url)
        if same_repo:
            spec["url"] = parent.safe_url
            if "ref" not in spec and parent.ref is not None:
                spec["ref"] = {str(parent.ref.kind): parent.ref.name}
        elif not is_remote_url(url):
            if not Path(url).is_absolute():
                raise bad(f"spec.url {url!r}: give '.', a URL, or an absolute path")
            if is_remote_url(parent.url):
                raise bad(
                    f"spec.url {url!r}: a path on the agent's machine is allowed only under a "
                    "parent that is on this machine too"
                )
            if not is_git_repository(Path(url)):
                raise bad(f"spec.url {url!r}: not a Git repository")
        body: Obj = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": child_name(ref), "namespace": NAMESPACE},
            "spec": spec,
        }
        try:
            config = from_object(body, base=Path("/"))
        except GitkrmError as e:
            raise bad(e.message) from e
        if same_repo:
            config = dataclasses.replace(
                config,
                url=parent.url,
                auth=parent.auth,
                ca_file=parent.ca_file,
                verify=parent.verify,
            )
        if not config.interpret:
            config = dataclasses.replace(config, interpret=parent.interpret)
        same = (
            same_repo
            and config.ref == parent.ref
            and _norm_path(config.path) == _norm_path(parent.path)
        )
        depends = tuple(
            ObjectRef(
                group=GROUP,
                kind=KIND,
                name=str(d.get("name")),
                namespace=str(d.get("namespace") or ref.namespace),
            )
            for d in spec.get("dependsOn") or ()
        )
        return ChildSpec(
            declared_by=ref,
            config=config,
            depends_on=depends,
            wait=bool(spec.get("wait")),
            finalizer=FINALIZER,
            same_as_parent=same,
        )

    def status(self, obj: Obj, state: ChildState) -> Obj:
        """A GitSource status (the CRD's schema) without times that move on quiet syncs."""
        return child_status(obj.get("status") or {}, state, obj=obj)

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        return ()  # a GitSource is its own source

    def crds(self) -> Sequence[Obj]:
        return ()  # the agent installs the GitSource CRD itself


def _ready(state: ChildState) -> tuple[str, str, str]:
    """(status, reason, message) of the Ready condition."""
    outcome = state.outcome
    if state.error:
        return "False", st.Reason.INVALID_SPEC, state.error
    if state.phase is Phase.PENDING:
        waiting = ", ".join(describe(r) for r in state.waiting_for) or "its dependencies"
        return "False", "DependencyNotReady", f"waiting for {waiting}"
    if state.phase is Phase.SUSPENDED:
        return "False", st.Reason.SUSPENDED, "suspended: not synced"
    if state.phase is Phase.DELETING:
        return "False", "Deleting", "the child source is being removed"
    if outcome is None:
        return "Unknown", st.Reason.PROGRESSING, "not synced yet"
    if not outcome.succeeded:
        first = outcome.errors[0] if outcome.errors else "sync failed"
        return "False", outcome.reason, f"revision {st.short(outcome.revision)}: {first}"
    if state.phase is Phase.SYNCING:
        return "Unknown", st.Reason.PROGRESSING, state.health_message or "waiting for health"
    return "True", st.Reason.SUCCEEDED, f"synced revision {st.short(outcome.revision)}"


def child_status(previous: Mapping[str, Any], state: ChildState, *, obj: Obj) -> Obj:
    """The status of a declaring GitSource: the child's state in the GitSource's fields."""
    status: dict[str, Any] = copy.deepcopy(dict(previous))
    generation = int((obj.get("metadata") or {}).get("generation") or 1)
    conds = Conditions(status.setdefault("conditions", []), generation=generation)
    conds.set(st.READY, *_ready(state))
    status["conditions"] = conds.items
    outcome = state.outcome
    if state.observed_generation is not None:
        status["observedGeneration"] = state.observed_generation
    for key in ("result", "lastError", "errors", "waitingFor", "unhonoured", "health"):
        status.pop(key, None)
    if outcome is not None:
        status["result"] = "Succeeded" if outcome.succeeded else "Failed"
        if outcome.revision:
            status["lastAttemptedRevision"] = outcome.revision
            if outcome.succeeded:
                status["lastSyncedRevision"] = outcome.revision
        if not outcome.succeeded and outcome.errors:
            status["lastError"] = outcome.errors[0]
            status["errors"] = list(outcome.errors[: st.MAX_ERRORS])
    if state.error:
        status["lastError"] = state.error
    if state.waiting_for:
        status["waitingFor"] = [describe(r) for r in state.waiting_for]
    if state.unhonoured:
        status["unhonoured"] = [f"{u.field}: {u.reason}" for u in state.unhonoured]
    if state.health is not None:
        status["health"] = {"status": state.health.value, "objects": len(state.inventory)}
    status["child"] = child_name(dataclasses.replace(ObjectRef.of(obj), version=None))
    return status


INTERPRETER: Final = GitSourceInterpreter()
