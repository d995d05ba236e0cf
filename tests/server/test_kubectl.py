"""The real kubectl (1.32) against a real gitkrm API server on loopback: the commands of
issue 7's proof list that need no controllers (rollout status and the completion of a
cascading delete wait for the controllers)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence

import yaml

from gitkrm.server import ServerThread
from gitkrm.store.sqlite import SqliteStore
from tests.server.conftest import Kubectl, Lines, wait_for
from tests.support import builders
from tests.support.builders import crd
from tests.support.manifests import yaml_text


def _gadget_crd() -> str:
    """Gadget: a short name, a scale subresource, printer columns and a described field."""
    obj = crd(
        "Gadget",
        "kubectl.example.com",
        short_names=["gd"],
        spec={
            "color": {"type": "string", "description": "The color of the gadget."},
            "size": {"type": "integer"},
        },
        status={"size": {"type": "integer"}},
    )
    version = obj["spec"]["versions"][0]
    version["subresources"]["scale"] = {
        "specReplicasPath": ".spec.size",
        "statusReplicasPath": ".status.size",
    }
    version["additionalPrinterColumns"] = [
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    ]
    return yaml.safe_dump(obj, sort_keys=False)


CRD = _gadget_crd()


MODE_PROD = {"name": "MODE", "value": "prod"}


def deployment(
    ns: str, *, replicas: int = 2, env: Sequence[Mapping[str, str]] = (MODE_PROD,)
) -> str:
    obj = builders.deployment(
        "web", ns, replicas=replicas, labels={"tier": "front"}, container="web", image="nginx:1.25"
    )
    obj["spec"]["template"]["spec"]["containers"][0]["env"] = [dict(e) for e in env]
    return yaml_text(obj)


def header(table: str) -> list[str]:
    return re.split(r"\s{2,}", table.splitlines()[0].strip())


def test_api_resources_lists_builtin_kinds(kubectl: Kubectl) -> None:
    out = kubectl("api-resources")
    assert header(out) == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert rows["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert "customresourcedefinitions" in rows


def test_create_namespace_configmap_and_secret(kubectl: Kubectl) -> None:
    # kubectl 1.32 sends these as protobuf.
    assert kubectl("create", "namespace", "made") == "namespace/made created\n"
    kubectl("create", "configmap", "cfg", "-n", "made", "--from-literal=a=1", "--from-literal=b=2")
    kubectl("create", "secret", "generic", "pw", "-n", "made", "--from-literal=password=s3cr3t")
    cm = json.loads(kubectl("get", "configmap", "cfg", "-n", "made", "-o", "json"))
    assert cm["data"] == {"a": "1", "b": "2"}
    secret = json.loads(kubectl("get", "secret", "pw", "-n", "made", "-o", "json"))
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"password": "czNjcjN0"}
    ns = json.loads(kubectl("get", "namespace", "made", "-o", "json"))
    assert ns["status"]["phase"] == "Active"
    assert kubectl("get", "namespace", "made").split("\n")[1].split()[:2] == ["made", "Active"]


def test_create_generators_for_other_kinds(kubectl: Kubectl, ns: str) -> None:
    kubectl("create", "deployment", "gen", "-n", ns, "--image=nginx", "--replicas=0", "--port=80")
    kubectl("create", "service", "nodeport", "gen", "-n", ns, "--tcp=81:8081", "--node-port=30010")
    kubectl("create", "job", "gen", "-n", ns, "--image=busybox", "--", "echo", "hi")
    kubectl("create", "cronjob", "gen", "-n", ns, "--image=busybox", "--schedule=*/5 * * * *")
    kubectl("create", "priorityclass", "gen-low", "--value=0")
    kubectl("create", "rolebinding", "gen", "-n", ns, "--clusterrole=view", "--user=bob")
    kubectl("run", "gen", "-n", ns, "--image=nginx", "--env=A=B", "--restart=Never")
    dep = json.loads(kubectl("get", "deploy", "gen", "-n", ns, "-o", "json"))
    assert dep["spec"]["replicas"] == 0  # an explicit zero survives protobuf decoding
    ports = dep["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "protocol": "TCP"}]
    svc = json.loads(kubectl("get", "svc", "gen", "-n", ns, "-o", "json"))
    assert svc["spec"]["ports"][0] == {
        "name": "81-8081",
        "nodePort": 30010,
        "port": 81,
        "protocol": "TCP",
        "targetPort": 8081,
    }
    pc = json.loads(kubectl("get", "priorityclass", "gen-low", "-o", "json"))
    assert pc["value"] == 0
    pod = json.loads(kubectl("get", "pod", "gen", "-n", ns, "-o", "json"))
    assert pod["spec"]["containers"][0]["env"] == [{"name": "A", "value": "B"}]
    rb = json.loads(kubectl("get", "rolebinding", "gen", "-n", ns, "-o", "json"))
    assert rb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "view",
    }


def test_apply_created_unchanged_configured_and_removed_fields(kubectl: Kubectl, ns: str) -> None:
    manifest = deployment(ns, env=[MODE_PROD, {"name": "DEBUG", "value": "1"}])
    assert kubectl("apply", "-f", "-", input=manifest) == "deployment.apps/web created\n"
    assert kubectl("apply", "-f", "-", input=manifest) == "deployment.apps/web unchanged\n"
    changed = deployment(ns, replicas=3)  # DEBUG removed from the file
    assert kubectl("apply", "-f", "-", input=changed) == "deployment.apps/web configured\n"
    obj = json.loads(kubectl("get", "deployment", "web", "-n", ns, "-o", "json"))
    assert obj["spec"]["replicas"] == 3
    assert obj["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "MODE", "value": "prod"}
    ]
    assert obj["metadata"]["generation"] == 2


def test_get_output_formats_and_selectors(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", input=deployment(ns))
    for name, tier in (("blue", "a"), ("green", "b")):
        kubectl("create", "configmap", name, "-n", ns, f"--from-literal=k={name}")
        kubectl("label", "configmap", name, "-n", ns, f"tier={tier}")
    table = kubectl("get", "deployments", "-n", ns)
    assert header(table) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table.splitlines()[1].split()[:4] == ["web", "0/2", "0", "0"]
    wide = kubectl("get", "deployment", "web", "-n", ns, "-o", "wide")
    assert header(wide)[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide.splitlines()[1].split()[-3:] == ["web", "nginx:1.25", "app=web"]
    assert (
        yaml.safe_load(kubectl("get", "deploy", "web", "-n", ns, "-o", "yaml"))["kind"]
        == "Deployment"
    )
    assert json.loads(kubectl("get", "deploy", "-n", ns, "-o", "json"))["kind"] == "List"
    assert kubectl("get", "deploy", "-n", ns, "-o", "name") == "deployment.apps/web\n"
    assert kubectl("get", "cm", "-n", ns, "-l", "tier=b", "-o", "name") == "configmap/green\n"
    by_field = kubectl(
        "get", "cm", "-n", ns, "--field-selector", "metadata.name=blue", "-o", "name"
    )
    assert by_field == "configmap/blue\n"
    every = kubectl("get", "configmaps", "-A")
    assert header(every) == ["NAMESPACE", "NAME", "DATA", "AGE"]
    assert any(line.split()[:3] == [ns, "blue", "1"] for line in every.splitlines())


def test_get_watch_receives_change_made_by_another_command(kubectl: Kubectl, ns: str) -> None:
    kubectl("create", "configmap", "watched", "-n", ns, "--from-literal=a=b")
    proc = kubectl.popen("get", "configmap", "watched", "-n", ns, "--watch")
    out = Lines(proc)
    try:
        # the NAME/DATA/AGE header and the current row, then the change
        lines = out.wait(lambda ls: len(ls) >= 2)
        assert lines[1].split()[:2] == ["watched", "1"]
        kubectl(
            "patch", "configmap", "watched", "-n", ns, "--type=merge", "-p", '{"data":{"c":"d"}}'
        )
        lines = out.wait(lambda ls: len(ls) >= 3)
        assert lines[2].split()[:2] == ["watched", "2"]
    finally:
        out.stop(proc)


def test_diff_exit_codes(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", input=deployment(ns, replicas=2))
    same = kubectl.run("diff", "-f", "-", input=deployment(ns, replicas=2), check=False)
    assert same.returncode == 0, same.stderr
    assert same.stdout == ""
    other = kubectl.run("diff", "-f", "-", input=deployment(ns, replicas=5), check=False)
    assert other.returncode == 1, other.stderr
    assert "-  replicas: 2" in other.stdout
    assert "+  replicas: 5" in other.stdout
    # a server-side dry run: nothing was written
    assert (
        json.loads(kubectl("get", "deploy", "web", "-n", ns, "-o", "json"))["spec"]["replicas"] == 2
    )


def test_label_annotate_and_the_three_patch_types(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", input=deployment(ns))
    assert (
        kubectl("label", "deploy", "web", "-n", ns, "team=blue") == "deployment.apps/web labeled\n"
    )
    kubectl("annotate", "deploy", "web", "-n", ns, "owner=ops")
    kubectl("patch", "deploy", "web", "-n", ns, "-p", '{"spec":{"minReadySeconds":5}}')
    kubectl("patch", "deploy", "web", "-n", ns, "--type=merge", "-p", '{"spec":{"paused":true}}')
    kubectl(
        "patch",
        "deploy",
        "web",
        "-n",
        ns,
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/revisionHistoryLimit","value":3}]',
    )
    obj = json.loads(kubectl("get", "deploy", "web", "-n", ns, "-o", "json"))
    assert obj["metadata"]["labels"]["team"] == "blue"
    assert obj["metadata"]["annotations"]["owner"] == "ops"
    assert obj["spec"]["minReadySeconds"] == 5
    assert obj["spec"]["paused"] is True
    assert obj["spec"]["revisionHistoryLimit"] == 3
    kubectl("label", "deploy", "web", "-n", ns, "team-")
    obj = json.loads(kubectl("get", "deploy", "web", "-n", ns, "-o", "json"))
    assert "team" not in obj["metadata"]["labels"]


def test_scale_and_edit(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", input=deployment(ns))
    assert (
        kubectl("scale", "deploy", "web", "-n", ns, "--replicas=4")
        == "deployment.apps/web scaled\n"
    )
    assert kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}") == "4"
    failed = kubectl.run(
        "scale", "deploy", "web", "-n", ns, "--current-replicas=9", "--replicas=1", check=False
    )
    assert failed.returncode != 0
    editor = "sed -i -e 's/replicas: 4/replicas: 6/'"
    proc = kubectl.run(
        "edit", "deploy", "web", "-n", ns, env={"EDITOR": editor, "KUBE_EDITOR": editor}
    )
    assert proc.stdout == "deployment.apps/web edited\n", proc.stderr
    assert kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}") == "6"


def test_explain_reads_openapi_v3(kubectl: Kubectl) -> None:
    out = kubectl("explain", "deployment.spec.replicas")
    assert "KIND:       Deployment" in out
    assert "FIELD: replicas <integer>" in out
    assert "Number of desired pods" in out
    fields = kubectl("explain", "pods.spec.containers")
    assert "imagePullPolicy\t<string>" in fields


def test_field_validation_strict_warn_and_ignore(kubectl: Kubectl, ns: str) -> None:
    bad = (
        deployment(ns)
        .replace("name: web\n", "name: strict\n", 1)
        .replace("  replicas:", "  bogus: 1\n  replicas:")
    )
    strict = kubectl.run("apply", "-f", "-", input=bad, check=False)
    assert strict.returncode == 1
    assert 'strict decoding error: unknown field "spec.bogus"' in strict.stderr
    warn = kubectl.run("apply", "--validate=warn", "-f", "-", input=bad)
    assert 'Warning: unknown field "spec.bogus"' in warn.stderr
    ignore = kubectl.run("apply", "--validate=false", "-f", "-", input=bad)
    assert "Warning" not in ignore.stderr
    stored = json.loads(kubectl("get", "deploy", "strict", "-n", ns, "-o", "json"))
    assert "bogus" not in stored["spec"]


def test_delete_wait_and_cascade_options(kubectl: Kubectl, ns: str) -> None:
    for name in ("gone", "fg", "orph"):
        kubectl("create", "configmap", name, "-n", ns)
    assert (
        kubectl("delete", "configmap", "gone", "-n", ns, "--wait") == 'configmap "gone" deleted\n'
    )
    missing = kubectl.run("get", "configmap", "gone", "-n", ns, check=False)
    assert missing.returncode == 1
    assert "NotFound" in missing.stderr
    # Without controllers nobody removes the finalizers the policies record; the garbage
    # collector (controllers issue) completes these deletions.
    kubectl("delete", "configmap", "fg", "-n", ns, "--cascade=foreground", "--wait=false")
    kubectl("delete", "configmap", "orph", "-n", ns, "--cascade=orphan", "--wait=false")
    fg = json.loads(kubectl("get", "configmap", "fg", "-n", ns, "-o", "json"))
    assert fg["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert fg["metadata"]["deletionTimestamp"]
    orph = json.loads(kubectl("get", "configmap", "orph", "-n", ns, "-o", "json"))
    assert orph["metadata"]["finalizers"] == ["orphan"]


def test_crd_then_custom_resource(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", input=CRD)
    kubectl(
        "wait", "--for=condition=established", "crd/gadgets.kubectl.example.com", "--timeout=10s"
    )
    rows = {line.split()[0]: line.split() for line in kubectl("api-resources").splitlines()[1:]}
    assert rows["gadgets"] == ["gadgets", "gd", "kubectl.example.com/v1", "true", "Gadget"]
    cr = (
        "apiVersion: kubectl.example.com/v1\nkind: Gadget\n"
        f"metadata: {{name: g1, namespace: {ns}}}\nspec: {{color: red, size: 2}}\n"
    )
    assert kubectl("apply", "-f", "-", input=cr) == "gadget.kubectl.example.com/g1 created\n"
    assert kubectl("apply", "-f", "-", input=cr) == "gadget.kubectl.example.com/g1 unchanged\n"
    table = kubectl("get", "gadgets", "-n", ns)
    assert header(table) == ["NAME", "COLOR", "SIZE"]
    assert table.splitlines()[1].split() == ["g1", "red", "2"]
    kubectl("scale", "gadget", "g1", "-n", ns, "--replicas=7")
    assert kubectl("get", "gd", "g1", "-n", ns, "-o", "jsonpath={.spec.size}") == "7"
    kubectl("patch", "gd", "g1", "-n", ns, "--type=merge", "-p", '{"spec":{"color":"blue"}}')
    strategic = kubectl.run(
        "patch", "gd", "g1", "-n", ns, "-p", '{"spec":{"color":"x"}}', check=False
    )
    assert strategic.returncode == 1
    assert "strategic-merge-patch+json is not supported" in strategic.stderr
    explained = kubectl("explain", "gadget.spec.color")
    assert "The color of the gadget." in explained
    assert kubectl("get", "crd", "gadgets.kubectl.example.com").splitlines()[0].split() == [
        "NAME",
        "CREATED",
        "AT",
    ]


def test_errors_read_like_a_cluster(kubectl: Kubectl, ns: str) -> None:
    missing = kubectl.run("get", "deployment", "nope", "-n", ns, check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        'Error from server (NotFound): deployments.apps "nope" not found'
    )
    kubectl("create", "configmap", "dup", "-n", ns)
    dup = kubectl.run("create", "configmap", "dup", "-n", ns, check=False)
    assert dup.stderr == 'error: failed to create configmap: configmaps "dup" already exists\n'
    applied = kubectl.run(
        "create",
        "-f",
        "-",
        input=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: dup, namespace: {ns}}}\n",
        check=False,
    )
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": '
        'configmaps "dup" already exists' in applied.stderr
    )


async def _watchers(store: SqliteStore) -> int:
    return store.watcher_count


def test_watch_with_events_shows_changes_in_order(
    kubectl: Kubectl, ns: str, api: ServerThread
) -> None:
    before = api.run(_watchers)
    proc = kubectl.popen(
        "get", "configmaps", "-n", ns, "-w", "--output-watch-events", "--watch-only"
    )
    out = Lines(proc)
    try:
        wait_for(lambda: api.run(_watchers) > before, timeout=15)
        kubectl("create", "configmap", "evt", "-n", ns)
        kubectl("delete", "configmap", "evt", "-n", ns)
        seen = out.wait(lambda ls: sum(1 for s in ls if s.split()[1:2] == ["evt"]) >= 2)
        events = [s.split()[0] for s in seen if "evt" in s]
        assert events[:2] == ["ADDED", "DELETED"]
    finally:
        out.stop(proc)


def test_kubectl_cache_isolated(kubectl: Kubectl) -> None:
    # sanity: the fixture's kubectl talks to this server only
    assert (
        "127.0.0.1"
        in subprocess.run(
            [str(kubectl.binary), "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"],
            capture_output=True,
            text=True,
            env={"KUBECONFIG": str(kubectl.kubeconfig), "HOME": str(kubectl.home)},
            check=True,
        ).stdout
    )
