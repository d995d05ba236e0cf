"""What a source's charts rendered, and which releases were applied, kept in the state dir
(`cache/parsed/<source>.helm.json`, mode 0600: rendered Secrets hold their data, as the
parse cache beside it does).

A render is kept by the digest of its inputs (chart files and fetched dependencies, values,
release name and namespace, capabilities) and install/upgrade, so a restart renders nothing
that was rendered before, and a chart using `randAlphaNum`, `genCA` or `now` keeps the values
of its first render until its inputs change. Renders unused by a sync are kept for one more
(a `git revert` finds them), then dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from gitkrm.charts.model import Release, RenderedRelease

FORMAT: Final = 1


class RenderStore:
    def __init__(self, path: Path | None, *, persist: bool = True) -> None:
        self.path = path
        self.persist = persist and path is not None
        self._current: dict[str, RenderedRelease] = {}  # used by this sync
        self._previous: dict[str, RenderedRelease] = {}  # by the one before
        self._disk: dict[str, Any] | None = None  # raw renders read from the file, once
        self._dirty = False
        # release key -> (inputs, install) of its last applied render
        self.applied: dict[str, tuple[str, bool]] = {}
        self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return
        for key, value in (data.get("applied") or {}).items():
            if isinstance(value, list) and len(value) == 2:
                self.applied[str(key)] = (str(value[0]), bool(value[1]))
        renders = data.get("renders")
        self._disk = renders if isinstance(renders, dict) else {}

    def get(self, key: str) -> RenderedRelease | None:
        hit = self._current.get(key) or self._previous.get(key)
        if hit is None and self._disk:
            raw = self._disk.pop(key, None)
            if raw is not None:
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    hit = _decode(raw)
        if hit is not None:
            self._current[key] = hit
        return hit

    def put(self, key: str, rendered: RenderedRelease) -> None:
        self._current[key] = rendered
        self._dirty = True

    def rotate(self) -> None:
        """After a sync's renders: the next generation (and the file, when it changed)."""
        if self._current.keys() != self._previous.keys():
            self._dirty = True
        kept = {**self._previous, **self._current}
        self._previous, self._current = self._current, {}
        self._disk = {}
        if self._dirty:
            self._save(kept)
            self._dirty = False

    def mark_applied(self, releases: Iterable[Release]) -> None:
        changed = False
        for r in releases:
            value = (r.inputs, r.install)
            if self.applied.get(r.key) != value:
                self.applied[r.key] = value
                changed = True
        if changed:
            self._save({**self._previous, **self._current})

    def _save(self, renders: dict[str, RenderedRelease]) -> None:
        if not self.persist or self.path is None:
            return
        doc = {
            "format": FORMAT,
            "applied": {k: list(v) for k, v in sorted(self.applied.items())},
            "renders": {k: _encode(v) for k, v in renders.items()},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        tmp.replace(self.path)


def _encode(r: RenderedRelease) -> dict[str, Any]:
    return {
        "release": r.release.to_json(),
        "manifests": [[p, t.decode()] for p, t in r.manifests],
        "warnings": [list(w) for w in r.warnings],
    }


def _decode(raw: dict[str, Any]) -> RenderedRelease:
    return RenderedRelease(
        release=Release.from_json(raw["release"]),
        manifests=tuple((str(p), str(t).encode()) for p, t in raw["manifests"]),
        warnings=tuple((str(p), str(m)) for p, m in raw.get("warnings", ())),
    )
