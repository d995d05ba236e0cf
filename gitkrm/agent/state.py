"""The layout of a state directory: `store.db`, Git caches under `git/` (one per repository
URL and credentials, `source.cacheshare`; `git/<source>` when not shared), `kubeconfig`, and
`cache/` (parsed files and the records of the last syncs, per source)."""

from __future__ import annotations

from pathlib import Path

STORE_FILE = "store.db"
KUBECONFIG_FILE = "kubeconfig"
CACHE_DIR = "cache"


def store_url(state_dir: Path) -> str:
    """`sqlite:////abs/state/store.db` (SQLAlchemy's four slashes for an absolute path)."""
    return "sqlite:///" + str((state_dir / STORE_FILE).resolve())


def git_cache(state_dir: Path, source: str) -> Path:
    """Where a Git source keeps its bare cache when it shares none (`open_source` shares
    the one beside it of its URL and credentials)."""
    return state_dir / "git" / source


def kubeconfig_path(state_dir: Path) -> Path:
    return state_dir / KUBECONFIG_FILE


def parse_cache_file(state_dir: Path, source: str) -> Path:
    """Where a source's parsed files are kept between processes (`gitkrm.sync.parsecache`)."""
    return state_dir / CACHE_DIR / "parsed" / f"{source}.bin"


def last_sync_file(state_dir: Path, source: str) -> Path:
    """Where the record of a source's last settled sync is kept (`gitkrm.agent.lastsync`)."""
    return state_dir / CACHE_DIR / "synced" / f"{source}.json"


def hooks_file(state_dir: Path, source: str) -> Path:
    """Where the revision whose hooks last ran is kept (`gitkrm.agent.hookstate`)."""
    return state_dir / CACHE_DIR / "hooked" / f"{source}.json"
