"""Patch engine throughput on the W10k Deployment (the W10k workload of workload.py), one core.

- three-way patch creation for a changed manifest (new image, new env value, one more
  replica) against a live object carrying server defaults, status and managedFields;
- strategic apply of that patch to the live object;
- the no-op re-sync: desired == last-applied, live object defaulted by the server.

Run: .venv/bin/python -m benchmarks.bench_patch
"""

from __future__ import annotations

import copy
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate

from benchmarks.workload import deployment
from gitkrm.patch import PatchMeta, apply_strategic_merge_patch, create_three_way_merge_patch

OBJECTS = 2000
RUNS = 7
DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"


def deployment_meta() -> PatchMeta:
    path = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / "v1.33.0-local"
        / "_definitions.json"
    )
    return PatchMeta.from_openapi(json.loads(path.read_text())["$defs"], DEPLOYMENT)


def live(desired: dict[str, Any], i: int) -> dict[str, Any]:
    """`desired` as the API server returns it: defaults, status and managedFields."""
    obj = copy.deepcopy(desired)
    md = obj["metadata"]
    md.update(
        uid=f"6f1c3a52-{i:08d}",
        resourceVersion=str(1000 + i),
        generation=1,
        creationTimestamp="2024-05-01T10:00:00Z",
        annotations={
            "deployment.kubernetes.io/revision": "1",
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(desired),
        },
        managedFields=[
            {
                "manager": "gitkrm",
                "operation": "Update",
                "apiVersion": "apps/v1",
                "time": "2024-05-01T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}},
            },
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "apps/v1",
                "subresource": "status",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {"f:replicas": {}}},
            },
        ],
    )
    spec = obj["spec"]
    spec.update(
        revisionHistoryLimit=10,
        progressDeadlineSeconds=600,
        strategy={
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
        },
    )
    template = spec["template"]
    template["metadata"]["creationTimestamp"] = None
    pod = template["spec"]
    pod.update(
        restartPolicy="Always",
        terminationGracePeriodSeconds=30,
        dnsPolicy="ClusterFirst",
        schedulerName="default-scheduler",
        securityContext={},
    )
    for c in pod["containers"]:
        c.update(
            imagePullPolicy="IfNotPresent",
            terminationMessagePath="/dev/termination-log",
            terminationMessagePolicy="File",
        )
        for p in c["ports"]:
            p["protocol"] = "TCP"
    obj["status"] = {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "lastUpdateTime": "2024-05-01T10:00:05Z",
                "lastTransitionTime": "2024-05-01T10:00:05Z",
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable",
                "lastUpdateTime": "2024-05-01T10:00:05Z",
                "lastTransitionTime": "2024-05-01T10:00:01Z",
            },
        ],
    }
    return obj


def changed(desired: dict[str, Any], i: int) -> dict[str, Any]:
    new = copy.deepcopy(desired)
    new["spec"]["replicas"] = 4
    c = new["spec"]["template"]["spec"]["containers"][0]
    c["image"] = f"nginx:2.{i % 30}"
    c["env"][0]["value"] = "staging"
    return new


def rate(fn: Callable[[], None], count: int) -> float:
    """Median objects/s over RUNS runs of `fn` (which handles `count` objects), in CPU
    time of this process, so other work on the machine does not count against it."""
    fn()
    times = []
    for _ in range(RUNS):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return count / statistics.median(times)


def report(name: str, value: float, target: float) -> None:
    ok = "ok" if value >= target else "BELOW TARGET"
    print(f"{name:<34}{value:>10,.0f} objects/s  (target >= {target:,.0f})  {ok}")


def main() -> None:
    meta = deployment_meta()
    desired = [deployment(i) for i in range(OBJECTS)]
    lives = [live(d, i) for i, d in enumerate(desired)]
    news = [changed(d, i) for i, d in enumerate(desired)]
    cases = list(zip(desired, news, lives, strict=True))
    patches = [create_three_way_merge_patch(o, m, c, meta) for o, m, c in cases]
    assert all(patches), "the changed manifests must give non-empty patches"
    noop = [
        create_three_way_merge_patch(d, d, c, meta) for d, c in zip(desired, lives, strict=True)
    ]
    assert not any(noop), "an unchanged manifest must give an empty patch"

    def three_way() -> None:
        for o, m, c in cases:
            create_three_way_merge_patch(o, m, c, meta)

    def apply() -> None:
        for c, p in zip(lives, patches, strict=True):
            apply_strategic_merge_patch(c, p, meta)

    def no_op() -> None:
        for d, c in zip(desired, lives, strict=True):
            create_three_way_merge_patch(d, d, c, meta)

    report("patch.three_way_deployment", rate(three_way, OBJECTS), 10_000)
    report("patch.strategic_apply_deployment", rate(apply, OBJECTS), 10_000)
    report("patch.noop_resync_deployment", rate(no_op, OBJECTS), 20_000)


if __name__ == "__main__":
    main()
