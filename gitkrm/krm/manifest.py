"""One object read from a manifest file, with where it came from."""

from __future__ import annotations

from dataclasses import dataclass

from gitkrm.krm.types import Obj


@dataclass(frozen=True, slots=True)
class Manifest:
    """An object and its origin, so every later error can say `path:line`.

    `line` is the 1-based line of the object's first key; `index` is the 0-based position
    of its YAML document in the file (every document counts, empty ones too, so the
    index matches what an editor shows). Items of a `kind: List` share the List's index.
    The dataclass is frozen but `obj` is a plain dict: treat it as read-only and copy
    before changing it.
    """

    obj: Obj
    path: str
    line: int
    index: int

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"
