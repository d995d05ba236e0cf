"""The layout of a state directory: `store.db`, `git/<source>` caches, `kubeconfig`."""

from __future__ import annotations

from pathlib import Path

STORE_FILE = "store.db"
KUBECONFIG_FILE = "kubeconfig"


def store_url(state_dir: Path) -> str:
    """`sqlite:////abs/state/store.db` (SQLAlchemy's four slashes for an absolute path)."""
    return "sqlite:///" + str((state_dir / STORE_FILE).resolve())


def git_cache(state_dir: Path, source: str) -> Path:
    """Where a Git source keeps its bare cache."""
    return state_dir / "git" / source


def kubeconfig_path(state_dir: Path) -> Path:
    return state_dir / KUBECONFIG_FILE
