"""`gitkrm run --apply-mode server-side` twice and `gitkrm diff --apply-mode server-side`
with the real CLI over manifests that leave out what the server defaults (#22): the
second run changes nothing and diff says in sync; an object kubectl applied client-side
keeps its last-applied annotation (owned by kubectl-client-side-apply) through a
server-side sync that adopts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import gitkrm, reading, writing
from tests.source.source_gitrepo import RemoteRepo
from tests.support.builders import crd

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

MANIFESTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - name: POD
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        resources: {}
status: {}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
"""

GADGET_CRD = crd(
    "Gadget",
    status_subresource=False,
    spec={
        "size": {"type": "integer", "default": 3},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {
                "type": "object",
                "properties": {
                    "port": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"},
                },
            },
        },
    },
)

MANIFESTS += yaml.safe_dump(GADGET_CRD, sort_keys=False)
MANIFESTS += """\
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g, namespace: default}
spec:
  ports: [{port: 80}]
"""

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")


async def get(state: Path, ref: ObjectRef) -> dict[str, Any]:
    async with reading(state) as store:
        return await store.get(ref)


async def test_a_second_server_side_run_changes_nothing(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    flags = ("--repo", repo.url, "--state", str(state), "--apply-mode", "server-side")
    repo.write("app.yaml", MANIFESTS)
    repo.commit("app")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "4 created" in res.stdout, res.stdout
    first = await get(state, WEB)
    diff = gitkrm("diff", *flags, cwd=tmp_path)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert " 0 configured" in res.stdout, res.stdout
    again = await get(state, WEB)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # A commit next to them: every object is planned again, and found unchanged.
    repo.write("more.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more}\n")
    repo.commit("more")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert "1 created, 0 configured, 0 pruned, 4 unchanged" in res.stdout, res.stdout
    assert gitkrm("diff", *flags, cwd=tmp_path).returncode == 0


async def test_a_server_side_sync_keeps_another_managers_annotation(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    """Someone `kubectl apply`s (client-side) an object gitkrm syncs server-side: the
    last-applied annotation is kubectl-client-side-apply's, and gitkrm's next syncs
    leave it where it is (they neither own nor set it)."""
    flags = ("--repo", repo.url, "--state", str(state), "--apply-mode", "server-side")
    doc = MANIFESTS.split("---\n")[0]
    repo.write("app.yaml", doc)
    repo.commit("app")
    repo.push()
    assert gitkrm("run", "--once", *flags, cwd=tmp_path).returncode == 0
    async with writing(state) as store:
        live = await store.get(WEB)
        note = json.dumps(yaml.safe_load(doc), separators=(",", ":"))
        live["metadata"]["annotations"][LAST_APPLIED] = note
        await store.update(live, field_manager="kubectl-client-side-apply")
    repo.write("app.yaml", doc.replace("replicas: 2", "replicas: 3"))
    repo.commit("three")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert " 1 configured" in res.stdout, res.stdout
    after = await get(state, WEB)
    assert after["spec"]["replicas"] == 3
    assert after["metadata"]["annotations"][LAST_APPLIED] == note
    assert gitkrm("diff", *flags, cwd=tmp_path).returncode == 0
