"""The Helm chart, checked by Helm itself (helm-python-sdk): linted (strict) and rendered for
every documented value combination, its values against its schema, every `include` its
templates use, the reviewed renderings (current, valid to `gitkrm validate`, the expected
kinds), the CRD, the agent's arguments and its GitSource config; packaged, pushed to a
registry on loopback and pulled back."""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import pytest
import yaml

from gitkrm.agent.config_read import load_config_file
from gitkrm.agent.crd import SPEC_SCHEMA, gitsource_crd
from tests.support.registry import Registry

from .chart import (
    CHART,
    KUBE_VERSION,
    RENDERINGS,
    Manifest,
    Rendering,
    chart,
    load_yaml,
    notes,
    render,
    render_file,
    render_strict,
    values,
)

GITKRM = Path(sys.executable).parent / "gitkrm"

# What each reviewed rendering holds, kind by kind (the test's own reading of the values).
EXPECTED_KINDS: dict[str, Counter[str]] = {
    "default.yaml": Counter(
        ServiceAccount=1,
        ConfigMap=1,
        CustomResourceDefinition=1,
        ClusterRole=1,
        ClusterRoleBinding=1,
        Role=2,
        RoleBinding=2,
        Service=1,
        Deployment=1,
    ),
    "namespaced.yaml": Counter(
        Namespace=1,
        ServiceAccount=1,
        Secret=1,
        ConfigMap=1,
        ClusterRole=1,
        ClusterRoleBinding=1,
        Role=4,
        RoleBinding=4,
        Service=1,
        Deployment=1,
    ),
    "embedded.yaml": Counter(
        ServiceAccount=1,
        Secret=1,
        ConfigMap=1,
        PersistentVolumeClaim=1,
        Service=1,
        Deployment=1,
    ),
}
EXPECTED_KINDS["cluster-ha.yaml"] = EXPECTED_KINDS["default.yaml"]


def rendered(r: Rendering) -> list[Manifest]:
    return render(r.overrides(), release=r.release, namespace=r.namespace)


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return data


def one(manifests: list[Manifest], kind: str) -> dict[str, Any]:
    found = [m.obj for m in manifests if m.obj["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def container(manifests: list[Manifest]) -> dict[str, Any]:
    c: dict[str, Any] = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return c


# -- values and schema ---------------------------------------------------------------------


def test_the_schema_is_draft_07_and_values_yaml_passes_it() -> None:
    s = schema()
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(s)
    values()  # Helm checks values.yaml against it (HelmValuesError)


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_every_example_values_file_passes_the_schema(r: Rendering) -> None:
    values(r.overrides())  # raises HelmValuesError


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_helm_lint_strict_finds_nothing_to_fix(r: Rendering) -> None:
    """Strict lint: every `.Values` path a template reads exists, the YAML is well formed,
    the schema holds, for each documented combination."""
    report = helm_python.lint(
        CHART, r.overrides(), strict=True, namespace=r.namespace, kube_version=KUBE_VERSION
    )
    assert report["errors"] == []
    assert report["total_charts_linted"] == 1
    # Only the advice that a chart may have an icon (severity 1: info).
    assert [m["error"] for m in report["messages"] if m["severity"] > 1] == []


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_every_values_path_a_template_reads_exists(r: Rendering) -> None:
    """Rendered with missingkey=error: a `.Values` path missing from values.yaml fails."""
    strict = render_strict(r.overrides(), release=r.release, namespace=r.namespace)
    loose = chart().render(r.overrides(), name=r.release, namespace=r.namespace)
    assert strict == loose


def test_a_strict_render_catches_a_values_path_that_does_not_exist(tmp_path: Path) -> None:
    copy_ = Path(shutil.copytree(CHART, tmp_path / "gitkrm"))
    (copy_ / "templates" / "typo.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\n"
        "data:\n  x: {{ .Values.gitCredentials.usernme | quote }}\n"
    )
    with pytest.raises(helm_python.HelmRenderError, match='no entry for key "usernme"') as e:
        render_strict({}, release="gitkrm", namespace="gitkrm-system", path=copy_)
    assert "gitkrm/templates/typo.yaml:6" in str(e.value)


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"mode": "edge"}, "at '/mode': value must be one of 'cluster', 'embedded'"),
        ({"replicaCount": 3}, "at '/replicaCount': maximum: got 3, want 2"),
        ({"mode": "embedded", "replicaCount": 2}, "at '/replicaCount': value must be 1"),
        ({"replicas": 2}, "additional properties 'replicas' not allowed"),
        ({"sources": []}, "at '/sources': minItems: got 0, want 1"),
        ({"sources": [{"name": "Prod_1", "spec": {"url": "x"}}]}, "'Prod_1' does not match"),
        (
            {"sources": [{"name": "a", "spec": {"url": "x", "branch": "main"}}]},
            "at '/sources/0/spec': additional properties 'branch' not allowed",
        ),
        (
            {"sources": [{"name": "a", "spec": {"url": "x", "adoption": "maybe"}}]},
            "at '/sources/0/spec/adoption': value must be one of",
        ),
        ({"sources": [{"name": "a", "spec": {"path": "x"}}]}, "missing property 'url'"),
        ({"rbac": {"scope": "everywhere"}}, "at '/rbac/scope': value must be one of"),
        ({"rbac": {"verbs": ["get", "own"]}}, "at '/rbac/verbs/1': value must be one of"),
        ({"agent": {"interval": "soon"}}, "'soon' does not match pattern"),
        ({"resources": {"limits": {"memory": "lots"}}}, "'lots' does not match pattern"),
        ({"image": {"repository": ""}}, "at '/image/repository': minLength: got 0, want 1"),
        ({"gitCredentials": {"mountPath": "relative/dir"}}, "'relative/dir' does not match"),
    ],
)
def test_bad_values_are_refused_by_the_schema(override: dict[str, Any], complaint: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as e:
        values(override)
    assert complaint in str(e.value)
    # And Helm's render refuses them too, before any template runs.
    with pytest.raises(helm_python.HelmValuesError):
        render(override, release="gitkrm", namespace="gitkrm-system")


def _open_objects(schema: Any) -> Any:
    """The schema without the `additionalProperties: false` the chart adds to catch typos."""
    if isinstance(schema, dict):
        return {
            k: _open_objects(v)
            for k, v in schema.items()
            if not (k == "additionalProperties" and v is False)
        }
    if isinstance(schema, list):
        return [_open_objects(v) for v in schema]
    return schema


def test_the_schema_of_a_source_spec_is_the_crds() -> None:
    spec = schema()["properties"]["sources"]["items"]["properties"]["spec"]
    assert _open_objects(spec) == SPEC_SCHEMA
    assert spec["additionalProperties"] is False


# -- what the templates use ---------------------------------------------------------------

_HELPERS = "_helpers.tpl"


def template_files() -> list[Path]:
    return sorted(p for p in (CHART / "templates").iterdir() if p.is_file())


def test_every_include_names_a_define_of_the_helpers_and_every_define_is_used() -> None:
    helpers = (CHART / "templates" / _HELPERS).read_text()
    defined = set(re.findall(r'\{\{-?\s*define\s+"([^"]+)"', helpers))
    used: set[str] = set()
    for p in template_files():
        text = p.read_text()
        names = re.findall(r'(?:include|template)\s+"([^"]+)"', text)
        assert set(names) <= defined, f"{p.name}: {set(names) - defined} not defined"
        used.update(names)
        for f in re.findall(r'include\s+\(print\s+\$\.Template\.BasePath\s+"/([^"]+)"\)', text):
            assert (CHART / "templates" / f).is_file(), f"{p.name} includes {f}"
    assert defined - used == set(), "defines no template uses"


# -- the reviewed renderings ---------------------------------------------------------------


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_reviewed_rendering_is_current(r: Rendering) -> None:
    kept = (CHART / "rendered" / r.file).read_text()
    assert kept == render_file(r), (
        f"helm/gitkrm/rendered/{r.file} is stale: run `.venv/bin/python -m tests.helm.chart` "
        "and review the diff"
    )


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_rendering_holds_exactly_the_expected_kinds(r: Rendering) -> None:
    docs = [d for d in yaml.safe_load_all((CHART / "rendered" / r.file).read_text()) if d]
    assert Counter(d["kind"] for d in docs) == EXPECTED_KINDS[r.file]
    for d in docs:
        if d["kind"] not in ("Namespace", "CustomResourceDefinition") and not d["kind"].startswith(
            "Cluster"
        ):
            assert d["metadata"]["namespace"], f"{d['kind']} {d['metadata']['name']}"


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_rendering_passes_gitkrm_validate(r: Rendering) -> None:
    # One file per run: the renderings are alternatives (the same objects, other values).
    done = subprocess.run(
        [str(GITKRM), "validate", str(CHART / "rendered" / r.file)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    total = sum(EXPECTED_KINDS[r.file].values())
    assert f"{total} object(s) in 1 file(s): valid" in done.stdout


def test_gitkrm_validate_would_catch_a_broken_rendering(tmp_path: Path) -> None:
    broken = (CHART / "rendered" / "default.yaml").read_text().replace("port: 8080", "port: 0")
    (tmp_path / "broken.yaml").write_text(broken)
    done = subprocess.run(
        [str(GITKRM), "validate", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "spec.ports[0].port" in done.stderr


def test_the_crd_in_the_chart_is_gitsource_crd() -> None:
    assert one(rendered(RENDERINGS[0]), "CustomResourceDefinition") == gitsource_crd()


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_agent_is_named_after_the_release(r: Rendering) -> None:
    manifests = rendered(r)
    args = container(manifests)["args"]
    assert args[0] == "run"
    assert [a for a in args if a.startswith("--agent-name")] == [f"--agent-name={r.release}"]
    vals = values(r.overrides())
    cluster = vals["mode"] == "cluster"
    assert ("--target=cluster" in args) == cluster
    deployment = one(manifests, "Deployment")
    assert deployment["spec"]["replicas"] == vals["replicaCount"]
    assert deployment["spec"]["strategy"]["type"] == ("RollingUpdate" if cluster else "Recreate")


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_config_map_is_a_config_file_the_agent_loads(r: Rendering, tmp_path: Path) -> None:
    manifests = rendered(r)
    config = one(manifests, "ConfigMap")
    (tmp_path / "sources.yaml").write_text(config["data"]["sources.yaml"])
    loaded = load_config_file(tmp_path / "sources.yaml")
    vals = values(r.overrides())
    assert [s.name for s in loaded] == [s["name"] for s in vals["sources"]]
    assert [s.url for s in loaded] == [s["spec"]["url"] for s in vals["sources"]]
    # The agent reads the file where the ConfigMap is mounted.
    c = container(manifests)
    mount = next(m for m in c["volumeMounts"] if m["name"] == "config")
    assert f"--config={mount['mountPath']}/sources.yaml" in c["args"]


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_pod_is_locked_down_and_probed(r: Rendering) -> None:
    manifests = rendered(r)
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    c = container(manifests)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    tmp = next(m for m in c["volumeMounts"] if m["mountPath"] == "/tmp")
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == tmp["name"])
    assert c["resources"]["requests"]
    assert c["resources"]["limits"]
    port = c["ports"][0]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["port"] == port["name"]
    service = one(manifests, "Service")
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert service["spec"]["selector"].items() <= pod_labels(manifests).items()
    listen = next(a for a in c["args"] if a.startswith("--listen="))
    assert listen == f"--listen=0.0.0.0:{port['containerPort']}"


def pod_labels(manifests: list[Manifest]) -> dict[str, str]:
    labels: dict[str, str] = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def test_cluster_mode_rbac_covers_what_the_agent_touches() -> None:
    manifests = rendered(RENDERINGS[0])
    roles = {
        (m.obj["metadata"]["namespace"], m.obj["metadata"]["name"]): m.obj["rules"]
        for m in manifests
        if m.obj["kind"] == "Role"
    }
    system = roles[("gitkrm-system", "gitkrm-gitsources")]
    assert {r for rule in system for r in rule["resources"]} == {
        "gitsources",
        "gitsources/status",
        "configmaps",
    }
    lease_ns = next(
        e["value"] for e in container(manifests)["env"] if e["name"] == "GITKRM_LEASE_NAMESPACE"
    )
    assert roles[(lease_ns, "gitkrm-leader-election")][0]["resources"] == ["leases"]
    bindings = [m.obj for m in manifests if m.obj["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    sa = one(manifests, "ServiceAccount")["metadata"]["name"]
    assert all(
        b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "gitkrm-system"}]
        for b in bindings
    )
    cluster_role = one(manifests, "ClusterRole")
    assert cluster_role["rules"][0]["verbs"] == [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
    ]


def test_namespaced_rbac_grants_only_the_listed_namespaces() -> None:
    manifests = rendered(RENDERINGS[2])
    managed = {m.obj["metadata"]["namespace"] for m in manifests if m.obj["kind"] == "Role"}
    assert managed == {"team-a", "team-a-staging", "gitkrm-system", "platform"}
    cluster_role = one(manifests, "ClusterRole")
    assert cluster_role["rules"] == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    ns = one(manifests, "Namespace")
    assert ns["metadata"]["name"] == "gitkrm-system"
    assert ns["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_git_credentials_are_mounted_where_the_sources_read_them() -> None:
    for r in RENDERINGS[1:3]:
        manifests = rendered(r)
        pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
        mount = next(
            m for m in container(manifests)["volumeMounts"] if m["name"] == "git-credentials"
        )
        vals = values(r.overrides())
        for s in vals["sources"]:
            for key in ("passwordFile", "sshKeyFile", "knownHostsFile"):
                if key in s["spec"].get("auth", {}):
                    assert s["spec"]["auth"][key].startswith(mount["mountPath"] + "/")
        volume = next(v for v in pod["volumes"] if v["name"] == "git-credentials")
        assert volume["secret"]["defaultMode"] == 0o440


def test_embedded_mode_keeps_its_store_and_secures_its_api() -> None:
    manifests = rendered(RENDERINGS[3])
    c = container(manifests)
    pvc = one(manifests, "PersistentVolumeClaim")
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    state = next(v for v in pod["volumes"] if v["name"] == "state")
    assert state["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert "--state=/var/lib/gitkrm" in c["args"]
    assert pod["automountServiceAccountToken"] is False
    secret = one(manifests, "Secret")
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert token == "example-token-0123456789abcdef"
    assert "--token-file=/etc/gitkrm/api/token" in c["args"]
    assert c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"


def test_embedded_mode_generates_a_token_when_none_is_given() -> None:
    manifests = render({"mode": "embedded"}, release="edge", namespace="edge")
    token = base64.b64decode(one(manifests, "Secret")["data"]["token"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token)


def test_an_existing_api_secret_and_tls_secret_are_used() -> None:
    vals = {"mode": "embedded", "api": {"existingSecret": "t", "tls": {"secretName": "c"}}}
    manifests = render(vals, release="edge", namespace="edge")
    assert not [m for m in manifests if m.obj["kind"] == "Secret"]
    c = container(manifests)
    assert {"--tls-cert=/etc/gitkrm/tls/tls.crt", "--tls-key=/etc/gitkrm/tls/tls.key"} <= set(
        c["args"]
    )
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"api-token": "t", "api-tls": "c"}


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"rbac": {"scope": "namespaced"}}, "rbac.namespaces: namespaced RBAC needs"),
        ({"gitCredentials": {"create": True}}, "give gitCredentials.password or"),
        ({"gitCredentials": {"create": True, "sshPrivateKey": "k"}}, "needs the known_hosts"),
    ],
)
def test_the_templates_refuse_what_the_schema_cannot(
    override: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=re.escape(complaint)) as e:
        render(override, release="gitkrm", namespace="gitkrm-system")
    assert "gitkrm/templates/" in str(e.value)  # Helm names the template


def test_replicas_beyond_one_in_embedded_mode_fail_even_without_the_schema(
    tmp_path: Path,
) -> None:
    copy_ = Path(shutil.copytree(CHART, tmp_path / "gitkrm"))
    (copy_ / "values.schema.json").unlink()
    with pytest.raises(helm_python.HelmRenderError, match="embedded mode runs one replica"):
        render(
            {"mode": "embedded", "replicaCount": 2}, release="edge", namespace="edge", path=copy_
        )


def test_a_second_release_can_leave_the_crd_to_the_first() -> None:
    manifests = render({"crds": {"install": False}}, release="b", namespace="gitkrm-system")
    assert not [m for m in manifests if m.obj["kind"] == "CustomResourceDefinition"]


def test_prometheus_annotations_point_at_the_metrics_port() -> None:
    manifests = rendered(RENDERINGS[1])
    ann = one(manifests, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true"
    assert ann["prometheus.io/port"] == str(container(manifests)["ports"][0]["containerPort"])
    assert ann["prometheus.io/path"] == "/metrics"


def test_a_changed_source_list_changes_the_pod_template() -> None:
    def checksum(vals: dict[str, Any]) -> str:
        d = one(render(vals, release="gitkrm", namespace="gitkrm-system"), "Deployment")
        return str(d["spec"]["template"]["metadata"]["annotations"]["checksum/config"])

    base = values()
    changed = copy.deepcopy(base)
    changed["sources"][0]["spec"]["ref"] = {"branch": "release"}
    assert checksum(base) != checksum(changed)
    assert checksum(base) == checksum(values())


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_notes_render(r: Rendering) -> None:
    vals = values(r.overrides())
    text = notes(r.overrides(), release=r.release, namespace=r.namespace)
    assert f'as agent "{r.release}"' in text
    assert ("kubectl get gitsources" in text) == (vals["mode"] == "cluster")


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_the_agent_understands_its_arguments_and_environment(r: Rendering) -> None:
    from gitkrm.agent.leader import LEASE_NAMESPACE_ENV
    from gitkrm.cli.main import build_parser

    manifests = rendered(r)
    c = container(manifests)
    args = build_parser().parse_args(c["args"])  # an unknown flag exits
    assert args.agent_name == r.release
    env = {e["name"]: e.get("value") for e in c["env"]}
    if "--target=cluster" in c["args"]:
        lease_roles = [
            m.obj["metadata"]["namespace"]
            for m in manifests
            if m.obj["kind"] == "Role" and m.obj["rules"][0]["resources"] == ["leases"]
        ]
        assert lease_roles == [env[LEASE_NAMESPACE_ENV]]


# -- packaged, pushed to an OCI registry and pulled back -----------------------------------


def test_the_chart_packages_pushes_to_a_registry_and_pulls_back(
    oci_registry: Registry, tmp_path: Path
) -> None:
    meta = load_yaml(CHART / "Chart.yaml")
    archive = Path(helm_python.package(CHART, destination=tmp_path / "dist"))
    assert archive.name == f"gitkrm-{meta['version']}.tgz"
    digest = helm_python.digest(archive)
    pushed = helm_python.push(archive, f"{oci_registry.url}/charts", plain_http=True)
    assert pushed
    assert oci_registry.tags("charts/gitkrm") == [meta["version"]]
    (tmp_path / "pulled").mkdir()
    got = helm_python.pull(
        f"{oci_registry.url}/charts/gitkrm",
        version=meta["version"],
        destination=tmp_path / "pulled",
        plain_http=True,
    )
    assert got is not None
    pulled = tmp_path / "pulled" / archive.name
    assert helm_python.digest(pulled) == digest  # the same bytes came back
    r = RENDERINGS[0]
    with helm_python.Chart.load(pulled) as back:
        assert back.version == meta["version"]
        again = back.render(r.overrides(), name=r.release, namespace=r.namespace)
    assert again == chart().render(r.overrides(), name=r.release, namespace=r.namespace)


def test_the_pushed_chart_is_a_dependency_of_a_source(
    oci_registry: Registry, tmp_path: Path
) -> None:
    """A repository whose chart depends on the pushed chart (`oci://`): `gitkrm validate`
    pulls it through Helm's registry client and renders it like the reviewed rendering."""
    meta = load_yaml(CHART / "Chart.yaml")
    archive = Path(helm_python.package(CHART, destination=tmp_path / "dist"))
    helm_python.push(archive, f"{oci_registry.url}/platform", plain_http=True)
    wrapper = tmp_path / "repo" / "gitkrm-release"
    wrapper.mkdir(parents=True)
    (wrapper / "Chart.yaml").write_text(
        "apiVersion: v2\nname: gitkrm-release\nversion: 1.0.0\ndependencies:\n"
        f"- name: gitkrm\n  version: '~{meta['version']}'\n"
        f"  repository: {oci_registry.url}/platform\n"
    )
    done = subprocess.run(
        [str(GITKRM), "validate", str(tmp_path / "repo")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # The default rendering's objects, and the Namespace gitkrm-system: the release lives in
    # the source's default namespace (`default`), so the chart creates it.
    total = sum(EXPECTED_KINDS["default.yaml"].values()) + 1
    assert f"{total} object(s)" in done.stdout
