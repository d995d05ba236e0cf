"""A HelmRelease's status in helm-controller's form: Ready and Released, the attempted
revision, the history of releases and what gitkrm does not honour."""

from __future__ import annotations

import dataclasses
from typing import Any

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.status import Outcome, Reason
from gitkrm.agent.tree.helmrelease import INTERPRETER
from gitkrm.agent.tree.model import ChildSpec, ChildState, Phase, Unhonoured
from gitkrm.charts.spec import ChartRef
from gitkrm.krm import ObjectRef
from gitkrm.krm.conditions import find_condition

from .helmrelease_objects import helm_release

REF = ObjectRef(
    group="helm.toolkit.fluxcd.io", kind="HelmRelease", name="podinfo", namespace="apps"
)
CHILD = ChildSpec(
    declared_by=REF,
    config=SourceConfig(name="c", url="https://charts.example.com", ref=None,
                        chart=ChartRef(repository="https://charts.example.com", name="podinfo")),
)  # fmt: skip


def status(obj: dict[str, Any], state: ChildState) -> dict[str, Any]:
    out = INTERPRETER.status(obj, state)
    obj["status"] = out
    return out


def cond(st: dict[str, Any], kind: str) -> tuple[str, str, str]:
    c = find_condition(st.get("conditions"), kind)
    assert c is not None, kind
    return str(c["status"]), str(c["reason"]), str(c["message"])


def synced(revision: str, *, ok: bool = True, phase: Phase = Phase.SYNCED) -> ChildState:
    outcome = Outcome(
        revision=revision, succeeded=ok, reason=Reason.SUCCEEDED if ok else Reason.SYNC_FAILED,
        errors=() if ok else ("templates/x.yaml: bad",),
    )  # fmt: skip
    return ChildState(phase=phase, outcome=outcome, spec=CHILD, observed_generation=2)


def test_install_then_upgrade_then_failure_read_as_helm_controllers() -> None:
    obj = helm_release()
    st = status(obj, ChildState(phase=Phase.PENDING, waiting_for=(REF,), spec=CHILD))
    assert cond(st, "Ready")[:2] == ("False", "DependencyNotReady")
    st = status(obj, synced("6.5.0@sha256:aa", phase=Phase.SYNCING))
    assert cond(st, "Ready")[:2] == ("Unknown", "Progressing")
    assert cond(st, "Released")[:2] == ("True", "InstallSucceeded")
    st = status(obj, synced("6.5.0@sha256:aa"))
    assert cond(st, "Ready") == (
        "True", "InstallSucceeded",
        "Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.5.0",
    )  # fmt: skip
    assert st["lastAttemptedRevision"] == "6.5.0"
    assert st["observedGeneration"] == 2
    assert st["helmChart"] == "apps/apps-podinfo"
    st = status(obj, synced("6.6.0@sha256:bb"))
    assert cond(st, "Ready")[1] == "UpgradeSucceeded"
    assert [(h["chartVersion"], h["digest"], h["version"], h["status"]) for h in st["history"]] == [
        ("6.6.0", "sha256:bb", 2, "deployed"),
        ("6.5.0", "sha256:aa", 1, "superseded"),
    ]
    st = status(obj, synced("6.7.0@sha256:cc", ok=False))
    ready = cond(st, "Ready")
    assert ready[:2] == ("False", "UpgradeFailed")
    assert ready[2].endswith("with chart podinfo@6.7.0: templates/x.yaml: bad")
    assert cond(st, "Released")[:2] == ("False", "UpgradeFailed")
    assert st["history"][0]["status"] == "failed"
    assert st["lastAttemptedRevision"] == "6.7.0"


def test_an_invalid_spec_stalls_and_unhonoured_fields_are_a_condition() -> None:
    obj = helm_release()
    st = status(obj, ChildState(phase=Phase.FAILED, error="spec.chart: required"))
    assert cond(st, "Ready")[:2] == ("False", "InvalidSpec")
    assert cond(st, "Stalled")[0] == "True"
    done = synced("1.0.0@sha256:a")
    st = status(obj, dataclasses.replace(done, unhonoured=(Unhonoured("spec.test", "no tests"),)))
    assert find_condition(st["conditions"], "Stalled") is None
    assert cond(st, "NotHonoured") == ("True", "FieldsNotHonoured", "spec.test: no tests")


def test_a_chart_in_git_reads_its_version_from_the_render_and_a_quiet_pass_keeps_it() -> None:
    obj = helm_release()
    sha = "a" * 40
    rendered = {"chart": "tools", "version": "0.3.0", "digest": "sha256:files"}
    done = Outcome(revision=sha, succeeded=True, reason=Reason.SUCCEEDED, releases=(rendered,))
    st = status(obj, ChildState(phase=Phase.SYNCED, outcome=done, spec=CHILD))
    assert st["lastAttemptedRevision"] == "0.3.0"
    assert [(h["chartName"], h["chartVersion"], h["digest"]) for h in st["history"]] == [
        ("tools", "0.3.0", "sha256:files")
    ]
    quiet = Outcome(revision=sha, succeeded=True, reason=Reason.SUCCEEDED, nothing_changed=True)
    st = status(obj, ChildState(phase=Phase.SYNCED, outcome=quiet, spec=CHILD))
    assert len(st["history"]) == 1
    assert st["lastAttemptedRevision"] == "0.3.0"


def test_a_chart_source_that_cannot_be_fetched_is_source_not_ready_and_no_release() -> None:
    # The shape of a monitoring stack: a chartRef OCIRepository on a registry out of
    # reach, and a chart.spec HelmRepository one; helm-controller attempts no release.
    fetch = "OCI registry oci://registry.invalid/charts/stack: no such host"
    failed = ChildState(
        phase=Phase.FAILED, spec=CHILD,
        outcome=Outcome(revision=None, succeeded=False, reason=Reason.SOURCE_FAILED,
                        errors=(fetch,)),
    )  # fmt: skip
    obj = helm_release("stack", "monitoring", chartRef={"kind": "OCIRepository", "name": "stack"})
    del obj["spec"]["chart"]
    st = status(obj, failed)
    assert cond(st, "Ready") == (
        "False", "SourceNotReady", f"OCIRepository 'monitoring/stack' is not ready: {fetch}"
    )  # fmt: skip
    assert "history" not in st
    assert find_condition(st["conditions"], "Released") is None
    st = status(helm_release(), failed)
    assert cond(st, "Ready")[2].startswith("HelmChart 'apps/apps-podinfo' is not ready: OCI")
    # once the chart is had, the release is installed as v1
    st = status(obj, synced("1.0.0@sha256:aa"))
    assert cond(st, "Ready")[:2] == ("True", "InstallSucceeded")
    assert [h["version"] for h in st["history"]] == [1]
