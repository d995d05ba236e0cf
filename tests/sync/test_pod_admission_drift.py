"""A Pod committed to Git stays in sync after the store's Pod admission added what
kube-apiserver adds (service account, token volume, default tolerations, priority): those
fields are the server's, not drift, in client-side and server-side mode alike."""

from __future__ import annotations

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.results import Action
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, namespace
from tests.sync.test_engine import actions, sync

POD = ObjectRef(group="", kind="Pod", namespace="apps", name="tool")


def pod(image: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: tool
  namespace: apps
spec:
  containers:
  - name: tool
    image: {image}
    volumeMounts:
    - name: scratch
      mountPath: /scratch
  tolerations:
  - key: dedicated
    operator: Equal
    value: tools
    effect: NoSchedule
  volumes:
  - name: scratch
    emptyDir: {{}}
"""


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
async def test_a_synced_pod_is_not_drift_after_admission(
    mode: str,
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("pod.yaml", pod("busybox:1.36"))
    remote.commit("pod")
    engine = make_engine() if mode == "client-side" else make_engine(apply_mode="server-side")
    first = await sync(engine, source)
    assert first.ok, first.problems()
    live = (await store.get(POD))["spec"]
    assert live["serviceAccountName"] == "default"
    assert [t["key"] for t in live["tolerations"]] == [
        "dedicated",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert [v["name"][:16] for v in live["volumes"]] == ["scratch", "kube-api-access-"]
    assert live["priority"] == 0
    again = await sync(engine, source)
    assert again.ok, again.problems()
    assert actions(again)["Pod/tool"] is Action.UNCHANGED
    drift = await engine.check_drift()
    assert drift.ok, drift.problems()
    assert actions(drift).get("Pod/tool", Action.UNCHANGED) is Action.UNCHANGED
    # A change in Git is applied and keeps what admission added.
    remote.write("pod.yaml", pod("busybox:1.37"))
    remote.commit("bump")
    bumped = await sync(engine, source)
    assert bumped.ok, bumped.problems()
    assert actions(bumped)["Pod/tool"] is Action.CONFIGURED
    after = (await store.get(POD))["spec"]
    assert after["containers"][0]["image"] == "busybox:1.37"
    assert after["tolerations"] == live["tolerations"]
    assert after["volumes"] == live["volumes"]
    assert after["containers"][0]["volumeMounts"] == live["containers"][0]["volumeMounts"]
