"""The Helm chart, checked without helm: its values against its schema, every `.Values` path
and `include` its templates use, the reviewed renderings (current, valid to `gitkrm
validate`, the expected kinds), the CRD, the agent's arguments and its GitSource config."""

from __future__ import annotations

import base64
import copy
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gitkrm.agent.config import load_config_file
from gitkrm.agent.crd import SPEC_SCHEMA, gitsource_crd

from .chart import (
    CHART,
    RENDERINGS,
    Manifest,
    Rendering,
    load_yaml,
    merge,
    notes,
    render,
    render_file,
    schema,
    template_files,
    values,
)
from .gotemplate import Node, TemplateError, lex, parse

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
    extra = [load_yaml(CHART / f) for f in r.values_files]
    return render(values(*extra), release=r.release, namespace=r.namespace)


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
    jsonschema.Draft7Validator(s).validate(load_yaml(CHART / "values.yaml"))


@pytest.mark.parametrize("r", RENDERINGS, ids=lambda r: r.file)
def test_every_example_values_file_passes_the_schema(r: Rendering) -> None:
    for f in r.values_files:
        values(load_yaml(CHART / f))  # raises ValidationError


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ({"mode": "edge"}, "'edge' is not one of"),
        ({"replicaCount": 3}, "3 is greater than the maximum"),
        ({"mode": "embedded", "replicaCount": 2}, "1 was expected"),
        ({"replicas": 2}, "Additional properties are not allowed ('replicas'"),
        ({"sources": []}, "should be non-empty"),
        ({"sources": [{"name": "Prod_1", "spec": {"url": "x"}}]}, "does not match"),
        ({"sources": [{"name": "a", "spec": {"url": "x", "branch": "main"}}]}, "'branch'"),
        ({"sources": [{"name": "a", "spec": {"url": "x", "adoption": "maybe"}}]}, "'maybe'"),
        ({"sources": [{"name": "a", "spec": {"path": "x"}}]}, "'url' is a required property"),
        ({"rbac": {"scope": "everywhere"}}, "'everywhere' is not one of"),
        ({"rbac": {"verbs": ["get", "own"]}}, "'own' is not one of"),
        ({"agent": {"interval": "soon"}}, "'soon' does not match"),
        ({"resources": {"limits": {"memory": "lots"}}}, "'lots' does not match"),
        ({"image": {"repository": ""}}, "should be non-empty"),
        ({"gitCredentials": {"mountPath": "relative/dir"}}, "does not match"),
    ],
)
def test_bad_values_are_refused_by_the_schema(override: dict[str, Any], complaint: str) -> None:
    with pytest.raises(jsonschema.ValidationError) as e:
        values(override)
    assert complaint in str(e.value)


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


# -- what the templates read ---------------------------------------------------------------

_HELPERS = "_helpers.tpl"


def _walk(nodes: list[Node], dot: tuple[str, ...] | None) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(where, path) of every field a template reads, `dot` being the path `.` stands for
    (None where it can't be told: such a read is reported with an empty path)."""
    for n in nodes:
        if n.kind == "text":
            continue
        pipes = [p for p, _ in n.branches] if n.branches else [n.pipe]
        for pipe in pipes:
            yield from _reads(pipe, dot, n.where)
        if n.kind in ("if", "with", "range"):
            for pipe, body in n.branches:
                inner = dot
                if n.kind in ("with", "range"):
                    inner = _scope(pipe, dot, each=n.kind == "range")
                yield from _walk(body, inner)
            yield from _walk(n.orelse, dot)


def _field_path(tok: str, dot: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if tok.startswith("$."):
        return tuple(tok[2:].split("."))
    if tok.startswith(".") and tok != ".":
        return None if dot is None else (*dot, *tok[1:].split("."))
    return None


def _reads(
    pipe: tuple[str, ...], dot: tuple[str, ...] | None, where: str
) -> Iterator[tuple[str, tuple[str, ...]]]:
    for tok in pipe:
        if tok.startswith(".") and tok != "." and dot is None:
            yield where, ()
            continue
        path = _field_path(tok, dot)
        if path is not None:
            yield where, path


def _scope(
    pipe: tuple[str, ...], dot: tuple[str, ...] | None, *, each: bool
) -> tuple[str, ...] | None:
    if ":=" in pipe:
        pipe = pipe[pipe.index(":=") + 1 :]
    if len(pipe) != 1:
        return None  # conservative: fields under a computed dot are not allowed at all
    path = _field_path(pipe[0], dot)
    if path is None:
        return None
    return (*path, "[]") if each else path


def _exists(data: Any, path: tuple[str, ...]) -> bool:
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head == "[]":
        return isinstance(data, list) and bool(data) and all(_exists(i, rest) for i in data)
    return isinstance(data, dict) and head in data and _exists(data[head], rest)


def all_reads() -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = []
    for p in template_files():
        defines: dict[str, list[Node]] = {}
        body = parse(lex(p.read_text(), p.name), defines)
        out += _walk(body, ())
        for nodes in defines.values():
            out += _walk(nodes, ())  # every define is included with the top context
    return out


def test_every_values_path_a_template_reads_is_in_values_yaml() -> None:
    data = {"Values": load_yaml(CHART / "values.yaml")}
    reads = all_reads()
    missing = sorted(
        {(w, ".".join(p)) for w, p in reads if not p or (p[0] == "Values" and not _exists(data, p))}
    )
    assert not missing, f"read by the templates, not in values.yaml: {missing}"
    # The walk sees what it should: a plain read, one under `with`, one under `range`.
    paths = {".".join(p) for _, p in reads}
    assert {"Values.image.repository", "Values.gitCredentials.username"} <= paths
    assert {"Values.sources.[].name", "Values.rbac.rules.[].apiGroups"} <= paths


def test_the_checker_catches_a_missing_path() -> None:
    data = {"Values": load_yaml(CHART / "values.yaml")}
    body = parse(
        lex("{{ with .Values.gitCredentials }}{{ .usernme }}{{ end }}{{ .Values.nope }}", "t"), {}
    )
    bad = [p for _, p in _walk(body, ()) if not _exists(data, p)]
    assert bad == [("Values", "gitCredentials", "usernme"), ("Values", "nope")]


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
    vals = values(*[load_yaml(CHART / f) for f in r.values_files])
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
    vals = values(*[load_yaml(CHART / f) for f in r.values_files])
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
        vals = values(*[load_yaml(CHART / f) for f in r.values_files])
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
    manifests = render(values({"mode": "embedded"}), release="edge", namespace="edge")
    token = base64.b64decode(one(manifests, "Secret")["data"]["token"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", token)


def test_an_existing_api_secret_and_tls_secret_are_used() -> None:
    vals = values({"mode": "embedded", "api": {"existingSecret": "t", "tls": {"secretName": "c"}}})
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
    with pytest.raises(TemplateError, match=re.escape(complaint)):
        render(values(override), release="gitkrm", namespace="gitkrm-system")


def test_replicas_beyond_one_in_embedded_mode_fail_even_without_the_schema() -> None:
    vals = merge(load_yaml(CHART / "values.yaml"), {"mode": "embedded", "replicaCount": 2})
    with pytest.raises(TemplateError, match="embedded mode runs one replica"):
        render(vals, release="edge", namespace="edge")


def test_a_second_release_can_leave_the_crd_to_the_first() -> None:
    manifests = render(values({"crds": {"install": False}}), release="b", namespace="gitkrm-system")
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
    vals = values(*[load_yaml(CHART / f) for f in r.values_files])
    text = notes(vals, release=r.release, namespace=r.namespace)
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
