"""The layout of Flux's example since 2.7 (tests/e2e/flux_artifacts_repo.py: an
ArtifactGenerator making the ExternalArtifacts `infrastructure` and `apps`, three
Kustomizations over them, placeholder bootstrap files) synced through the command line
with `--interpret flux`, whole `gitkrm` processes, medians of several runs, beside a
baseline measured in the same run: the same repository with the Kustomizations over the
GitRepository itself (Flux 2.6's layout: `./infrastructure/controllers`, ...; no generator).

- artifacts.first_sync: `run --once --wait` into an empty state dir;
- artifacts.resync: `run --once --wait` again, nothing changed;
- artifacts.resync_outside: after a commit outside every artifact (apps/production);
- artifacts.resync_inside: after a commit editing a file of the `apps` artifact.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from benchmarks.cli_runs import timed_run
from tests.e2e.flux_artifacts_repo import apps, infrastructure, monorepo, values

RUNS = 3
ARGS = ("--path", "clusters/staging", "--interpret", "flux")


def _line(name: str, artifacts: list[float], git: list[float]) -> None:
    a, g = statistics.median(artifacts), statistics.median(git)
    print(
        f"artifacts.{name:<18} {a:>7.3f} s  (median of {RUNS}; over the GitRepository "
        f"{g:.3f} s, {a / g:.2f}x)",
        flush=True,
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-artifacts-") as tmp:
        root = Path(tmp)
        repos = {"artifacts": monorepo(root, name="artifacts"), "git": monorepo(root, name="git")}
        git = repos["git"]
        git.remove("clusters/staging/artifacts.yaml")
        # the same Kustomizations over the GitRepository, at the artifacts' paths
        over_git = ("GitRepository", "flux-system")
        git.write(
            "clusters/staging/infrastructure.yaml",
            infrastructure(over_git, root="./infrastructure"),
        )
        git.write("clusters/staging/apps.yaml", apps(over_git, root="./apps"))
        git.commit("over the GitRepository")
        times: dict[str, dict[str, list[float]]] = {
            k: {"artifacts": [], "git": []} for k in ("first", "again", "outside", "inside")
        }
        for i in range(RUNS):
            for kind, repo in repos.items():
                state = root / f"state-{kind}-{i}"
                times["first"][kind].append(timed_run(repo.url, state, *ARGS))
                times["again"][kind].append(timed_run(repo.url, state, *ARGS))
        for i in range(RUNS):
            for kind, repo in repos.items():
                repo.write("apps/production/podinfo-values.yaml", values(10 + i))
                repo.commit(f"production {i}")
                times["outside"][kind].append(timed_run(repo.url, root / f"state-{kind}-0", *ARGS))
                repo.write("apps/staging/podinfo-values.yaml", values(20 + i))
                repo.commit(f"staging {i}")
                times["inside"][kind].append(timed_run(repo.url, root / f"state-{kind}-0", *ARGS))
        _line("first_sync", times["first"]["artifacts"], times["first"]["git"])
        _line("resync", times["again"]["artifacts"], times["again"]["git"])
        _line("resync_outside", times["outside"]["artifacts"], times["outside"]["git"])
        _line("resync_inside", times["inside"]["artifacts"], times["inside"]["git"])


if __name__ == "__main__":
    main()
