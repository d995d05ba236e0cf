"""kubectl reads the Events the bundled controllers record, through `gitkrm serve`:
`describe` lists an object's Events (kubectl asks by field selector on involvedObject name,
namespace, kind and uid), `get events` shows them with field selectors, `events --for` an
object's."""

from __future__ import annotations

import json
import re

from tests.server.conftest import Kubectl
from tests.support.builders import deployment
from tests.support.manifests import yaml_text
from tests.support.wait import eventually


def _events(kube: Kubectl, *selectors: str) -> list[dict[str, object]]:
    args = ["get", "events", "-n", "default", "-o", "json"]
    if selectors:
        args += ["--field-selector", ",".join(selectors)]
    return list(json.loads(kube(*args))["items"])


def test_describe_and_get_events(kube: Kubectl) -> None:
    kube("apply", "-f", "-", input=yaml_text(deployment("web", replicas=3)))
    kube("rollout", "status", "deployment/web", "-n", "default", "--timeout=60s")

    def described() -> str:
        out = kube("describe", "deployment", "web", "-n", "default")
        return out if "ScalingReplicaSet" in out else ""

    out = eventually(described, timeout=30, interval=0.1, message="describe lists the events")
    events = out[out.index("Events:") :]
    assert re.search(
        r"Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+"
        r"Scaled up replica set web-[a-z0-9]+ from 0 to 3",
        events,
    ), events

    on_web = _events(kube, "involvedObject.name=web")
    assert [e["reason"] for e in on_web] == ["ScalingReplicaSet"]
    rs_name = re.search(r"replica set (\S+) from", str(on_web[0]["message"])).group(1)  # type: ignore[union-attr]
    created = _events(kube, f"involvedObject.name={rs_name}", "reason=SuccessfulCreate")
    assert len(created) == 3
    assert all(str(e["message"]).startswith(f"Created pod: {rs_name}-") for e in created)
    pod = str(created[0]["message"]).removeprefix("Created pod: ")

    def pod_described() -> str:
        out = kube("describe", "pod", pod, "-n", "default")
        return out if "Scheduled" in out else ""

    pod_out = eventually(
        pod_described, timeout=30, interval=0.1, message="describe pod lists Scheduled"
    )
    assert re.search(
        rf"Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully assigned default/{pod} to ",
        pod_out,
    ), pod_out

    table = kube("get", "events", "-n", "default", "--field-selector", "type=Normal")
    header = table.splitlines()[0].split()
    assert header == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert re.search(r"Normal\s+ScalingReplicaSet\s+deployment/web\s+Scaled up", table), table
    assert _events(kube, "type=Warning") == []

    # `kubectl events --for` (1.26+) asks by involvedObject kind and name.
    out = kube("events", "-n", "default", "--for", "deployment/web")
    assert re.search(r"Normal\s+ScalingReplicaSet\s+Deployment/web\s+Scaled up", out), out
