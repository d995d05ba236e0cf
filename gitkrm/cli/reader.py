"""Read-only access to an agent's store, for `get` and `status` while the agent runs."""

from __future__ import annotations

from pathlib import Path

from gitkrm.agent.state import STORE_FILE, store_url
from gitkrm.errors import NotFound
from gitkrm.store import Store, open_store


async def open_reader(state_dir: Path) -> Store:
    """The store of `state_dir`, read-only (no writer lock: an agent may be running)."""
    if not (state_dir / STORE_FILE).exists():
        raise NotFound(
            f"no store in {state_dir} (run `gitkrm run --state {state_dir}` first, "
            "or pass the --state the agent uses)"
        )
    return await open_store(store_url(state_dir), read_only=True)
