"""kubectl as a user runs it day to day against `gitkrm serve` with its controllers, where
the twin used to differ from a 1.33 cluster: `auth can-i` / `whoami`, `rollout undo`,
`drain`, `debug`, and the commands that need a kubelet failing cleanly."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import Kubectl, kubectl_path
from tests.support.wait import eventually


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_auth_can_i_says_yes(
    version: str, kube: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No authorization: every access review is allowed (was a 404, read as "no")."""
    k = Kubectl(kubectl_path(version), kube.kubeconfig, tmp_path_factory.mktemp("home"))
    assert k("auth", "can-i", "create", "deployments") == "yes\n"
    assert k("auth", "can-i", "*", "*", "--all-namespaces") == "yes\n"
    assert k("auth", "can-i", "get", "/healthz") == "yes\n"
    rules = k("auth", "can-i", "--list").splitlines()
    assert rules[1].split() == ["*.*", "[]", "[]", "[*]"]
    assert "authorization.k8s.io/v1" in k("api-versions").split()


def test_whoami_and_subject_access_reviews(kube: Kubectl) -> None:
    who = kube("auth", "whoami", "-o", "json")
    assert json.loads(who)["status"]["userInfo"]["username"] == "gitkrm"
    sar = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    out = json.loads(kube("create", "-f", "-", "-o", "json", input=json.dumps(sar)))
    assert out["status"]["allowed"] is True
    assert out["spec"]["user"] == "bob"
    del sar["spec"]["user"]  # type: ignore[attr-defined]
    refused = kube.run("create", "-f", "-", input=json.dumps(sar), check=False)
    assert refused.returncode == 1
    assert "spec.user: Invalid value" in refused.stderr
    assert "at least one of user or group must be specified" in refused.stderr
    listed = kube.run("get", "subjectaccessreviews", check=False)
    assert listed.returncode == 1
    assert "MethodNotAllowed" in listed.stderr


def _revisions(kube: Kubectl) -> dict[str, tuple[str, str | None]]:
    """The web ReplicaSets: name -> revision and revision-history annotations."""
    items = json.loads(kube("get", "rs", "-l", "app=web", "-o", "json"))["items"]
    notes = {rs["metadata"]["name"]: rs["metadata"]["annotations"] for rs in items}
    return {
        name: (
            n["deployment.kubernetes.io/revision"],
            n.get("deployment.kubernetes.io/revision-history"),
        )
        for name, n in notes.items()
    }


def test_rollout_undo_goes_back_to_the_old_replicaset(kube: Kubectl) -> None:
    kube("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    template = json.loads(kube("get", "deploy", "web", "-o", "json"))["spec"]["template"]
    assert "creationTimestamp" not in template["metadata"]  # protobuf's zero time: null
    kube("rollout", "status", "deploy/web", "--timeout=30s")
    (first,) = _revisions(kube)
    kube("set", "image", "deploy/web", "nginx=nginx:1.26")
    kube("rollout", "status", "deploy/web", "--timeout=30s")
    assert kube("rollout", "undo", "deploy/web") == "deployment.apps/web rolled back\n"
    kube("rollout", "status", "deploy/web", "--timeout=30s")
    revisions = _revisions(kube)
    assert len(revisions) == 2, revisions  # the first ReplicaSet again, no third one
    assert revisions[first] == ("3", "1")
    history = kube("rollout", "history", "deploy/web").split()
    assert history[history.index("CHANGE-CAUSE") + 1 :] == ["2", "<none>", "3", "<none>"]
    image = kube("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    assert image == "nginx:1.25"


def test_kubelet_commands_fail_cleanly_and_drain_deletes(kube: Kubectl) -> None:
    """No kubelet: logs, exec, port-forward and debug are Kubernetes-style errors (debug
    used to crash kubectl: a 404 without `details`); drain deletes the node's pods (its
    DeleteOptions come as protobuf)."""
    kube("run", "lone", "--image=nginx")
    kube("wait", "--for=condition=Ready", "pod/lone", "--timeout=30s")
    for args in (["logs", "lone"], ["exec", "lone", "--", "ls"]):
        r = kube.run(*args, check=False)
        assert (r.returncode, r.stderr) == (
            1,
            "Error from server (NotFound): the server could not find the requested resource\n",
        )
    r = kube.run("port-forward", "pod/lone", "0:80", check=False)
    assert r.returncode == 1
    assert "error upgrading connection" in r.stderr
    r = kube.run("debug", "lone", "--image=busybox", "--profile=general", check=False)
    assert r.returncode == 1, r.stderr
    assert "error: ephemeral containers are disabled for this cluster" in r.stderr
    assert "panic" not in r.stderr
    node = kube("get", "pod", "lone", "-o", "jsonpath={.spec.nodeName}")
    out = kube("drain", node, "--force", "--ignore-daemonsets", "--timeout=30s")
    assert f"node/{node} drained" in out
    eventually(
        lambda: kube.run("get", "pod", "lone", check=False).returncode == 1,
        timeout=10,
        message="pod/lone deleted by drain",
    )
    kube("uncordon", node)


def test_a_namespace_gets_its_default_service_account(kube: Kubectl) -> None:
    def accounts() -> list[str]:
        return kube("get", "sa", "-n", "team", "-o", "name").split()

    assert kube("create", "namespace", "team") == "namespace/team created\n"
    eventually(lambda: accounts() == ["serviceaccount/default"], timeout=10, message="default SA")
    kube("delete", "sa", "default", "-n", "team")
    eventually(lambda: accounts() == ["serviceaccount/default"], timeout=10, message="made again")
    kube("delete", "namespace", "team", "--timeout=30s")
    assert kube.run("get", "ns", "team", check=False).returncode == 1


def test_a_namespace_gets_its_root_ca_configmap(kube: Kubectl) -> None:
    def root_ca() -> dict[str, object] | None:
        r = kube.run("get", "cm", "kube-root-ca.crt", "-n", "pki", "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    kube("create", "namespace", "pki")
    eventually(lambda: root_ca() is not None, timeout=10, message="kube-root-ca.crt")
    cm = root_ca()
    assert cm is not None
    assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")  # type: ignore[index]
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith(  # type: ignore[index]
        "Contains a CA bundle that can be used to verify the kube-apiserver"
    )
    first = cm["data"]
    kube("patch", "cm", "kube-root-ca.crt", "-n", "pki", "-p", '{"data":{"ca.crt":"x"}}')
    eventually(lambda: (root_ca() or {}).get("data") == first, timeout=10, message="put back")
    kube("delete", "cm", "kube-root-ca.crt", "-n", "pki")
    eventually(lambda: (root_ca() or {}).get("data") == first, timeout=10, message="made again")
    kube("delete", "namespace", "pki", "--timeout=30s")


def test_kubectl_run_pod_gets_the_admission_defaults(kube: Kubectl) -> None:
    """ServiceAccount, DefaultTolerationSeconds and Priority admission, as on a cluster."""
    kube("run", "admitted", "--image=nginx:1.27", "--restart=Never")
    pod = json.loads(kube("get", "pod", "admitted", "-o", "json"))
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert [(t["key"], t["tolerationSeconds"]) for t in spec["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 300),
        ("node.kubernetes.io/unreachable", 300),
    ]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-")
    assert spec["containers"][0]["volumeMounts"] == [
        {
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "name": volume["name"],
            "readOnly": True,
        }
    ]
    # A Deployment's pod template is not admitted: it stays as written.
    kube("create", "deployment", "plain", "--image=nginx:1.27")
    template = json.loads(kube("get", "deploy", "plain", "-o", "json"))["spec"]["template"]
    assert "serviceAccountName" not in template["spec"]
    assert "tolerations" not in template["spec"]
    kube("delete", "pod", "admitted", "--wait=false")
    kube("delete", "deploy", "plain")
