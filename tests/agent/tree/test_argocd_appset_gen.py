"""Argo CD's ApplicationSet generators and template (`argocd_appset_gen`), on hand-written
repositories in the shape ApplicationSet users write: a git directory generator over
`apps/*`, a git files generator over per-cluster config files, a list generator with
`values`, a matrix of git and list, selectors, and the errors Argo CD's controller gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitkrm.agent.tree.argocd_appset_gen import applications, sanitize
from gitkrm.errors import BadRequest
from gitkrm.source import FileEntry, Snapshot
from gitkrm.source.snapshot import MemoryBlobs, git_blob_id

REPO = "https://git.example.org/fleet"


def snapshot(*paths: str, contents: dict[str, str] | None = None) -> Snapshot:
    files = {p: b"x: y\n" for p in paths}
    files |= {p: c.encode() for p, c in (contents or {}).items()}
    entries = {p: FileEntry(p, git_blob_id(c), len(c)) for p, c in files.items()}
    blobs = MemoryBlobs({git_blob_id(c): c for c in files.values()})
    return Snapshot(revision="r1", files=entries, reader=blobs)


def fail(field: str, message: str) -> Exception:
    return BadRequest(f"{field}: {message}")


def template(name: str, path: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, **extra},
        "spec": {
            "project": "default",
            "source": {"repoURL": REPO, "targetRevision": "HEAD", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
        },
    }


def make(spec: dict[str, Any], snap: Snapshot | None = None) -> list[dict[str, Any]]:
    return applications(spec, name="set", namespace="argocd", snapshot=snap, fail=fail)


def names(apps: list[dict[str, Any]]) -> list[str]:
    return [a["metadata"]["name"] for a in apps]


def test_a_git_directory_generator_makes_one_application_per_matching_directory() -> None:
    snap = snapshot(
        "apps/web/deploy.yaml",
        "apps/db/sts.yaml",
        "apps/old/cm.yaml",
        "apps/web/sub/x.yaml",
        "apps/.hidden/cm.yaml",
        "README.md",
    )
    spec = {
        "generators": [
            {
                "git": {
                    "repoURL": REPO,
                    "revision": "HEAD",
                    "directories": [{"path": "apps/*"}, {"path": "apps/old", "exclude": True}],
                }
            }
        ],
        "template": template("{{path.basename}}", "{{path}}", labels={"seg": "{{path[0]}}"}),
    }
    apps = make(spec, snap)
    assert names(apps) == ["db", "web"]  # `*` stays in one segment; hidden and excluded out
    web = apps[1]
    assert web["apiVersion"] == "argoproj.io/v1alpha1"
    assert web["kind"] == "Application"
    assert web["metadata"]["namespace"] == "argocd"
    assert web["metadata"]["labels"] == {"seg": "apps"}
    assert web["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
    assert web["spec"]["source"]["path"] == "apps/web"
    assert web["spec"]["destination"]["namespace"] == "web"


def test_preserve_resources_on_deletion_adds_no_finalizer() -> None:
    spec = {
        "generators": [{"list": {"elements": [{"name": "a"}]}}],
        "template": template("{{name}}", "x"),
        "syncPolicy": {"preserveResourcesOnDeletion": True},
    }
    [app] = make(spec)
    assert app["metadata"]["finalizers"] == []


def test_a_git_files_generator_flattens_each_file_and_adds_its_path() -> None:
    snap = snapshot(
        contents={
            "clusters/dev/config.json": '{"cluster": {"name": "dev", "replicas": 2, "on": true}}',
            "clusters/prod/config.json": (
                '[{"cluster": {"name": "prod-a"}}, {"cluster": {"name": "prod-b"}}]'
            ),
            "clusters/prod/notes.txt": "x",
        }
    )
    spec = {
        "generators": [
            {
                "git": {
                    "repoURL": REPO,
                    "revision": "HEAD",
                    "files": [{"path": "clusters/**/config.json"}],
                }
            }
        ],
        "template": template(
            "{{cluster.name}}",
            "{{path}}",
            annotations={
                "r": "{{cluster.replicas}}",
                "on": "{{cluster.on}}",
                "f": "{{path.filename}}",
                "b": "{{path.basename}}",
            },
        ),
    }
    apps = make(spec, snap)
    assert names(apps) == ["dev", "prod-a", "prod-b"]
    dev = apps[0]
    assert dev["metadata"]["annotations"] == {
        "r": "2",
        "on": "true",
        "f": "config.json",
        "b": "dev",
    }
    assert dev["spec"]["source"]["path"] == "clusters/dev"
    # an unknown key is left as written, as Argo CD's fasttemplate leaves it
    assert apps[1]["metadata"]["annotations"]["r"] == "{{cluster.replicas}}"


def test_a_list_generator_takes_string_elements_and_a_values_map() -> None:
    spec = {
        "generators": [
            {
                "list": {
                    "elements": [
                        {"env": "staging", "values": {"replicas": "1"}},
                        {"env": "prod", "values": {"replicas": "3"}},
                    ]
                }
            }
        ],
        "template": template(
            "guestbook-{{ env }}", "envs/{{env}}", annotations={"replicas": "{{values.replicas}}"}
        ),
    }
    apps = make(spec)
    assert names(apps) == ["guestbook-prod", "guestbook-staging"]
    assert apps[0]["metadata"]["annotations"] == {"replicas": "3"}
    bad = {**spec, "generators": [{"list": {"elements": [{"env": 3}]}}]}
    with pytest.raises(BadRequest, match=r"elements\[0\]\.env: must be a string"):
        make(bad)


def test_a_matrix_combines_every_pair_and_a_selector_filters() -> None:
    snap = snapshot("apps/web/a.yaml", "apps/db/a.yaml")
    spec = {
        "generators": [
            {
                "matrix": {
                    "generators": [
                        {"git": {"repoURL": REPO, "directories": [{"path": "apps/*"}]}},
                        {"list": {"elements": [{"env": "dev"}, {"env": "prod"}]}},
                    ]
                },
                "selector": {"matchLabels": {"env": "prod"}},
            }
        ],
        "template": template("{{path.basename}}-{{env}}", "{{path}}"),
    }
    assert names(make(spec, snap)) == ["db-prod", "web-prod"]


def test_the_clusters_generator_is_gitkrms_own_target() -> None:
    spec = {
        "generators": [{"clusters": {}}],
        "template": template("app-{{name}}", "x"),
    }
    [app] = make(spec)
    assert app["metadata"]["name"] == "app-in-cluster"
    labelled = {**spec, "generators": [{"clusters": {"selector": {"matchLabels": {"a": "b"}}}}]}
    assert make(labelled) == []  # no cluster Secret carries labels


TIER = '{{ if eq .path.basename "db" }}data{{ else }}web{{ end }}'


def test_go_templates_render_as_go_templates_with_sprig() -> None:
    snap = snapshot("apps/My_App/a.yaml", "apps/db/b.yaml")
    spec = {
        "goTemplate": True,
        "generators": [{"git": {"repoURL": REPO, "directories": [{"path": "apps/*"}],
                                "values": {"tier": TIER}}}],
        "template": template(
            "{{ .path.basenameNormalized }}", "{{.path.path}}",
            labels={"seg": "{{ index .path.segments 0 }}", "{{ .path.basename | lower }}": "k",
                    "tier": "{{ .values.tier }}"},
        ),
    }  # fmt: skip
    db, app = make(spec, snap)
    assert app["metadata"]["name"] == "my-app"
    assert app["spec"]["source"]["path"] == "apps/My_App"
    assert app["metadata"]["labels"] == {"seg": "apps", "my_app": "k", "tier": "web"}
    assert db["metadata"]["labels"]["tier"] == "data"
    broken = {**spec, "template": template("{{ .path.basename | nosuchfunc }}", "x")}
    with pytest.raises(BadRequest, match=r"spec.template.metadata.name: .*nosuchfunc"):
        make(broken, snap)


def test_go_template_options_missingkey_error_fails_on_a_missing_key() -> None:
    elements = [{"name": "a", "env": "dev"}, {"name": "b"}]
    spec: dict[str, Any] = {
        "goTemplate": True,
        "generators": [{"list": {"elements": elements}}],
        "template": template("{{ .name }}", "envs/{{ .env }}"),
    }
    lenient = make(spec)  # without the option a missing key renders empty
    assert [a["spec"]["source"]["path"] for a in lenient] == ["envs/dev", "envs/"]
    strict = {**spec, "goTemplateOptions": ["missingkey=error"]}
    with pytest.raises(BadRequest, match=r'spec.template.spec.source.path: .*"env"'):
        make(strict)
    later = {**spec, "goTemplateOptions": ["missingkey=error", "missingkey=zero"]}
    assert names(make(later)) == ["a", "b"]  # the last missingkey holds, as in Go
    unknown = {**spec, "goTemplateOptions": ["missingkey=maybe"]}
    with pytest.raises(BadRequest, match=r"goTemplateOptions\[0\]: unrecognized option"):
        make(unknown)


def test_a_template_patch_sets_what_a_string_template_cannot() -> None:
    """Argo CD's documented use: automated sync on or off per element, and a list."""
    patch = """
    spec:
      syncPolicy:
    {{- if .autoSync }}
        automated: {prune: {{ .prune }}}
    {{- end }}
      ignoreDifferences: [{group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}]
    metadata:
      finalizers: [example.test/extra]
      annotations: {owner: '{{ .owner }}'}
    """
    elements = [{"name": "dev", "autoSync": True, "prune": True, "owner": "a"},
                {"name": "prod", "autoSync": False, "prune": False, "owner": "b"}]  # fmt: skip
    spec: dict[str, Any] = {
        "goTemplate": True,
        "generators": [{"list": {"elements": elements}}],
        "template": template("{{ .name }}", "envs/{{ .name }}"),
        "templatePatch": patch,
    }
    dev, prod = make(spec)
    assert dev["spec"]["syncPolicy"] == {"automated": {"prune": True}}  # a boolean, not "true"
    assert "syncPolicy" not in prod["spec"]
    assert prod["spec"]["ignoreDifferences"][0]["jsonPointers"] == ["/spec/replicas"]
    assert prod["spec"]["source"]["path"] == "envs/prod"  # the template's fields stay
    assert dev["metadata"]["annotations"] == {"owner": "a"}
    # finalizers merge as a set: the resources finalizer the set adds stays
    assert dev["metadata"]["finalizers"] == [
        "resources-finalizer.argocd.argoproj.io",
        "example.test/extra",
    ]
    with pytest.raises(BadRequest, match=r"spec.templatePatch: must render a YAML object"):
        make({**spec, "templatePatch": "- a list"})
    with pytest.raises(BadRequest, match=r"spec.templatePatch: .*nosuchfunc"):
        make({**spec, "templatePatch": "{{ .name | nosuchfunc }}"})
    fast = {"generators": [{"list": {"elements": [{"name": "dev"}, {"name": "prod"}]}}],
            "template": template("{{name}}", "x"),
            "templatePatch": "metadata: {labels: {env: '{{name}}'}}"}  # fmt: skip
    assert [a["metadata"]["labels"] for a in make(fast)] == [{"env": "dev"}, {"env": "prod"}]


def test_merge_elements_yaml_expressions_and_a_path_prefix() -> None:
    snap = snapshot("envs/dev/config.yaml", "envs/prod/config.yaml",
                    contents={"envs/dev/config.yaml": "env: dev\nsize: s\n",
                              "envs/prod/config.yaml": "env: prod\nsize: l\n"})  # fmt: skip
    files = {"git": {"repoURL": REPO, "files": [{"path": "envs/*/config.yaml"}],
                     "pathParamPrefix": "cfg"}}  # fmt: skip
    overrides = {"list": {"elementsYaml": "- env: prod\n  size: xl\n"}}
    spec = {
        "generators": [{"merge": {"mergeKeys": ["env"], "generators": [files, overrides]},
                        "selector": {"matchExpressions": [
                            {"key": "size", "operator": "In", "values": ["s", "xl"]}]}}],
        "template": template("{{env}}-{{size}}", "{{cfg.path}}"),
    }  # fmt: skip
    dev, prod = make(spec, snap)
    assert (dev["metadata"]["name"], dev["spec"]["source"]["path"]) == ("dev-s", "envs/dev")
    assert (prod["metadata"]["name"], prod["spec"]["source"]["path"]) == ("prod-xl", "envs/prod")
    one_key = {"generators": [{"merge": {"mergeKeys": ["env"], "generators": [files]}}],
               "template": template("x", "x")}  # fmt: skip
    with pytest.raises(BadRequest, match=r"merge.generators: a merge takes at least two"):
        make(one_key, snap)


def test_errors_name_the_field() -> None:
    unsupported = {"generators": [{"plugin": {}}], "template": template("a", "x")}
    with pytest.raises(BadRequest, match=r"spec.generators\[0\]\.plugin: not supported"):
        make(unsupported)
    twice = {
        "generators": [{"list": {"elements": [{"n": "a"}, {"n": "a"}]}}],
        "template": template("same", "x"),
    }
    with pytest.raises(BadRequest, match="more than one Application is named 'same'"):
        make(twice)
    unnamed = {
        "generators": [{"list": {"elements": [{"n": "a"}]}}],
        "template": template("{{x}}", "x"),
    }
    with pytest.raises(BadRequest, match="renders no name"):
        make(unnamed)


def test_sanitize_is_argo_cds_normalisation() -> None:
    assert sanitize("My_App.v2-") == "my-app.v2"


def test_per_project_config_files_with_a_generator_template() -> None:
    """The layout argocd-autopilot writes: `apps/<app>/overlays/<project>/config.json`
    read by a `**` glob, and a second generator whose own template makes directory
    sources of `config_dir.json` apps."""
    config = {
        "appName": "hello",
        "userGivenName": "hello",
        "destNamespace": "hello",
        "srcPath": "apps/hello/overlays/testing",
        "srcTargetRevision": "",
        "labels": None,
    }
    snap = snapshot(
        contents={
            "apps/hello/overlays/testing/config.json": json.dumps(config),
            "apps/raw/testing/config_dir.json": json.dumps(
                {**config, "userGivenName": "raw", "srcPath": "apps/raw/testing", "exclude": "*.md"}
            ),
            "apps/xtesting/config.json": json.dumps({**config, "userGivenName": "wrong"}),
        }
    )
    own = {"spec": {"source": {"directory": {"recurse": True, "exclude": "{{ exclude }}"}}}}
    spec = {
        "generators": [
            {"git": {"repoURL": REPO, "files": [{"path": "apps/**/testing/config.json"}]}},
            {
                "git": {
                    "repoURL": REPO,
                    "files": [{"path": "apps/**/testing/config_dir.json"}],
                    "template": own,
                }
            },
        ],
        "template": template(
            "testing-{{ userGivenName }}",
            "{{ srcPath }}",
            labels={"name": "{{ appName }}", "l": "{{labels}}"},
        ),
    }
    hello, raw = make(spec, snap)
    assert (hello["metadata"]["name"], raw["metadata"]["name"]) == ("testing-hello", "testing-raw")
    assert hello["metadata"]["labels"] == {"name": "hello", "l": "<nil>"}
    assert "directory" not in hello["spec"]["source"]
    assert raw["spec"]["source"]["directory"] == {"recurse": True, "exclude": "*.md"}
    assert raw["spec"]["source"]["path"] == "apps/raw/testing"


def test_rolling_sync_orders_the_steps_by_application_labels() -> None:
    """Argo CD's progressive sync example: envLabel steps dev, qa (maxUpdate 0), prod."""
    elements = [{"env": e} for e in ("dev", "dev2", "qa", "prod", "lab")]
    labels = {"envLabel": "{{env}}", "tier": "web"}
    steps = [
        {"matchExpressions": [{"key": "envLabel", "operator": "In", "values": ["dev", "dev2"]}]},
        {"matchExpressions": [{"key": "envLabel", "operator": "In", "values": ["qa"]}],
         "maxUpdate": 0},
        {"matchExpressions": [{"key": "envLabel", "operator": "In", "values": ["prod"]},
                              {"key": "tier", "operator": "NotIn", "values": ["db"]}]},
    ]  # fmt: skip
    spec: dict[str, Any] = {
        "generators": [{"list": {"elements": elements}}],
        "template": template("app-{{env}}", "envs/{{env}}", labels=labels),
        "strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}},
    }
    spec["template"]["spec"]["syncPolicy"] = {"automated": {"prune": True}}
    apps = {a["metadata"]["name"]: a for a in make(spec)}
    after = {n: (a["metadata"].get("annotations") or {}).get("gitkrm.io/rolling-sync-after")
             for n, a in apps.items()}  # fmt: skip
    assert after == {"app-dev": None, "app-dev2": None, "app-qa": "app-dev,app-dev2",
                     "app-prod": "app-qa", "app-lab": None}  # fmt: skip
    automated = {n: "automated" in a["spec"]["syncPolicy"] for n, a in apps.items()}
    # qa is held (maxUpdate 0); lab is in no step: neither is synced automatically
    assert automated == {"app-dev": True, "app-dev2": True, "app-qa": False, "app-prod": True,
                         "app-lab": False}  # fmt: skip
    bad = {**spec, "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
        {"matchExpressions": [{"key": "envLabel", "operator": "Exists"}]}]}}}  # fmt: skip
    with pytest.raises(BadRequest, match=r"steps\[0\]\.matchExpressions\[0\]: operator must be"):
        make(bad)
