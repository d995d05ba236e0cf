"""Helm hooks become the sync phases' annotations (the table of gitkrm.charts.hooks)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gitkrm.charts.hooks import argo_reading, phase_of, translate_hooks, translate_object


def hook(events: str, **extra: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "annotations": {"helm.sh/hook": events, **extra}},
    }


@pytest.mark.parametrize(
    ("events", "install", "upgrade"),
    [
        ("pre-install", "PreSync", None),
        ("pre-upgrade", None, "PreSync"),
        ("post-install", "PostSync", None),
        ("post-upgrade", None, "PostSync"),
        ("pre-install,pre-upgrade", "PreSync", "PreSync"),
        ("post-install, post-upgrade", "PostSync", "PostSync"),
        ("pre-delete", None, None),
        ("post-rollback", None, None),
        ("test", None, None),
        ("test-success", None, None),
    ],
)
def test_the_phase_of_each_event(events: str, install: str | None, upgrade: str | None) -> None:
    assert phase_of(events, is_install=True) == install
    assert phase_of(events, is_install=False) == upgrade


def test_weight_and_delete_policies_are_translated() -> None:
    obj = hook(
        "pre-upgrade",
        **{
            "helm.sh/hook-weight": "-3",
            "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded,hook-failed",
        },
    )
    out = translate_object(obj, is_install=False)
    assert out is not None
    ann = out["metadata"]["annotations"]
    assert ann["argocd.argoproj.io/hook"] == "PreSync"
    assert ann["argocd.argoproj.io/sync-wave"] == "-3"
    assert (
        ann["argocd.argoproj.io/hook-delete-policy"]
        == "BeforeHookCreation,HookSucceeded,HookFailed"
    )
    assert ann["helm.sh/hook"] == "pre-upgrade"  # Helm's own stay
    assert "argocd.argoproj.io/hook" not in obj["metadata"]["annotations"]  # not mutated


def test_an_object_that_is_no_hook_passes_unchanged() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert translate_object(obj, is_install=True) is obj
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    assert translate_hooks(text, is_install=True) is text  # not even parsed


def test_a_template_keeps_its_other_documents_and_drops_hooks_not_run_now() -> None:
    text = yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}},
            hook("pre-upgrade"),
            hook("test"),
        ]
    )
    docs = list(yaml.safe_load_all(translate_hooks(text, is_install=True)))
    assert [d["metadata"]["name"] for d in docs] == ["plain"]
    docs = list(yaml.safe_load_all(translate_hooks(text, is_install=False)))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Job"]
    assert translate_hooks(yaml.safe_dump(hook("test")), is_install=True) == ""


@pytest.mark.parametrize(
    ("events", "phase"),
    [
        ("pre-install", "PreSync"),
        ("pre-upgrade", "PreSync"),
        ("post-install", "PostSync"),
        ("post-upgrade", "PostSync"),
        ("pre-delete", None),
        ("test", None),
    ],
)
def test_argo_cds_mapping_runs_hooks_on_every_sync(events: str, phase: str | None) -> None:
    for install in (True, False):
        out = translate_object(hook(events), is_install=install, every_sync=True)
        got = None if out is None else out["metadata"]["annotations"]["argocd.argoproj.io/hook"]
        assert got == phase


def test_argo_cd_runs_a_hook_in_each_phase_it_names() -> None:
    events = "pre-install, post-upgrade,pre-upgrade"
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "c", "annotations": {"helm.sh/hook": events}}}  # fmt: skip
    out = argo_reading(obj)
    assert out is not None
    assert out["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync,PostSync"
    crd = {**obj, "metadata": {"name": "c", "annotations": {"helm.sh/hook": "crd-install"}}}
    assert argo_reading(crd) is crd  # Helm 2's CRD mark: no hook, applied as it is
