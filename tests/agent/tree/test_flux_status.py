"""Flux's status form of a Kustomization and a GitRepository, and Flux's CRDs."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.status import Outcome, Reason
from gitkrm.agent.tree.flux import INTERPRETER
from gitkrm.agent.tree.flux_status import flux_revision, git_repository_status, inventory_id
from gitkrm.agent.tree.model import ChildSpec, ChildState, Phase, Unhonoured
from gitkrm.health import Health
from gitkrm.krm import ObjectRef
from gitkrm.krm.conditions import get_condition
from gitkrm.schema import Registry
from gitkrm.source import GitRef, RefKind

from .flux_objects import git_repository, kustomization

SHA = "0123456789abcdef0123456789abcdef01234567"
KS = ObjectRef(group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name="apps",
               namespace="flux-system")  # fmt: skip
SPEC = ChildSpec(declared_by=KS, config=SourceConfig(name="flux-system-apps", url="/r"))
DEPLOY = ObjectRef(group="apps", kind="Deployment", name="web", namespace="apps", version="v1")


def state(phase: Phase, *, spec: ChildSpec = SPEC, **kw: Any) -> ChildState:
    return ChildState(phase=phase, spec=spec, **kw)


def ok(revision: str = SHA) -> Outcome:
    return Outcome(revision=revision, succeeded=True, reason=Reason.SUCCEEDED)


def ready(status: dict[str, Any]) -> tuple[str, str, str]:
    c = get_condition({"status": status}, "Ready")
    assert c is not None
    return c["status"], c["reason"], c["message"]


def test_revisions_in_fluxs_form() -> None:
    assert flux_revision(SHA, GitRef(RefKind.BRANCH, "main")) == f"main@sha1:{SHA}"
    assert flux_revision(SHA, GitRef(RefKind.TAG, "v1")) == f"v1@sha1:{SHA}"
    assert flux_revision(SHA, GitRef(RefKind.COMMIT, SHA)) == f"sha1:{SHA}"
    assert flux_revision("f" * 64, None) == "sha256:" + "f" * 64


def test_a_synced_child_is_ready_with_its_revision_and_inventory() -> None:
    st = INTERPRETER.status(kustomization(), state(Phase.SYNCED, outcome=ok(), inventory=[DEPLOY]))
    assert ready(st) == ("True", "ReconciliationSucceeded", f"Applied revision: main@sha1:{SHA}")
    assert st["lastAppliedRevision"] == st["lastAttemptedRevision"] == f"main@sha1:{SHA}"
    assert st["observedGeneration"] == 3
    assert st["inventory"] == {"entries": [{"id": "apps_web_apps_Deployment", "v": "v1"}]}
    assert get_condition({"status": st}, "Reconciling") is None
    assert inventory_id(ObjectRef(group="", kind="Namespace", name="apps")) == "_apps__Namespace"
    unversioned = ObjectRef(group="apps", kind="Deployment", name="web", namespace="apps")
    st = INTERPRETER.status(
        kustomization(), state(Phase.SYNCED, outcome=ok(), inventory=[unversioned])
    )
    assert st["inventory"]["entries"] == [{"id": "apps_web_apps_Deployment", "v": "v1"}]


def test_syncing_pending_and_failing() -> None:
    obj = kustomization()
    st = INTERPRETER.status(obj, state(Phase.SYNCING))
    assert ready(st) == ("Unknown", "Progressing", "Reconciliation in progress")
    assert get_condition({"status": st}, "Reconciling")["status"] == "True"  # type: ignore[index]
    infra = ObjectRef(group=KS.group, kind=KS.kind, name="infrastructure", namespace="flux-system")
    st = INTERPRETER.status(obj, state(Phase.PENDING, waiting_for=(infra,)))
    assert ready(st)[:2] == ("False", "DependencyNotReady")
    assert "'flux-system/infrastructure'" in ready(st)[2]
    # A failure keeps the last applied revision and reports the attempted one.
    obj["status"] = INTERPRETER.status(obj, state(Phase.SYNCED, outcome=ok()))
    bad = Outcome(revision="f" * 40, succeeded=False, reason=Reason.SYNC_FAILED,
                  errors=("Deployment apps/web: spec.replicas: must be an integer",))  # fmt: skip
    st = INTERPRETER.status(obj, state(Phase.FAILED, outcome=bad))
    assert ready(st) == ("False", "ReconciliationFailed", bad.errors[0])
    assert st["lastAppliedRevision"] == f"main@sha1:{SHA}"
    assert st["lastAttemptedRevision"] == "main@sha1:" + "f" * 40
    assert get_condition({"status": st}, "Stalled") is None
    st = INTERPRETER.status(
        obj, state(Phase.FAILED, error="spec.path: '../x' leaves the repository")
    )
    assert ready(st)[:2] == ("False", "ReconciliationFailed")
    assert get_condition({"status": st}, "Stalled")["status"] == "True"  # type: ignore[index]
    src = Outcome(revision=None, succeeded=False, reason=Reason.SOURCE_FAILED, errors=("no repo",))
    assert ready(INTERPRETER.status(obj, state(Phase.FAILED, outcome=src)))[1] == "ArtifactFailed"


def test_health_when_it_waits() -> None:
    obj = kustomization()
    unasked = INTERPRETER.status(obj, state(Phase.SYNCED, outcome=ok(), health=Health.IN_PROGRESS))
    assert ready(unasked)[0] == "True"  # without wait or healthChecks, applied is Ready
    waits = dataclasses.replace(SPEC, wait=True)
    st = INTERPRETER.status(
        obj, state(Phase.SYNCED, spec=waits, outcome=ok(), health=Health.IN_PROGRESS)
    )
    assert ready(st)[:2] == ("Unknown", "Progressing")
    why = "Deployment apps/web: ProgressDeadlineExceeded"
    failing = state(
        Phase.SYNCED, spec=waits, outcome=ok(), health=Health.FAILED, health_message=why
    )
    st = INTERPRETER.status(obj, failing)
    assert ready(st)[:2] == ("False", "HealthCheckFailed")
    assert "ProgressDeadline" in ready(st)[2]
    st = INTERPRETER.status(
        obj, state(Phase.SYNCED, spec=waits, outcome=ok(), health=Health.CURRENT)
    )
    assert ready(st)[0] == "True"
    assert get_condition({"status": st}, "Healthy")["status"] == "True"  # type: ignore[index]


def test_unhonoured_fields_are_a_condition_and_suspension_keeps_the_status() -> None:
    obj = kustomization()
    why = (Unhonoured("spec.serviceAccountName", "not honoured until RBAC lands"),)
    st = INTERPRETER.status(obj, state(Phase.SYNCED, outcome=ok(), unhonoured=why))
    c = get_condition({"status": st}, "NotHonoured")
    assert c is not None
    assert c["message"] == "spec.serviceAccountName: not honoured until RBAC lands"
    obj["status"] = st
    assert INTERPRETER.status(obj, state(Phase.SUSPENDED)) == st


def test_git_repository_status_has_the_artifact() -> None:
    repo = git_repository("https://example.org/x")
    st = git_repository_status(repo, sha=SHA, ref=GitRef(RefKind.BRANCH, "main"))
    assert ready(st)[0] == "True"
    assert st["artifact"]["revision"] == f"main@sha1:{SHA}"
    repo["status"] = st
    again = git_repository_status(repo, sha=SHA, ref=GitRef(RefKind.BRANCH, "main"))
    assert again["artifact"] == st["artifact"]  # unchanged: no new time, no write
    failed = git_repository_status(repo, sha=None, ref=None, error="authentication failed")
    assert ready(failed)[:2] == ("False", "GitOperationFailed")
    assert failed["artifact"]


def test_the_crds_admit_flux_objects_and_show_fluxs_columns() -> None:
    reg = Registry.builtin()
    served = {
        "Kustomization": [("v1", True), ("v1beta2", False)],
        "GitRepository": [("v1", True), ("v1beta2", False)],
        "ArtifactGenerator": [("v1beta1", True)],
        "ExternalArtifact": [("v1", True)],
        # stand-ins nothing acts on (flux_inert), so that fleets carrying them sync
        "Provider": [("v1beta3", True), ("v1beta2", False)],
        "Alert": [("v1beta3", True), ("v1beta2", False)],
        "Receiver": [("v1", True), ("v1beta2", False)],
        "HelmChart": [("v1", True), ("v1beta2", False)],
        "Bucket": [("v1", True), ("v1beta2", False)],
        "ImageRepository": [("v1", True), ("v1beta2", False)],
        "ImagePolicy": [("v1", True), ("v1beta2", False)],
        "ImageUpdateAutomation": [("v1", True), ("v1beta2", False)],
    }
    for crd in INTERPRETER.crds():
        reg.register_crd(orjson.loads(orjson.dumps(crd)))
        versions = crd["spec"]["versions"]
        kind = crd["spec"]["names"]["kind"]
        assert [(v["name"], v["storage"]) for v in versions] == served.pop(kind)
        cols = [c["name"] for c in versions[0]["additionalPrinterColumns"]]
        assert cols in (["Age", "Ready", "Status"], ["URL", "Age", "Ready", "Status"])
        assert versions[0]["subresources"] == {"status": {}}
    assert not served
    reg.admit(kustomization(images=[{"name": "x", "newTag": "1"}]))
    reg.admit(git_repository("https://example.org/x"))
