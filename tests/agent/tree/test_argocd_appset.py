"""An ApplicationSet read as a child source (`argocd_appset`): the clusters generator over
Argo CD's cluster Secrets, in the shape fleet repositories use (a Secret per cluster,
labelled for the ApplicationSets that select it)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from gitkrm.agent.tree.argocd_appset import INTERPRETER, GeneratedApplications
from gitkrm.agent.tree.argocd_appset_gen import Cluster, applications
from gitkrm.errors import BadRequest

from .flux_objects import Objects
from .test_argocd import parent


def cluster_secret(name: str, server: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": "argocd",
            "labels": {"argocd.argoproj.io/secret-type": "cluster", **labels},
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in
                 {"name": name, "server": server, "config": "{}"}.items()},
    }  # fmt: skip


def appset(selector: dict[str, Any] | None = None) -> dict[str, Any]:
    clusters = {"selector": selector} if selector else {}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "guestbook", "namespace": "argocd"},
        "spec": {
            "generators": [{"clusters": clusters}],
            "template": {
                "metadata": {"name": "{{name}}-guestbook",
                             "labels": {"env": "{{metadata.labels.env}}"}},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "https://github.com/example/fleet", "path": "guestbook"},
                    "destination": {"server": "{{server}}", "namespace": "guestbook"},
                },
            },
        },
    }  # fmt: skip


async def generated(obj: dict[str, Any], *objs: dict[str, Any]) -> list[dict[str, Any]]:
    spec = await INTERPRETER.child(obj, Objects(parent(), *objs))
    gen = spec.config.generator
    assert isinstance(gen, GeneratedApplications)
    clusters = [Cluster(**c) for c in orjson.loads(gen.clusters_json)]

    def fail(field: str, message: str) -> Exception:
        return BadRequest(f"{field}: {message}")

    return applications(
        orjson.loads(gen.spec_json), name="guestbook", namespace="argocd", snapshot=None,
        fail=fail, clusters=clusters,
    )  # fmt: skip


async def test_the_clusters_generator_reads_argo_cds_cluster_secrets() -> None:
    prod = cluster_secret("prod", "https://prod.example.org:6443", env="prod")
    staging = cluster_secret("staging", "https://staging.example.org:6443", env="staging")
    made = await generated(appset(), prod, staging)
    assert [a["metadata"]["name"] for a in made] == [
        "in-cluster-guestbook", "prod-guestbook", "staging-guestbook",
    ]  # fmt: skip
    assert made[1]["spec"]["destination"]["server"] == "https://prod.example.org:6443"
    assert made[1]["metadata"]["labels"] == {"env": "prod"}
    # a selector matches the Secrets' labels; the local cluster has none
    only = await generated(appset({"matchLabels": {"env": "prod"}}), prod, staging)
    assert [a["metadata"]["name"] for a in only] == ["prod-guestbook"]
    expr = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["staging"]}]}
    assert [a["metadata"]["name"] for a in await generated(appset(expr), prod, staging)] == [
        "staging-guestbook"
    ]


async def test_a_secret_for_the_local_cluster_gives_it_labels() -> None:
    local = cluster_secret("in-cluster", "https://kubernetes.default.svc", bgd="dev")
    spec = await INTERPRETER.child(appset(), Objects(parent(), local))
    assert [r.name for r in spec.reads] == ["cluster-in-cluster"]  # its change re-reads
    made = await generated(appset({"matchLabels": {"bgd": "dev"}}), local)
    assert [a["metadata"]["name"] for a in made] == ["in-cluster-guestbook"]
    assert made[0]["spec"]["destination"]["server"] == "https://kubernetes.default.svc"


async def test_kept_fields_become_ignored_differences_of_the_applications() -> None:
    obj = appset()
    obj["spec"]["preservedFields"] = {"annotations": ["example.test/owner"], "labels": ["tier"]}
    obj["spec"]["ignoreApplicationDifferences"] = [
        {"jsonPointers": ["/spec/syncPolicy"]},
        {"name": "web-guestbook", "jsonPointers": ["/spec/source/targetRevision"]},
    ]
    spec = await INTERPRETER.child(obj, Objects(parent()))
    got = [(i.kind, i.name, i.namespace, i.json_pointers) for i in spec.config.ignore_differences]
    assert got == [
        ("Application", None, "argocd", ("/spec/syncPolicy",)),
        ("Application", "web-guestbook", "argocd", ("/spec/source/targetRevision",)),
        ("Application", None, "argocd",
         ("/metadata/annotations/example.test~1owner", "/metadata/labels/tier")),
    ]  # fmt: skip
    assert not [u for u in spec.unhonoured if "preservedFields" in u.field]
    obj["spec"]["ignoreApplicationDifferences"] = [{"jqPathExpressions": [".spec.source"]}]
    with pytest.raises(BadRequest, match=r"ignoreApplicationDifferences\[0\]\.jqPathExpressions"):
        await INTERPRETER.child(obj, Objects(parent()))


@pytest.mark.parametrize(
    ("policy", "prune", "updates"),
    [("sync", True, True), ("create-update", False, True), ("create-delete", True, False),
     ("create-only", False, False)],
)  # fmt: skip
async def test_applications_sync_policies(policy: str, prune: bool, updates: bool) -> None:
    obj = appset()
    obj["spec"]["syncPolicy"] = {"applicationsSync": policy}
    spec = await INTERPRETER.child(obj, Objects(parent()))
    assert spec.config.prune is prune
    whole = [i for i in spec.config.ignore_differences if "/spec" in i.json_pointers]
    assert bool(whole) is not updates
    assert not [u for u in spec.unhonoured if "applicationsSync" in u.field]


async def test_an_unknown_applications_sync_policy_is_an_error() -> None:
    obj = appset()
    obj["spec"]["syncPolicy"] = {"applicationsSync": "create-maybe"}
    with pytest.raises(BadRequest, match=r"applicationsSync: 'create-maybe': one of sync, "):
        await INTERPRETER.child(obj, Objects(parent()))
