"""A ReplicaSet whose pods an admission policy denies: its ReplicaFailure condition names
the policy once, and its retries back off instead of rewriting the condition (each rewrite
would queue the ReplicaSet again at once: a busy loop for as long as the policy stands)."""

from __future__ import annotations

from gitkrm.krm import Obj
from gitkrm.krm.conditions import get_condition
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import Start, failing_replica_set, get, wait_until
from tests.support.builders import deployment

POLICY: Obj = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "pinned-images"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                }
            ]
        },
        "validations": [
            {
                "expression": "object.spec.containers.all(c, !c.image.endsWith(':latest'))",
                "message": "images must be pinned",
            }
        ],
    },
}
BINDING: Obj = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "pinned-images"},
    "spec": {"policyName": "pinned-images", "validationActions": ["Deny"]},
}


async def test_denied_pods_back_off_without_rewriting_the_condition(
    store: SqliteStore, start: Start
) -> None:
    await store.create(POLICY)
    await store.create(BINDING)
    manager = await start()
    await store.create(deployment("web", replicas=2, image="nginx:latest"))

    rs = await wait_until(lambda: failing_replica_set(store), what="a ReplicaFailure condition")
    cond = get_condition(rs, "ReplicaFailure")
    assert cond is not None
    assert cond.get("reason") == "FailedCreate"
    assert "ValidatingAdmissionPolicy 'pinned-images'" in str(cond.get("message"))
    assert "images must be pinned" in str(cond.get("message"))
    name = rs["metadata"]["name"]
    seen = rs["metadata"]["resourceVersion"]
    queue = manager.controller("replicaset").queue
    key = ("default", name)
    tried = queue.failures(key)
    await wait_until(lambda: queue.failures(key) >= tried + 4, what="four more failed creates")
    again = await get(store, "ReplicaSet", name, group="apps")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == seen
