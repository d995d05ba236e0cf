"""Argo CD Applications over jsonnet directories, through the real CLI on a real bare
repository (the shape of Argo CD's jsonnet examples, written here): a file importing its
params, and a function of top-level arguments the Application gives, with a library path
outside the source path."""

from __future__ import annotations

import json
from pathlib import Path

from gitkrm.krm import GVK
from tests.e2e.argocd_apps import application, write_bootstrap
from tests.e2e.e2e_support import reading, run_bootstrap
from tests.source.source_gitrepo import RemoteRepo

DEPLOYMENTS = GVK(group="apps", version="v1", kind="Deployment")

UI = """\
local params = import 'params.libsonnet';
[
  { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: params.name },
    spec: { replicas: params.replicas, selector: { matchLabels: { app: params.name } },
            template: { metadata: { labels: { app: params.name } },
                        spec: { containers: [{ name: 'ui', image: params.image }] } } } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: params.name },
    spec: { ports: [{ port: 80 }], selector: { app: params.name } } },
]
"""
TLA = """\
local ui = import 'ui.libsonnet';
function(name='jsonnet-tla', replicas=1) ui.deployment(name, replicas)
"""
LIB = """\
{ deployment(name, replicas): { apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: name }, spec: { replicas: replicas,
  selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } },
  spec: { containers: [{ name: 'ui', image: 'example.test/ui:1' }] } } } } }
"""


async def replicas(state: Path, ns: str) -> dict[str, int]:
    async with reading(state) as store:
        items = (await store.list(DEPLOYMENTS, namespace=ns))["items"]
    return {d["metadata"]["name"]: d["spec"]["replicas"] for d in items}


async def test_jsonnet_directories_render_as_argo_cd_renders_them(
    repo: RemoteRepo, state: Path
) -> None:
    write_bootstrap(repo)
    repo.write("apps/plain.yaml", application("plain", repo.url, "jsonnet-ui", dest="plain"))
    tlas = {"tlas": [{"name": "name", "value": "sized"},
                     {"name": "replicas", "value": "3", "code": True}],
            "libs": ["lib"]}  # fmt: skip
    repo.write("apps/tla.yaml", application("tla", repo.url, "jsonnet-tla", dest="tla",
                                            directory={"jsonnet": tlas}))  # fmt: skip
    repo.write("jsonnet-ui/ui.jsonnet", UI)
    params = {"name": "jsonnet-ui", "replicas": 2, "image": "example.test/ui:1"}
    repo.write("jsonnet-ui/params.libsonnet", json.dumps(params) + "\n")
    repo.write("jsonnet-tla/main.jsonnet", TLA)
    repo.write("lib/ui.libsonnet", LIB)
    repo.commit("jsonnet apps")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    assert await replicas(state, "plain") == {"jsonnet-ui": 2}
    assert await replicas(state, "tla") == {"sized": 3}
