"""`gitkrm plan --simulate` through the CLI: a feature branch applied to a twin of a live
embedded store (synced and settled by `run --once --wait`), with pods that would not
schedule, Services left without endpoints and pods an admission policy denies predicted;
the live store untouched and the twin removed; the cluster target refused."""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli.plan_repo import Repo, cli, plan_json
from tests.cli.test_plan_outputs import SCHEMA
from tests.support.simulation import PODS_PINNED, app
from tests.support.verdicts import gitkrm_cli


@pytest.fixture
def twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory temporary files go to (the twin among them), to see it removed."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def live(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str]
) -> tuple[Repo, list[str]]:
    """`files` on main, synced into a live store and settled; the repository, and the
    flags naming it and the state."""
    repo = Repo(tmp_path / "repo")
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("main")
    flags = ["--repo", repo.url, "--source-name", "apps", "--state", str(tmp_path / "state")]
    code, out, err = cli(capsys, "run", "--once", "--wait", "--timeout", "60s", *flags)
    assert code == 0, out + err
    return repo, flags


def feature(repo: Repo, files: dict[str, str]) -> None:
    repo.checkout("feature")
    for path, text in files.items():
        repo.write(path, text)
    repo.commit_to(branch="feature")


def live_state(state: Path) -> tuple[dict[tuple[str, str, str], int], dict[str, tuple[bytes, int]]]:
    """Every live object's resourceVersion (read without writing), and the bytes and mtime
    of the store file and its -wal."""
    db = state / "store.db"
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        rows = conn.execute("SELECT gk, ns, name, rv FROM objects").fetchall()
    finally:
        conn.close()
    files = {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (db, Path(f"{db}-wal"))
        if p.exists()
    }
    return {(gk, ns, name): rv for gk, ns, name, rv in rows}, files


def simulation(doc: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(doc, SCHEMA)
    section: dict[str, Any] = doc["sources"][0]["simulation"]
    return section


def test_unschedulable_pods_and_services_without_endpoints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, twins: Path
) -> None:
    repo, flags = live(
        capsys,
        tmp_path,
        {"web.yaml": app("web", strategy="Recreate"), "shop.yaml": app("shop")},
    )
    feature(
        repo,
        {
            # Recreate: the old pods go first and the new ones fit no node
            "web.yaml": app("web", strategy="Recreate", node_selector="disktype: ssd"),
            "big.yaml": app("big", replicas=1, cpu="2000"),  # above every node's 1000 cpus
            "shop.yaml": app("shop", replicas=3),
        },
    )
    before = live_state(tmp_path / "state")

    code, doc, err = plan_json(capsys, *flags, "--branch", "feature", "--simulate", "--for", "30s")

    assert live_state(tmp_path / "state") == before  # not a byte of the live store changed
    assert list(twins.iterdir()) == []  # the twin is gone
    assert code == 1, err
    sim = simulation(doc)
    assert sim["verdict"] == "problems"
    assert sim["settled"] is True
    assert 0 < sim["elapsedSeconds"] < 30
    assert sim["budgetSeconds"] == 30
    health = {(o["object"]["kind"], o["object"]["name"]): o["health"] for o in sim["objects"]}
    assert health[("Deployment", "web")] == "InProgress"
    assert health[("Deployment", "big")] == "InProgress"
    assert health[("Deployment", "shop")] == "Current"
    pods = sorted((u["owner"]["name"], u["message"]) for u in sim["unschedulable"])
    assert pods == [
        ("big", "0/3 nodes are available: 3 Insufficient cpu."),
        ("web", "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."),
        ("web", "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."),
    ]
    services = sorted(
        (n["service"]["name"], n["endpointsBefore"], n["new"])
        for n in sim["servicesWithoutEndpoints"]
    )
    assert services == [("big", 0, True), ("web", 2, False)]  # shop keeps its endpoints

    code, out, _ = cli(capsys, "plan", *flags, "--branch", "feature", "--simulate")
    assert code == 1
    assert "  simulation on a twin of the embedded store: problems predicted; settled after" in out
    assert (
        "      Deployment.apps default/big: 1 pod(s): 0/3 nodes are available: 3 Insufficient cpu."
    ) in out
    assert "      Service default/web: had 2 ready endpoint(s), none after" in out

    code, out, _ = cli(
        capsys, "plan", "-o", "markdown", *flags, "--branch", "feature", "--simulate"
    )
    summary, simulated = out.index("| source |"), out.index("#### Simulation (apps)")
    assert summary < simulated < out.index("<details>")  # after the summary, before the diffs
    assert "- Service default/web: had 2 ready endpoint(s), none after" in out
    assert list(twins.iterdir()) == []

    code, doc, _ = plan_json(capsys, *flags, "--simulate")  # main, as synced and settled
    assert code == 0
    sim = simulation(doc)
    assert sim["verdict"] == "ok"
    assert {o["health"] for o in sim["objects"]} == {"Current"}


def test_a_policy_denying_the_pods_of_a_deployment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, twins: Path
) -> None:
    """The revision passes (the policy judges pods), the ReplicaSet's pods would not: only
    the controllers running on the twin show it."""
    repo, flags = live(capsys, tmp_path, {"policy.yaml": PODS_PINNED, "shop.yaml": app("shop")})
    feature(repo, {"shop.yaml": app("shop", image="nginx:latest")})
    code, doc, err = plan_json(capsys, *flags, "--branch", "feature", "--simulate")
    assert code == 1, err
    sim = simulation(doc)
    assert sim["settled"] is True
    [denial] = sim["denials"]
    assert denial["stage"] == "controller"
    assert denial["object"] == {
        "group": "apps",
        "kind": "Deployment",
        "name": "shop",
        "namespace": "default",
    }
    assert "ValidatingAdmissionPolicy 'pinned-images'" in denial["message"]
    assert "images must be pinned, not :latest" in denial["message"]
    assert sim["servicesWithoutEndpoints"] == []  # the rolling update keeps the old pods


def one_file(tmp_path: Path, text: str) -> list[str]:
    """A repository of one file on main; the flags naming it and a state directory."""
    repo = Repo(tmp_path / "repo")
    repo.write("one.yaml", text)
    repo.commit("one")
    return ["--repo", repo.url, "--state", str(tmp_path / "s")]


def test_an_unchanged_source_is_not_simulated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flags = one_file(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    code, doc, _ = plan_json(capsys, *flags, "--simulate")
    assert code == 0
    assert simulation(doc) == {
        "verdict": "skipped",
        "reason": "nothing changed since the last sync: the live store is the outcome",
    }


def test_an_invalid_revision_is_not_simulated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    flags = one_file(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    code, doc, _ = plan_json(capsys, *flags, "--simulate")
    assert code == 2
    assert simulation(doc) == {
        "verdict": "skipped",
        "reason": "the revision can't be applied (the errors above)",
    }


def test_the_cluster_target_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({"apiVersion": "v1", "kind": "Config"}))
    flags = one_file(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    code, out, err = cli(capsys, "plan", *flags, "--kubeconfig", str(kubeconfig), "--simulate")
    assert (code, out) == (2, "")
    assert err.startswith("gitkrm: error: --simulate is not available on the cluster target yet: ")
    assert "nodes, the pods bound to them, its quotas and its admission policies" in err
    code, _, err = cli(capsys, "plan", *flags, "--for", "10s")
    assert (code, err) == (2, "gitkrm: error: --for needs --simulate\n")
    code, _, err = cli(capsys, "plan", *flags, "--simulate", "--for", "2h")
    assert code == 2
    assert "--for 2h: give a duration above 0 and at most 1h" in err


def test_fifteen_simulated_minutes_through_the_command(tmp_path: Path) -> None:
    """`--for 15m` as a user runs it (a process): the pods of `stuck` fit no node, and
    within the simulated window its progressDeadlineSeconds (600 s) passes, in seconds."""
    repo = Repo(tmp_path / "repo")
    repo.write("keep.yaml", app("keep", replicas=1))
    repo.commit("main")
    feature(repo, {"stuck.yaml": app("stuck", node_selector="disktype: ssd")})
    flags = ["--repo", repo.url, "--branch", "feature", "--state", str(tmp_path / "state")]

    res = gitkrm_cli("plan", "-o", "json", *flags, "--simulate", "--for", "15m", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    sim = simulation(json.loads(res.stdout))
    assert (sim["clock"], sim["budgetSeconds"], sim["simulatedSeconds"]) == ("simulated", 900, 900)
    assert sim["elapsedSeconds"] < 60
    objects = {
        o["object"]["name"]: o for o in sim["objects"] if o["object"]["kind"] == "Deployment"
    }
    assert (objects["stuck"]["health"], objects["stuck"]["reason"]) == (
        "Failed",
        "ProgressDeadlineExceeded",
    )
    assert objects["keep"]["health"] == "Current"

    res = gitkrm_cli("plan", *flags, "--simulate", "--for", "15m", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    assert re.search(r"problems predicted; .*15m simulated in \d", res.stdout), res.stdout
    assert "Deployment.apps default/stuck (created): Failed (ProgressDeadlineExceeded" in res.stdout


def test_several_sources_share_one_twin(tmp_path: Path, twins: Path) -> None:
    """Two sources whose Deployments each fit the three nodes alone (3 pods of 600 cpus,
    one per node of 1000) but not together: on one twin, the second's pods don't schedule."""
    repo = Repo(tmp_path / "repo")
    repo.write("a/app.yaml", app("first", replicas=3, cpu="600"))
    repo.write("b/app.yaml", app("second", replicas=3, cpu="600"))
    repo.commit("main")
    config = tmp_path / "sources.yaml"
    config.write_text(
        "".join(
            f"---\napiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {{name: {name}}}\n"
            f"spec: {{url: {repo.url}, ref: {{branch: main}}, path: {path}}}\n"
            for name, path in (("first", "a"), ("second", "b"))
        )
    )
    flags = ["--config", str(config), "--state", str(tmp_path / "state")]

    res = gitkrm_cli("plan", "-o", "json", *flags, "--simulate", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, SCHEMA)
    first, second = (s["simulation"] for s in doc["sources"])
    assert first["twinSources"] == second["twinSources"] == ["first", "second"]
    assert (first["verdict"], first["unschedulable"]) == ("ok", [])
    assert second["verdict"] == "problems"
    assert [(u["owner"]["name"], u["message"]) for u in second["unschedulable"]] == [
        ("second", "0/3 nodes are available: 3 Insufficient cpu.")
    ] * 3
    assert list(twins.iterdir()) == []

    res = gitkrm_cli("plan", *flags, "--simulate", cwd=tmp_path)
    assert "simulation on a twin of the embedded store (together with first)" in res.stdout
