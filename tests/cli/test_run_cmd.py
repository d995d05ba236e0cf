"""`gitkrm run` flags: what is refused, clearly, before anything starts (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.cli.main import main
from tests.cli.cli_store import stored


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["run", *args])
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--once"], "nothing to sync: give --repo URL|PATH or --config FILE"),
        (["--repo", "x", "--config", "y", "--once"], "give --repo or --config, not both"),
        (["--config", "y", "--branch", "b"], "--branch: describe the sources in --config instead"),
        (["--config", "y", "--namespace", "n"], "--namespace: describe the sources in --config"),
        (["--repo", "x", "--namespace", "Bad_NS"], "--namespace 'Bad_NS' is not a valid name"),
        (["--repo", "x", "--wait"], "--wait needs --once"),
        (["--repo", "x", "--once", "--timeout", "5m"], "--timeout needs --wait"),
        (["--repo", "x", "--once", "--wait", "--timeout", "0s"], "--timeout must be more"),
        (["--repo", "x", "--once", "--wait", "--timeout", "9"], "--timeout '9' is not a duration"),
        (["--repo", "x", "--kubeconfig", "/no/such/kubeconfig"], "--kubeconfig /no/such/kub"),
        (["--repo", "x", "--context", "c"], "--context needs --kubeconfig"),
        (
            ["--repo", "x", "--kubeconfig", "k", "--target", "embedded"],
            "--kubeconfig selects the cluster target: drop --target embedded",
        ),
        (
            ["--repo", "x", "--target", "cluster", "--token-file", "t"],
            "--token-file: the cluster target serves no Kubernetes API",
        ),
        (["--repo", "x", "--tls-cert", "c"], "--tls-cert and --tls-key go together"),
        (["--repo", "x", "--target", "cluster"], "not running in a pod"),
        (
            ["--repo", "x", "--target", "cluster", "--leader-elect-renew-deadline", "20s"],
            "must be longer than the renew deadline",
        ),
        (
            ["--repo", "x", "--target", "cluster", "--leader-elect-retry-period", "5"],
            "--leader-elect-retry-period '5' is not a duration",
        ),
        (["--repo", "x", "--interval", "30"], "--interval '30' is not a duration"),
        (["--repo", "x", "--interval", "0s"], "--interval must be more than 0s"),
        (["--repo", "x", "--listen", "6443"], "--listen '6443': expected HOST:PORT"),
        (["--repo", "x", "--source-name", "Prod"], "--source-name 'Prod' is not a valid name"),
        (["--repo", "x", "--agent-name", "a" * 64], "--agent-name"),
        (["--repo", "/does/not/exist", "--once"], "--repo /does/not/exist: no such directory"),
        (["--repo", "https://e.com/r.git", "--commit", "abc"], "must be a full lowercase hex sha"),
    ],
)
def test_refused_with_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, err = run(capsys, *args, "--state", str(tmp_path / "state"))
    assert code == 2
    assert err.startswith("gitkrm: error: ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "state").exists()  # nothing was started


def test_server_side_apply_mode_syncs_with_field_manager_gitkrm(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\n"
        "data: {a: '1'}\n"
    )
    code, err = run(
        capsys, "--repo", str(tmp_path / "m"), "--once", "--apply-mode", "server-side",
        "--state", str(tmp_path / "state"),
    )  # fmt: skip
    assert code == 0, err

    cm = stored(tmp_path / "state", "ConfigMap", "cfg")
    assert cm is not None
    md = cm["metadata"]
    assert "kubectl.kubernetes.io/last-applied-configuration" not in md.get("annotations", {})
    applied = [e for e in md["managedFields"] if e["operation"] == "Apply"]
    assert [e["manager"] for e in applied] == ["gitkrm"]
    assert "f:a" in applied[0]["fieldsV1"]["f:data"]


def test_a_bad_config_file_names_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "sources.yaml"
    config.write_text(
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: a}\nspec: {url: u}\n"
        "---\napiVersion: gitkrm.io/v1alpha1\nkind: GitSource\nmetadata: {name: b}\n"
        "spec: {url: u, prune: maybe}\n"
    )
    code, err = run(capsys, "--config", str(config), "--once", "--state", str(tmp_path / "s"))
    assert code == 2
    assert err.startswith(f"gitkrm: error: {config}:6: GitSource b: ")
    assert "spec.prune" in err


def test_helm_values_and_helm_set_flags_reach_the_charts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import shutil

    from tests.charts.chart_files import SHOP

    repo = tmp_path / "repo"
    shutil.copytree(SHOP, repo / "shop")
    (tmp_path / "prod.yaml").write_text("replicas: 2\ngreeting: from-file\n")
    code, err = run(
        capsys, "--repo", str(repo), "--once", "--state", str(tmp_path / "state"),
        "--helm-values", str(tmp_path / "prod.yaml"), "--helm-set", "image.tag=2.5",
    )  # fmt: skip
    assert code == 0, err

    cm = stored(tmp_path / "state", "ConfigMap", "shop-settings")
    deploy = stored(tmp_path / "state", "Deployment", "shop", group="apps")
    assert cm is not None
    assert deploy is not None
    assert cm["data"]["greeting"] == "from-file"
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2.5")


def test_a_bad_helm_values_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "m").mkdir()
    code, err = run(capsys, "--repo", str(tmp_path / "m"), "--helm-values", "/no/such.yaml")
    assert code == 2
    assert "--helm-values /no/such.yaml: No such file or directory" in err


@pytest.mark.parametrize("ref", ["refs/heads/master", "HEAD"])
def test_a_full_ref_name_or_head_is_tracked_and_kept_as_fluxs_ref_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, ref: str
) -> None:
    from tests.source.source_gitrepo import RemoteRepo

    repo = RemoteRepo(tmp_path / "git", branch="master")  # no `main`: the default fails
    repo.publish(
        "on master", {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n"}
    )
    state = ("--state", str(tmp_path / "state"))
    code, err = run(capsys, "--repo", repo.url, "--once", *state)
    assert code == 1
    assert "its default branch is 'master'" in err
    code, err = run(capsys, "--repo", repo.url, "--ref", ref, "--once", *state)
    assert code == 0, err

    cm = stored(tmp_path / "state", "ConfigMap", "cfg")
    source = stored(tmp_path / "state", "GitSource", "default", "gitkrm-system", "gitkrm.io")
    assert cm is not None
    assert source is not None
    assert cm["metadata"]["name"] == "cfg"
    assert source["spec"]["ref"] == {"name": ref}
