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

from benchmarks.cli_runs import after_edits, first_and_again, print_ratio
from tests.e2e.flux_repo import APP, fleet, second_repository

RUNS = 3


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-flux-") as tmp:
        root = Path(tmp)
        repo = fleet(root, second=second_repository(root))
        cases = {
            "flux": (repo.url, "--path", "clusters/dev", "--interpret", "flux"),
            "plain": (repo.url, "--path", "apps/dev"),
        }
        first, again = first_and_again(root, cases, RUNS)

        def edit_leaf(i: int) -> None:
            greeting = f"greeting: edit-{i}"
            repo.write("apps/dev/podinfo.yaml", APP.replace("greeting: hello", greeting))
            repo.commit(f"edit {i}")

        edited = after_edits(root, cases, RUNS, edit_leaf)
        figures = {"first_sync": first, "resync": again, "resync_after_leaf_edit": edited}
        for name, seconds in figures.items():
            print_ratio(
                f"flux.{name}", seconds["flux"], seconds["plain"], baseline="one plain source"
            )


if __name__ == "__main__":
    main()
