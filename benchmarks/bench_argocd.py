"""An Argo CD app of apps synced through the command line with `--interpret argocd`
(tests/e2e/argocd_apps.py: a root Application whose path holds six child Applications over
directory and kustomize sources, one on a second bare repository, one without automated
sync: eight sources, two Deployments among 25 objects), whole `gitkrm` processes, medians of
several runs, each beside a baseline measured in the same run: one plain source (`--path
kustomize-guestbook`, one leaf: its kustomization builds the same under both path rules,
no interpretation) synced the same way.

- argocd.first_sync: `run --once --wait` into an empty state dir (bootstrap, the root
  Application, then its children, and their health);
- argocd.resync: `run --once --wait` again, nothing changed;
- argocd.resync_after_leaf_edit: `run --once --wait` after a commit that edits one leaf.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.cli_runs import after_edits, first_and_again, print_ratio
from tests.e2e.argocd_apps import ui, write_app_of_apps, write_other
from tests.source.source_gitrepo import RemoteRepo

RUNS = 3


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-argocd-") as tmp:
        root = Path(tmp)
        other = RemoteRepo(root / "other")
        write_other(other)
        other.commit("other")
        other.push()
        repo = RemoteRepo(root / "repo")
        write_app_of_apps(repo, other=other)
        repo.commit("app of apps")
        repo.push()
        cases = {
            "argo": (repo.url, "--path", "bootstrap", "--interpret", "argocd"),
            "plain": (repo.url, "--path", "kustomize-guestbook"),
        }
        first, again = first_and_again(root, cases, RUNS)

        def edit_leaf(i: int) -> None:
            edit = ui("guestbook-ui", image=f"ui:edit-{i}")
            repo.write("kustomize-guestbook/guestbook-ui.yaml", edit)  # a leaf of both
            repo.commit(f"edit {i}")
            repo.push()

        edited = after_edits(root, cases, RUNS, edit_leaf)
        figures = {"first_sync": first, "resync": again, "resync_after_leaf_edit": edited}
        for name, seconds in figures.items():
            print_ratio(
                f"argocd.{name}", seconds["argo"], seconds["plain"], baseline="one plain source"
            )


if __name__ == "__main__":
    main()
