"""Argo CD ApplicationSets through the real CLI (`run --once --interpret argocd`), on a
hand-written repository in the shape ApplicationSet users publish: `bootstrap/` holds an
ApplicationSet with a git directory generator over `apps/*` (one directory excluded, no
destination namespace: each app's manifests name theirs) and one with a list generator,
whose two Applications create the same namespace (CreateNamespace=true), and one of them
declares an Application of a Helm chart on a repository that can't be reached, and one
with a list of clusters (another cluster: an error naming the Application). What does not
depend on those syncs; their Applications say why; the run exits 1. A directory removed
from Git prunes its Application and, by the resources finalizer, its objects."""

from __future__ import annotations

from pathlib import Path

from gitkrm.agent.tree.naming import child_name
from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application_set
from tests.e2e.e2e_support import cm_ref, get_or_none, reading, run_bootstrap, writing
from tests.e2e.manifests import configmap, namespace
from tests.source.source_gitrepo import RemoteRepo

UNREACHABLE = "https://127.0.0.1:1/charts"


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


def appset_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="ApplicationSet", name=name, namespace=ARGOCD)


def appsets(url: str) -> str:
    """Three ApplicationSets: git directories of apps/* (one excluded), a list of two charts
    into one namespace, a list of one other cluster."""
    directories = {"git": {
        "repoURL": url, "revision": "HEAD",
        "directories": [{"path": "apps/*"}, {"path": "apps/legacy", "exclude": True}],
    }}  # fmt: skip
    charts = {"list": {"elements": [
        {"name": "local", "path": "charts/local"}, {"name": "remote", "path": "charts/remote"},
    ]}}  # fmt: skip
    clusters = {"list": {"elements": [{"cluster": "prod", "url": "https://prod.example.org:6443"}]}}
    return "---\n".join([
        application_set(
            "team-apps", directories, app_name="{{path.basename}}", repo_url=url,
            path="{{path}}", destination={},
            sync_policy={"automated": {"prune": True, "selfHeal": True}, "retry": {"limit": 5}},
            templatePatch="metadata: {annotations: {owner: platform}}",
            preservedFields={"annotations": ["owner"]},
            ignoreApplicationDifferences=[{"jsonPointers": ["/spec/syncPolicy/retry"]}],
        ),
        application_set(
            "charts", charts, app_name="chart-{{name}}", repo_url=url, path="{{path}}",
            destination={"namespace": "charts"},
            sync_policy={"automated": {"prune": True}, "syncOptions": ["CreateNamespace=true"]},
            syncPolicy={"preserveResourcesOnDeletion": True},
        ),
        application_set(
            "fleet", clusters, app_name="{{cluster}}-web", repo_url=url, path="apps/web",
            destination={"server": "{{url}}", "namespace": "web"},
        ),
    ])  # fmt: skip


def remote_chart_app() -> str:
    """The list's `remote` element as a user would have it: a chart repository source."""
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: db
  namespace: {ARGOCD}
spec:
  project: default
  source: {{repoURL: '{UNREACHABLE}', chart: mysql, targetRevision: 9.2.0}}
  destination: {{server: 'https://kubernetes.default.svc', namespace: charts}}
  syncPolicy: {{automated: {{}}}}
"""


def parent_lines(stdout: str) -> dict[str, str]:
    """Each summary line's source -> the source of the nearest less indented line above."""
    out: dict[str, str] = {}
    above: list[tuple[int, str]] = []
    for line in stdout.splitlines():
        name, sep, _ = line.strip().partition(": ")
        if not sep or " " in name:
            continue
        depth = len(line) - len(line.lstrip())
        while above and above[-1][0] >= depth:
            above.pop()
        if above:
            out[name] = above[-1][1]
        above.append((depth, name))
    return out


def write_repository(repo: RemoteRepo) -> None:
    repo.write("bootstrap/appsets.yaml", appsets(repo.url))
    repo.write("bootstrap/settings.yaml", configmap("settings", {"a": "1"}, namespace=ARGOCD))
    for app in ("web", "api", "legacy"):
        repo.write(f"apps/{app}/ns.yaml", namespace(app))
        repo.write(f"apps/{app}/cm.yaml", configmap(f"{app}-config", {"app": app}, namespace=app))
    repo.write("charts/local/cm.yaml", configmap("local-config", {"x": "y"}, namespace="charts"))
    repo.write("charts/remote/db.yaml", remote_chart_app())
    repo.commit("application sets")
    repo.push()


async def test_application_sets_generate_applications_that_sync(
    repo: RemoteRepo, state: Path
) -> None:
    write_repository(repo)
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 1, res.stdout + res.stderr  # the unreachable chart
    out = res.stdout + res.stderr
    db_child = child_name(app_ref("db"))
    assert f"{db_child}: FAILED" in res.stdout
    # an Application for another cluster: its error names it once, on its status too
    elsewhere = "spec.destination.server: 'https://prod.example.org:6443': gitkrm syncs its own"
    assert f"error: Application argocd/prod-web: {elsewhere}" in res.stdout
    # the summary puts each child right under its parent (not after the parent's siblings)
    assert parent_lines(res.stdout) == {
        child_name(app_ref(a)): child_name(appset_ref("team-apps")) for a in ("web", "api")
    } | {
        child_name(app_ref("chart-local")): child_name(appset_ref("charts")),
        child_name(app_ref("chart-remote")): child_name(appset_ref("charts")),
        db_child: child_name(app_ref("chart-remote")),
        child_name(appset_ref("charts")): "default",
        child_name(appset_ref("team-apps")): "default",
        child_name(appset_ref("fleet")): "default",
    }
    assert f"chart repository {UNREACHABLE}" in out
    async with reading(state) as store:
        for app in ("web", "api"):
            made = await get_or_none(store, app_ref(app))
            assert made is not None, app
            assert made["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
            assert made["status"]["sync"]["status"] == "Synced"
            assert await get_or_none(store, cm_ref(f"{app}-config", app)) is not None
        assert await get_or_none(store, app_ref("legacy")) is None  # excluded
        assert await get_or_none(store, cm_ref("legacy-config", "legacy")) is None
        local = await get_or_none(store, app_ref("chart-local"))
        assert local is not None
        assert local["metadata"]["finalizers"] == []  # preserveResourcesOnDeletion
        assert await get_or_none(store, cm_ref("local-config", "charts")) is not None
        # two Applications with CreateNamespace=true share their destination namespace
        remote = await get_or_none(store, app_ref("chart-remote"))
        assert remote is not None
        assert remote["status"]["sync"]["status"] == "Synced", remote["status"]
        # the `remote` element's path is the Application declaring the chart: its error
        # is on its own status, nothing else is held back
        db = await get_or_none(store, app_ref("db"))
        assert db is not None
        [cond] = db["status"]["conditions"]
        assert cond["type"] == "ComparisonError"
        assert UNREACHABLE in cond["message"]
        prod = await get_or_none(store, app_ref("prod-web"))
        assert prod is not None
        [cond] = prod["status"]["conditions"]
        assert (cond["type"], cond["message"].startswith(elsewhere)) == ("InvalidSpecError", True)
        team = await get_or_none(store, appset_ref("team-apps"))
        assert team is not None
        conds = {c["type"]: c["status"] for c in team["status"]["conditions"]}
        assert conds == {
            "ErrorOccurred": "False",
            "ParametersGenerated": "True",
            "ResourcesUpToDate": "True",
        }
        assert [r["name"] for r in team["status"]["resources"]] == ["api", "web"]

    # A user's edits of a generated Application: what the ApplicationSet says to keep
    # (preservedFields, ignoreApplicationDifferences) stays, the rest is set back.
    async with writing(state) as store:
        web = await get_or_none(store, app_ref("web"))
        assert web is not None
        assert web["metadata"]["annotations"]["owner"] == "platform"  # templatePatch
        web["metadata"]["annotations"]["owner"] = "me"
        web["spec"]["syncPolicy"]["retry"]["limit"] = 2
        web["spec"]["syncPolicy"]["automated"]["selfHeal"] = False
        await store.update(web)
    repo.remove("apps/api")
    repo.commit("api retired")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    async with reading(state) as store:
        assert await get_or_none(store, app_ref("api")) is None, res.stdout + res.stderr
        assert await get_or_none(store, cm_ref("api-config", "api")) is None  # finalizer
        assert await get_or_none(store, cm_ref("web-config", "web")) is not None
        assert await get_or_none(store, cm_ref("settings", ARGOCD)) is not None
        web = await get_or_none(store, app_ref("web"))
        assert web is not None
        assert web["metadata"]["annotations"]["owner"] == "me"
        assert web["spec"]["syncPolicy"]["retry"] == {"limit": 2}
        assert web["spec"]["syncPolicy"]["automated"]["selfHeal"] is True
