"""One Git cache per repository URL and credentials in a process: the sources that fetch
the same repository (every Flux Kustomization over one GitRepository, every Argo CD
Application on one repoURL, a source tree's `url: .` children) share one bare cache, so a
commit is fetched once for all of them, not once per source.

A source asks for a place under a directory of caches (`claim`): the URL's own directory
(named by a digest of the URL without user-info) when no source of this process holds it
or the one that does fetches with the same credentials; its own directory otherwise, as
before. Each source keeps its own refs in the shared repository (what it tracks, what it
last listed), so what each sees is its own ref and path. The sources of one cache take
turns (`lock`) to fetch, list and repair it; a repair (wiping a damaged cache) bumps
`generation`, which tells the others their cat-file reader must start again and the wipe
is already done.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(eq=False)
class SharedCache:
    """The state the sources of one cache directory share in this process."""

    path: Path
    credentials: object
    users: int = 0
    generation: int = 0
    """Bumped by each wipe of the cache (see the module docstring)."""
    _lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = field(default=None, repr=False)

    def lock(self) -> asyncio.Lock:
        """The sources' turns, in the running event loop (a lock serves one loop only)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]


_HELD: dict[Path, SharedCache] = {}


def url_dir(root: Path, url: str) -> Path:
    """The cache directory of a repository URL (user-info already stripped) under `root`."""
    return root / ("repo-" + hashlib.sha256(url.encode()).hexdigest()[:20])


def claim(*, root: Path | None, url: str, credentials: object, own: Path) -> SharedCache:
    """The cache a source uses: its URL's shared one under `root` (when free, or held with
    equal `credentials`), else its `own` directory (also when `root` is None)."""
    if root is not None:
        shared = url_dir(root, url).absolute()
        held = _HELD.get(shared)
        if held is None or held.credentials == credentials:
            return _take(shared, credentials)
    return _take(own.absolute(), credentials)


def _take(path: Path, credentials: object) -> SharedCache:
    held = _HELD.get(path)
    if held is None:
        held = _HELD[path] = SharedCache(path=path, credentials=credentials)
    held.users += 1
    return held


def release(cache: SharedCache) -> None:
    """A source using `cache` closed; the last one lets it go."""
    cache.users -= 1
    if cache.users <= 0 and _HELD.get(cache.path) is cache:
        del _HELD[cache.path]
