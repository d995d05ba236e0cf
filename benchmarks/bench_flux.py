"""A Flux-layout repository synced through the command line with `--interpret flux`
(tests/e2e/flux_repo.py: clusters/dev with flux-system, infrastructure and apps, and a
Kustomization over a second bare repository: four sources, 15 objects), whole `gitkrm`
processes, medians of several runs, each beside a baseline measured in the same run: one
plain source (`--path apps/dev`, the leaf `apps` syncs, no interpretation) synced the same way.

- flux.first_sync: `run --once --wait` into an empty state dir (the parent, then its three
  children, apps after infrastructure, and their health);
- flux.resync: `run --once --wait` again, nothing changed;
- flux.resync_after_leaf_edit: `run --once --wait` after a commit that edits one leaf file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.cli_runs import first_and_again, print_ratio, timed_run
from tests.e2e.flux_repo import APP, fleet, second_repository

RUNS = 3


def _line(name: str, flux: list[float], plain: list[float]) -> None:
    print_ratio(f"flux.{name}", flux, plain, baseline="one plain source")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-flux-") as tmp:
        root = Path(tmp)
        repo = fleet(root, second=second_repository(root))
        flux = ("--path", "clusters/dev", "--interpret", "flux")
        plain = ("--path", "apps/dev")
        first, again = first_and_again(
            root, {"flux": (repo.url, *flux), "plain": (repo.url, *plain)}, RUNS
        )
        edited: dict[str, list[float]] = {"flux": [], "plain": []}
        for i in range(RUNS):
            greeting = f"greeting: edit-{i}"
            repo.write("apps/dev/podinfo.yaml", APP.replace("greeting: hello", greeting))
            repo.commit(f"edit {i}")
            for kind, args in (("flux", flux), ("plain", plain)):
                edited[kind].append(timed_run(repo.url, root / f"state-{kind}-0", *args))
        _line("first_sync", first["flux"], first["plain"])
        _line("resync", again["flux"], again["plain"])
        _line("resync_after_leaf_edit", edited["flux"], edited["plain"])


if __name__ == "__main__":
    main()
