"""Argo CD's status form of an Application, and Argo CD's CRDs."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.agent.status import Outcome, Reason
from gitkrm.agent.tree.argocd import INTERPRETER
from gitkrm.agent.tree.argocd_status import health_status
from gitkrm.agent.tree.model import ChildSpec, ChildState, Phase, Unhonoured
from gitkrm.health import Health
from gitkrm.krm import ObjectRef
from gitkrm.schema import Registry
from gitkrm.sync.results import Counts

from .argocd_objects import application
from .flux_objects import Objects
from .test_argocd import parent

SHA = "0123456789abcdef0123456789abcdef01234567"
DEPLOY = ObjectRef(group="apps", kind="Deployment", name="web", namespace="guestbook", version="v1")
SVC = ObjectRef(group="", kind="Service", name="web", namespace="guestbook", version="v1")


async def spec_of(obj: dict[str, Any]) -> ChildSpec:
    return await INTERPRETER.child(obj, Objects(parent()))


def ok(**kw: Any) -> Outcome:
    return Outcome(revision=SHA, succeeded=True, reason=Reason.SUCCEEDED, counts=Counts(), **kw)


async def test_compared_to_is_the_spec_as_written_for_a_chart_too() -> None:
    """A Helm chart source (no path): its chart, version and parameters, as Argo CD shows
    them; user-info never."""
    source = {
        "repoURL": "https://bot:s3cret@charts.example.org/stable",
        "chart": "mysql",
        "targetRevision": "9.2.0",
        "helm": {"parameters": [{"name": "architecture", "value": "replication"}]},
    }
    ignored = [{"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}]
    obj = application(source=source, ignoreDifferences=ignored)
    failed = Outcome(
        revision=None,
        succeeded=False,
        reason=Reason.SOURCE_FAILED,
        errors=("chart repository unreachable",),
    )
    st = INTERPRETER.status(
        obj, ChildState(phase=Phase.FAILED, outcome=failed, spec=await spec_of(obj))
    )
    assert st["sync"]["comparedTo"] == {
        "source": {**source, "repoURL": "https://charts.example.org/stable"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
        "ignoreDifferences": ignored,
    }
    assert "s3cret" not in str(st)
    # nothing to compare with: Argo CD's Unknown and ComparisonError, not OutOfSync
    assert st["sync"]["status"] == "Unknown"
    [cond] = st["conditions"]
    assert (cond["type"], cond["message"]) == ("ComparisonError", "chart repository unreachable")


async def test_a_synced_healthy_application() -> None:
    obj = application()
    spec = await spec_of(obj)
    state = ChildState(
        phase=Phase.SYNCED, outcome=ok(), health=Health.CURRENT, inventory=[DEPLOY, SVC], spec=spec
    )
    st = INTERPRETER.status(obj, state)
    assert st["sync"]["status"] == "Synced"
    assert st["sync"]["revision"] == SHA
    assert st["sync"]["comparedTo"] == {  # Argo CD's: the spec's, as written
        "source": {"repoURL": "https://github.com/example/fleet.git", "path": "apps/guestbook",
                   "targetRevision": "HEAD"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
    }  # fmt: skip
    assert st["health"] == {"status": "Healthy"}
    op = st["operationState"]
    assert (op["phase"], op["operation"]["sync"]["revision"]) == ("Succeeded", SHA)
    assert op["syncResult"]["revision"] == SHA
    assert [r["kind"] for r in op["syncResult"]["resources"]] == ["Deployment", "Service"]
    assert op["startedAt"]
    assert op["finishedAt"]
    assert st["resources"] == [
        {"group": "", "version": "v1", "kind": "Service", "namespace": "guestbook", "name": "web",
         "status": "Synced", "health": {"status": "Healthy"}},
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "guestbook",
         "name": "web", "status": "Synced", "health": {"status": "Healthy"}},
    ]  # fmt: skip
    assert "conditions" not in st
    assert st["reconciledAt"]
    assert "summary" in st
    # The same state again is the same status: nothing to write.
    assert INTERPRETER.status({**obj, "status": st}, state) == st


async def test_running_then_failed_sync_is_out_of_sync_with_a_sync_error() -> None:
    obj = application()
    spec = await spec_of(obj)
    running = INTERPRETER.status(obj, ChildState(phase=Phase.SYNCING, spec=spec))
    assert running["operationState"]["phase"] == "Running"
    assert "finishedAt" not in running["operationState"]
    assert running["sync"]["status"] == "Unknown"
    failed = Outcome(
        revision=SHA, succeeded=False, reason=Reason.SYNC_FAILED, counts=Counts(failed=1),
        errors=("Deployment guestbook/web: spec.replicas: Invalid value", "second"),
    )  # fmt: skip
    st = INTERPRETER.status(
        {**obj, "status": running},
        ChildState(
            phase=Phase.FAILED, outcome=failed, health=Health.FAILED, spec=spec,
            inventory=[DEPLOY, SVC], object_health={DEPLOY: Health.FAILED, SVC: Health.CURRENT},
        ),
    )  # fmt: skip
    assert [(r["kind"], r["health"]["status"]) for r in st["resources"]] == [
        ("Service", "Healthy"), ("Deployment", "Degraded"),
    ]  # fmt: skip
    assert st["sync"]["status"] == "OutOfSync"
    assert st["health"]["status"] == "Degraded"
    assert st["operationState"]["phase"] == "Failed"
    assert st["operationState"]["message"].startswith("Deployment guestbook/web")
    [cond] = st["conditions"]
    assert cond["type"] == "SyncError"
    assert cond["message"].endswith("(and 1 more)")
    refused = Outcome(revision=SHA, succeeded=False, reason=Reason.INVALID_REVISION,
                      errors=("a.yaml:3: bad",), stalled=True)  # fmt: skip
    st = INTERPRETER.status(obj, ChildState(phase=Phase.FAILED, outcome=refused, spec=spec))
    assert st["conditions"][0]["type"] == "ComparisonError"


async def test_an_application_without_automated_sync_is_compared_not_operated() -> None:
    obj = application(syncPolicy=None)
    spec = await spec_of(obj)
    assert not spec.config.automated
    differ = ok(out_of_sync=("create: Deployment guestbook/web", "patch: Service guestbook/web"))
    state = ChildState(phase=Phase.SYNCED, outcome=differ, inventory=[SVC], spec=spec)
    st = INTERPRETER.status(obj, state)
    assert st["sync"]["status"] == "OutOfSync"
    assert "operationState" not in st  # nothing was synced
    assert [(r["kind"], r["status"], r.get("health")) for r in st["resources"]] == [
        ("Deployment", "OutOfSync", {"status": "Missing"}),
        ("Service", "OutOfSync", None),
    ]
    same = ok(out_of_sync=())
    st = INTERPRETER.status(obj, ChildState(phase=Phase.SYNCED, outcome=same, spec=spec))
    assert st["sync"]["status"] == "Synced"


async def test_an_invalid_application_and_unhonoured_fields_are_conditions() -> None:
    obj = application(destination={"server": "https://prod.example.com"})
    message = "spec.destination.server: 'https://prod.example.com': gitkrm syncs its own target"
    st = INTERPRETER.status(obj, ChildState(phase=Phase.FAILED, error=message))
    assert st["sync"]["status"] == "Unknown"
    assert st["health"]["status"] == "Unknown"
    assert st["operationState"]["phase"] == "Error"
    [cond] = st["conditions"]
    assert (cond["type"], cond["message"]) == ("InvalidSpecError", message)
    warned = application(revisionHistoryLimit=3)
    spec = await spec_of(warned)
    st = INTERPRETER.status(warned, ChildState(phase=Phase.SYNCED, outcome=ok(), spec=spec))
    [cond] = st["conditions"]
    assert cond["type"] == "NotHonouredWarning"
    assert cond["message"].startswith("spec.revisionHistoryLimit: gitkrm keeps")
    extra = (Unhonoured("spec.x", "why"),)
    st = INTERPRETER.status(
        warned, ChildState(phase=Phase.SYNCED, outcome=ok(), spec=spec, unhonoured=extra)
    )
    assert st["conditions"][0]["message"] == "spec.x: why"


@pytest.mark.parametrize(
    ("health", "phase", "shown"),
    [
        (Health.CURRENT, Phase.SYNCED, "Healthy"),
        (Health.IN_PROGRESS, Phase.SYNCED, "Progressing"),
        (Health.TERMINATING, Phase.SYNCED, "Progressing"),
        (Health.FAILED, Phase.SYNCED, "Degraded"),
        (Health.NOT_FOUND, Phase.SYNCED, "Missing"),
        (Health.UNKNOWN, Phase.SYNCED, "Unknown"),
        (Health.CURRENT, Phase.SUSPENDED, "Suspended"),
    ],
)
def test_health_is_mapped_to_argo_cds_words(health: Health, phase: Phase, shown: str) -> None:
    assert health_status(ChildState(phase=phase, health=health))["status"] == shown


def test_the_crds_are_argo_cds_shape_and_admit_an_application() -> None:
    application_crd, project_crd, set_crd = INTERPRETER.crds()
    assert application_crd["metadata"]["name"] == "applications.argoproj.io"
    assert project_crd["metadata"]["name"] == "appprojects.argoproj.io"
    assert set_crd["metadata"]["name"] == "applicationsets.argoproj.io"
    assert set_crd["spec"]["names"]["shortNames"] == ["appset", "appsets"]
    [version] = application_crd["spec"]["versions"]
    assert "subresources" not in version  # Argo CD's Application has no status subresource
    assert [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]] == [
        ("Sync Status", 0), ("Health Status", 0), ("Revision", 10), ("Project", 10),
    ]  # fmt: skip
    assert application_crd["spec"]["names"]["shortNames"] == ["app", "apps"]
    registry = Registry.builtin()
    for crd in (application_crd, project_crd, set_crd):
        registry.register_crd(crd)
    obj = {**application(), "status": {"sync": {"status": "Synced"}}}
    assert registry.admit(obj) == []
    assert obj["status"] == {"sync": {"status": "Synced"}}  # kept: part of the object
