"""Argo CD Applications with a Helm source read into a child: a chart of a Helm repository
(HTTP or OCI) or a chart in Git, `helm` options in Helm's order, multi-source `$ref` value
files mounted from another repository, Argo CD's release semantics, and what is not
honoured."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.agent.config import Mount, SourceConfig
from gitkrm.agent.tree.argocd import INTERPRETER
from gitkrm.agent.tree.model import ChildSpec
from gitkrm.charts.spec import ChartRef
from gitkrm.errors import ManifestError
from gitkrm.krm import masking
from gitkrm.source import GitRef, RefKind

from .argocd_objects import application, repo_secret
from .flux_objects import Objects

URL = "https://github.com/example/fleet"
CHARTS = "https://charts.example.com"
VALUES = "https://git.example.com/values.git"


async def child(obj: dict[str, Any], *objs: dict[str, Any]) -> ChildSpec:
    return await INTERPRETER.child(obj, Objects(SourceConfig(name="p", url=URL), *objs))


async def test_a_chart_of_a_helm_repository_with_every_helm_option() -> None:
    helm = {
        "releaseName": "cache",
        "valueFiles": ["values-prod.yaml"],
        "values": "replicas: 1\nimage: {tag: a}\n",
        "valuesObject": {"replicas": 3},
        "parameters": [
            {"name": "image.tag", "value": "b"},
            {"name": "port", "value": "80", "forceString": True},
        ],
        "fileParameters": [{"name": "config", "path": "files/app.conf"}],
        "skipCrds": True,
        "passCredentials": True,
        "version": "v3",
    }  # fmt: skip
    source = {"repoURL": CHARTS, "chart": "redis", "targetRevision": "17.*", "helm": helm}
    creds = repo_secret(
        "charts", CHARTS, type_="repository", username="u", password="helm-pass-123"
    )
    spec = await child(application(source=source), creds)
    c = spec.config
    assert c.chart == ChartRef(repository=CHARTS, name="redis", version="17.*")
    assert (c.url, c.ref, c.path) == (CHARTS, None, "")
    h = c.helm
    assert h is not None
    assert (h.release_name, h.namespace) == ("cache", "guestbook")
    assert h.values == {"replicas": 3}  # valuesObject wins over values
    assert h.value_files == ("values-prod.yaml",)
    assert h.set == ("image.tag=b",)
    assert h.set_string == (("port", "80"),)
    assert h.file_parameters == (("config", "files/app.conf"),)
    assert h.skip_crds
    assert h.template_mode  # helm template: always an install, hooks every sync
    (auth,) = h.repositories
    assert (auth.url, auth.username, auth.password) == (CHARTS, "u", "helm-pass-123")
    assert masking.mask("helm-pass-123") == "***"
    assert [u.field for u in spec.unhonoured] == ["spec.source.helm.passCredentials"]


async def test_an_oci_repository_without_a_scheme_and_a_chart_in_git() -> None:
    source = {
        "repoURL": "registry.example.com/charts",
        "chart": "podinfo",
        "targetRevision": "6.5.0",
    }
    c = (await child(application(source=source))).config
    assert c.chart == ChartRef(
        repository="oci://registry.example.com/charts", name="podinfo", version="6.5.0"
    )
    git = {
        "repoURL": URL,
        "path": "charts/web",
        "targetRevision": "HEAD",
        "helm": {"values": "a: 1"},
    }
    c = (await child(application(source=git))).config
    assert c.chart is None
    assert (c.url, c.path) == (URL, "charts/web")
    assert c.helm is not None
    assert c.helm.values == {"a": 1}
    assert c.helm.release_name == "guestbook"  # the Application's name, as Argo CD


async def test_multi_source_values_from_a_ref_source_are_mounted() -> None:
    sources = [
        {"repoURL": CHARTS, "chart": "webapp", "targetRevision": "^1",
         "helm": {"valueFiles": ["$values/envs/prod/webapp.yaml"]}},
        {"repoURL": VALUES, "targetRevision": "main", "ref": "values"},
        {"repoURL": URL, "targetRevision": "HEAD", "ref": "unused"},
    ]  # fmt: skip
    app = application(sources=sources)
    del app["spec"]["source"]
    spec = await child(app)
    c = spec.config
    assert c.mounts == (
        Mount(
            name="values",
            url="https://git.example.com/values.git",
            ref=GitRef(RefKind.BRANCH, "main"),
        ),
    )
    assert c.helm is not None
    assert c.helm.value_files == ("$values/envs/prod/webapp.yaml",)
    assert "spec.sources[2].ref" in [u.field for u in spec.unhonoured]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"repoURL": CHARTS, "chart": "x", "helm": {"parameters": [{"value": "1"}]}},
         "spec.source.helm.parameters[0]: needs a name"),
        ({"repoURL": CHARTS, "chart": "x", "helm": {"values": "a: [1"}},
         "spec.source.helm.values: not YAML"),
        ({"repoURL": CHARTS, "chart": "x", "helm": {"valueFiles": ["../up.yaml"]}},
         "spec.source.helm.valueFiles[0]: '../up.yaml' must stay inside the repository"),
    ],
)  # fmt: skip
async def test_bad_helm_options_name_the_field(source: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("]", r"\]")):
        await child(application(source=source))
