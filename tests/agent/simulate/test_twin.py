"""`simulate`: a feature branch applied to a twin of a live embedded store (synced and
settled by `gitkrm run --once --wait`), with the bundled controllers running on the twin.
The live store is read, never written, and the twin is removed afterwards."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from gitkrm.agent.config import sync_options
from gitkrm.agent.config_flags import from_flags
from gitkrm.agent.simulate import SimSource, Simulation, simulate
from gitkrm.agent.simulate.verdict import Stage
from gitkrm.agent.sources import open_source
from gitkrm.health import Health
from gitkrm.source import Source
from gitkrm.store.sqlite import SqliteStore, db
from tests.source.source_gitrepo import RemoteRepo, git
from tests.support.builders import configmap
from tests.support.simulation import PODS_PINNED, app
from tests.support.verdicts import gitkrm_cli

AGENT = "sim"


@pytest.fixture
def repo(tmp_path: Path) -> RemoteRepo:
    return RemoteRepo(tmp_path / "repo")


def live_main(repo: RemoteRepo, tmp_path: Path, files: dict[str, str]) -> Path:
    """Commit `files` on main, sync main into a live store and wait until everything is
    Current; the state directory."""
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("main")
    repo.push()
    state = tmp_path / "state"
    res = gitkrm_cli(
        "run", "--once", "--wait", "--timeout", "60s", "--repo", repo.url, "--branch", "main",
        "--agent-name", AGENT, "--state", str(state), cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    return state


def feature(repo: RemoteRepo, files: dict[str, str], *, remove: tuple[str, ...] = ()) -> None:
    git("checkout", "-q", "-b", "feature", cwd=repo.work)
    for path, text in files.items():
        repo.write(path, text)
    for path in remove:
        repo.remove(path)
    repo.commit("feature")
    repo.push("HEAD:refs/heads/feature")
    git("checkout", "-q", "main", cwd=repo.work)


@pytest.fixture
async def opened(repo: RemoteRepo, tmp_path: Path) -> AsyncIterator[list[Source]]:
    sources: list[Source] = []
    yield sources
    for s in sources:
        await s.close()


async def feature_source(repo: RemoteRepo, opened: list[Source], tmp_path: Path) -> SimSource:
    """The branch `feature` of `repo`, fetched, as the twin is given it."""
    config = from_flags(
        repo=repo.url, branch="feature", tag=None, commit=None, path=None,
        source_name="default", interval=None,
    )  # fmt: skip
    source = open_source(config, git_cache=tmp_path / "git-cache")
    opened.append(source)
    options = sync_options(config, agent_name=AGENT, apply_mode="client-side")
    return SimSource(options=options, snapshot=await source.snapshot())


async def run_simulation(
    repo: RemoteRepo,
    state: Path,
    opened: list[Source],
    tmp_path: Path,
    budget: float = 30.0,
    wall_limit: float = 300.0,
) -> Simulation:
    (tmp_path / "twins").mkdir(exist_ok=True)
    return await simulate(
        live_store=state / "store.db",
        sources=[await feature_source(repo, opened, tmp_path)],
        budget=budget,
        workdir=tmp_path / "twins",
        wall_limit=wall_limit,
    )


def live_versions(db: Path) -> tuple[dict[tuple[str, str, str], int], int]:
    """Every live object's resourceVersion and the newest revision, read without writing
    (the store is closed: its file holds everything)."""
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        rows = conn.execute("SELECT gk, ns, name, rv FROM objects").fetchall()
        newest = conn.execute("SELECT max(rv) FROM events").fetchone()[0]
    finally:
        conn.close()
    return {(gk, ns, name): rv for gk, ns, name, rv in rows}, int(newest)


def files(state: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of the store file and its -wal (the -shm is SQLite's shared index of
    the WAL: readers mark in it what they read)."""
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (state / "store.db", state / "store.db-wal")
        if p.exists()
    }


def by_name(sim: Simulation) -> dict[str, tuple[str, Health, str]]:
    return {f"{o.ref.kind}/{o.ref.name}": (o.action, o.health, o.reason) for o in sim.objects}


async def test_unschedulable_pods_and_services_without_endpoints_are_predicted(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(
        repo, tmp_path, {"web.yaml": app("web", strategy="Recreate"), "shop.yaml": app("shop")}
    )
    feature(
        repo,
        {
            # Recreate: the old pods go first, the new ones fit no node: web loses them all
            "web.yaml": app("web", strategy="Recreate", node_selector="disktype: ssd"),
            "big.yaml": app("big", replicas=1, cpu="2000"),  # above every node's 1000 cpus
            "shop.yaml": app("shop", replicas=3),  # a clean change
        },
    )
    versions, files_before = live_versions(state / "store.db"), files(state)

    sim = await run_simulation(repo, state, opened, tmp_path)

    assert (live_versions(state / "store.db"), files(state)) == (versions, files_before)
    assert list((tmp_path / "twins").iterdir()) == []  # the twin is gone
    assert sim.settled
    assert not sim.ok
    assert sim.elapsed < 30
    objects = by_name(sim)
    assert objects["Deployment/web"][:2] == ("configured", Health.IN_PROGRESS)
    assert objects["Deployment/big"][:2] == ("created", Health.IN_PROGRESS)
    assert objects["Deployment/shop"] == ("configured", Health.CURRENT, "")
    assert objects["Service/shop"][1] is Health.CURRENT
    pods = {(str(u.owner), u.message) for u in sim.unschedulable}
    assert pods == {
        (
            "Deployment.apps default/web",
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        ),
        ("Deployment.apps default/big", "0/3 nodes are available: 3 Insufficient cpu."),
    }
    assert len(sim.unschedulable) == 3  # web's two pods and big's one
    lost = {(n.service.name, n.before, n.new) for n in sim.no_endpoints}
    assert lost == {("web", 2, False), ("big", 0, True)}  # shop keeps its endpoints
    assert sim.denials == ()
    assert sim.hooks == ()


async def test_a_clean_change_is_predicted_ok(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(repo, tmp_path, {"shop.yaml": app("shop")})
    feature(repo, {"shop.yaml": app("shop", replicas=4), "cart.yaml": app("cart")})
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert sim.ok, sim
    assert sim.settled
    assert {o.health for o in sim.objects} == {Health.CURRENT}
    assert len(sim.objects) == 4
    # a live store known settled (`plan` read it so): unchanged objects skip the
    # three-way diff, changed ones are still applied
    src = replace(await feature_source(repo, opened, tmp_path), settled=True)
    again = await simulate(live_store=state / "store.db", sources=[src])
    actions = {f"{o.ref.kind}/{o.ref.name}": o.action for o in again.objects}
    assert actions == {"Deployment/shop": "configured", "Service/shop": "unchanged",
                       "Deployment/cart": "created", "Service/cart": "created"}  # fmt: skip
    assert again.ok, again


async def test_a_policy_denying_the_pods_of_a_deployment_is_reported(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    """The revision passes (the policy judges pods, not Deployments), but the ReplicaSet
    controller's pods would be denied: only running the controllers shows it."""
    state = live_main(repo, tmp_path, {"policy.yaml": PODS_PINNED, "shop.yaml": app("shop")})
    feature(repo, {"shop.yaml": app("shop", image="nginx:latest")})
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert not sim.ok
    assert sim.settled, sim.elapsed
    [denial] = sim.denials
    assert denial.stage is Stage.CONTROLLER
    assert str(denial.ref) == "Deployment.apps default/shop"
    assert "ValidatingAdmissionPolicy 'pinned-images'" in denial.message
    assert "images must be pinned, not :latest" in denial.message
    # a rolling update keeps the old pods while the new ones are denied
    assert [n.service.name for n in sim.no_endpoints] == []
    assert by_name(sim)["Deployment/shop"][1] is Health.IN_PROGRESS


async def test_a_revision_a_policy_refuses_is_reported_whole(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(repo, tmp_path, {"shop.yaml": app("shop")})
    feature(
        repo,
        {
            "policy.yaml": PODS_PINNED.replace('""', "apps")
            .replace("pods]", "deployments]")
            .replace("[CREATE]", "[CREATE, UPDATE]")
            .replace("object.spec.containers", "object.spec.template.spec.containers"),
            "shop.yaml": app("shop", image="nginx:latest"),
        },
    )
    sim = await run_simulation(repo, state, opened, tmp_path)
    [denial] = sim.denials
    assert denial.stage is Stage.REVISION
    assert denial.message.startswith("shop.yaml:1: Deployment default/shop: ")
    assert "images must be pinned, not :latest" in denial.message
    assert sim.objects == ()  # nothing of a refused revision is applied


async def test_an_empty_state_simulates_on_an_empty_twin(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    repo.write("shop.yaml", app("shop"))
    repo.commit("main")
    repo.push()
    feature(repo, {"big.yaml": app("big", cpu="5000")})
    state = tmp_path / "state"
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert not state.exists()
    assert [u.owner.name for u in sim.unschedulable if u.owner] == ["big", "big"]
    assert by_name(sim)["Deployment/shop"][:2] == ("created", Health.CURRENT)


FAILING_HOOK = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: default
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {gitkrm.io/simulate: fail}}
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "busybox:1.36"}]
"""


async def test_a_failing_hook_and_a_prune_are_predicted(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(
        repo, tmp_path, {"shop.yaml": app("shop"), "old.yaml": app("old", replicas=1)}
    )
    feature(
        repo,
        {"hook.yaml": FAILING_HOOK, "shop.yaml": app("shop", replicas=3)},
        remove=("old.yaml",),
    )
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert sim.hooks, sim
    [hook] = sim.hooks
    assert (hook.phase, hook.ref.kind, hook.state) == ("PreSync", "Job", "Failed")
    assert hook.ref.name.startswith("migrate")
    # a failed PreSync phase applies nothing of the Sync phase: shop keeps 2 replicas
    assert not sim.ok
    assert by_name(sim) == {}
    assert sim.errors == (
        "source default: a PreSync hook failed: nothing of the Sync phase was applied",
    )


async def test_a_pruned_workload_is_gone_and_its_service_not_reported(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(
        repo, tmp_path, {"shop.yaml": app("shop"), "old.yaml": app("old", replicas=1)}
    )
    feature(repo, {}, remove=("old.yaml",))
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert sim.ok, sim
    objects = by_name(sim)
    assert objects["Deployment/old"] == ("pruned", Health.NOT_FOUND, "NotFound")
    assert objects["Service/old"] == ("pruned", Health.NOT_FOUND, "NotFound")
    assert objects["Deployment/shop"] == ("unchanged", Health.CURRENT, "")


TAINTED_NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: gpu-0
  annotations: {gitkrm.io/capacity: "cpu=8,memory=32Gi,pods=110"}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
"""


async def test_a_taint_no_pod_tolerates_is_predicted(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    """The repository declares the only node, tainted: a Deployment that does not tolerate
    the taint would not schedule."""
    state = live_main(repo, tmp_path, {"node.yaml": TAINTED_NODE})
    feature(repo, {"shop.yaml": app("shop")})
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert {(str(u.owner), u.message) for u in sim.unschedulable} == {
        (
            "Deployment.apps default/shop",
            "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.",
        )
    }
    assert [(n.service.name, n.new) for n in sim.no_endpoints] == [("shop", True)]


async def test_crash_looping_pods_are_predicted(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    state = live_main(repo, tmp_path, {"shop.yaml": app("shop")})
    crashing = app("shop", image="nginx:1.28").replace(
        "metadata: {labels: {app: shop}}",
        "metadata: {labels: {app: shop}, annotations: {gitkrm.io/simulate: crashloop}}",
    )
    feature(repo, {"shop.yaml": crashing})
    sim = await run_simulation(repo, state, opened, tmp_path)
    assert not sim.ok
    [pod] = sim.failing  # the one surge pod of the rolling update
    assert str(pod.owner) == "Deployment.apps default/shop"
    assert pod.reason == "ContainerCrashLooping"
    assert sim.no_endpoints == ()  # the old pods keep serving
    assert by_name(sim)["Deployment/shop"][1] is Health.IN_PROGRESS


async def test_a_store_its_writer_holds_open_is_copied_not_written(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent running on the live store (its writer open, commits in the WAL not yet
    checkpointed): the twin sees those commits, and neither file changes."""
    state = live_main(repo, tmp_path, {"shop.yaml": app("shop")})
    feature(repo, {"big.yaml": app("big", cpu="2000")})
    monkeypatch.setattr(db, "CHECKPOINT_INTERVAL", 3600.0)  # the WAL keeps what is written
    writer = SqliteStore.open(str(state / "store.db"))
    try:
        await writer.create(configmap("written-while-planning", data={"a": "1"}))
        before = files(state)
        assert "store.db-wal" in before
        sim = await run_simulation(repo, state, opened, tmp_path)
        assert files(state) == before
    finally:
        await writer.close()
    assert [(u.owner.name if u.owner else "") for u in sim.unschedulable] == ["big", "big"]
    assert by_name(sim)["Deployment/shop"] == ("unchanged", Health.CURRENT, "")


def more_shop_replicas(repo: RemoteRepo) -> None:
    repo.write("shop.yaml", app("shop"))
    repo.commit("main")
    repo.push()
    feature(repo, {"shop.yaml": app("shop", replicas=3)})


async def test_a_window_too_short_says_so(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    more_shop_replicas(repo)
    # 1 ms of simulated time: the pods are still starting (0.5 s) when the window ends
    sim = await run_simulation(repo, tmp_path / "state", opened, tmp_path, budget=0.001)
    assert (sim.settled, sim.ok, sim.errors, sim.simulated) == (False, False, (), 0.001)
    assert by_name(sim)["Deployment/shop"][1] is Health.IN_PROGRESS
    assert list((tmp_path / "twins").iterdir()) == []


async def test_the_wall_time_limit_ends_a_simulation(
    repo: RemoteRepo, tmp_path: Path, opened: list[Source]
) -> None:
    more_shop_replicas(repo)
    sim = await run_simulation(
        repo, tmp_path / "state", opened, tmp_path, budget=60.0, wall_limit=0.0
    )
    assert (sim.settled, sim.ok) == (False, False)
    assert sim.errors == ("source default: its sync did not finish within the wall-time limit",)
    assert list((tmp_path / "twins").iterdir()) == []
