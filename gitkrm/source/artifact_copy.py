"""An ArtifactGenerator's copy operations over a repository's file listing (pure).

Flux's source-watcher (`internal/builder`) stages each artifact by `cp`-like operations,
in order, later ones overwriting earlier ones:

- `from: "@alias/<pattern>"`: without glob characters a file or a directory (a directory
  is copied as a sub-directory of the destination: `@src/dir/` gives `<to>/dir/...`; the
  alias root `@src/` copies its contents); with them, Go's `fs.Glob` (`*`, `?` and `[...]`
  within one path segment; `**` is two `*`s, one segment), every match (file or directory,
  directories recursively) copied to `<to>/<match>`, except that `<dir>/**` strips
  `<dir>/` (`@src/apps/**` to `@artifact/x/` gives `x/<what apps holds>`).
- `to: "@artifact/<path>"`: a trailing `/` (or an existing staged directory) means into
  that directory; else the file's own new name.
- `exclude`: doublestar patterns (`**` any depth, `{a,b}`) matched against the path from
  the alias root and the path from the literal prefix of `from`; one without `/` also
  against the file name.
- `strategy`: `Overwrite` (default); `Merge` deep-merges a YAML file into the staged one
  (maps merged, lists replaced, as Helm's values); `Extract` (tarballs) is refused here.

The result maps artifact paths to blobs of the listing (no content read, except the files
a `Merge` combines), so an artifact is content-addressed by blob ids: `digest` changes
exactly when a file of the artifact does.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any, Final

from gitkrm.errors import BadRequest

from .snapshot import FileEntry, git_blob_id

MAX_ARTIFACT_FILES: Final = 50_000
MAX_ARTIFACT_BYTES: Final = 512 * 1024 * 1024
_GLOB_CHARS: Final = frozenset("*?[]")


class Strategy(StrEnum):
    OVERWRITE = "Overwrite"
    MERGE = "Merge"
    EXTRACT = "Extract"


@dataclass(frozen=True, slots=True)
class CopyOp:
    """One `copy[]` entry, already split: `pattern` is `from` after `@alias/`, `to` is
    after `@artifact/` (a trailing `/` kept)."""

    alias: str
    pattern: str
    to: str
    exclude: tuple[str, ...] = ()
    strategy: Strategy = Strategy.OVERWRITE

    @property
    def text(self) -> str:
        return f"from '@{self.alias}/{self.pattern}' to '@artifact/{self.to}'"


@dataclass(frozen=True, slots=True)
class ArtifactRecipe:
    """One `spec.artifacts[]` entry of an ArtifactGenerator: which aliases name which
    prefix of the listing ("" the repository itself), and the copy operations."""

    name: str
    copy: tuple[CopyOp, ...]
    aliases: tuple[tuple[str, str], ...] = ()
    pinned: bool = False
    """`revision: "@alias"`: the artifact's revision is the repository's, not its digest."""


@dataclass(frozen=True, slots=True)
class Built:
    """An artifact: its files (by artifact path), the contents `Merge` made (by blob id),
    and the digest of the whole (`sha256:<hex>` over paths, modes and blob ids)."""

    files: Mapping[str, FileEntry]
    made: Mapping[str, bytes]
    digest: str

    @property
    def revision(self) -> str:
        """Flux's form for a generated artifact: `latest@sha256:<hex>`."""
        return f"latest@{self.digest}"

    @property
    def size(self) -> int:
        return sum(e.size for e in self.files.values())


class CopyError(BadRequest):
    """A copy operation that cannot be applied (names the operation)."""


def parse_from(value: str) -> tuple[str, str]:
    """(`alias`, pattern) of `@alias/pattern`; BadRequest when not of that form."""
    if not value.startswith("@") or "/" not in value:
        raise BadRequest(f"{value!r}: must be '@<alias>/<path or pattern>'")
    alias, _, pattern = value[1:].partition("/")
    if not alias:
        raise BadRequest(f"{value!r}: must be '@<alias>/<path or pattern>'")
    _confined(pattern, value)
    return alias, pattern


def parse_to(value: str) -> str:
    """The path after `@artifact/` (trailing `/` kept); BadRequest otherwise."""
    if not value.startswith("@artifact/"):
        raise BadRequest(f"{value!r}: must start with '@artifact/'")
    rest = value.removeprefix("@artifact/")
    _confined(rest, value)
    return rest


def _confined(path: str, value: str) -> None:
    if path.startswith("/") or ".." in path.split("/") or "\\" in path or "\0" in path:
        raise BadRequest(f"{value!r}: must stay inside its root (no '..', no absolute path)")


def check_exclude(pattern: str) -> None:
    """BadRequest for an exclude pattern that does not compile."""
    try:
        _doublestar(pattern)
    except re.error as e:
        raise BadRequest(f"invalid exclude pattern {pattern!r}: {e}") from None


# -- patterns ---------------------------------------------------------------------------


def _class(pattern: str, i: int) -> tuple[str, int]:
    """A `[...]` class at `pattern[i]`: its regex and the index after it."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "^!"
    if negate:
        j += 1
    body = []
    while j < len(pattern) and pattern[j] != "]":
        c = pattern[j]
        if c == "\\" and j + 1 < len(pattern):
            j += 1
            body.append(re.escape(pattern[j]))
        elif c == "-":
            body.append("-")
        else:
            body.append(re.escape(c))
        j += 1
    if j >= len(pattern) or not body:
        raise re.error(f"bad character class in {pattern!r}")
    return ("[^/" if negate else "[") + "".join(body) + "]", j + 1


def _translate(pattern: str, *, doublestar: bool) -> str:
    """A glob as a regex: `*` and `?` never match `/`, `[...]` classes, `\\` escapes; with
    `doublestar`, also `**` (any number of segments) and `{a,b}` alternatives."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        starts = i == 0 or pattern[i - 1] == "/"
        if doublestar and c == "*" and pattern[i : i + 2] == "**" and starts:
            if pattern[i + 2 : i + 3] == "/":
                out.append("(?:[^/]*(?:/[^/]*)*/)?")
                i += 3
            else:
                out.append(".*")
                i += 2
            continue
        if c == "[":
            cls, i = _class(pattern, i)
            out.append(cls)
            continue
        if doublestar and c == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                depth += {"{": 1, "}": -1}.get(pattern[j], 0)
                j += 1
            if depth:
                raise re.error(f"unterminated {{ in {pattern!r}")
            parts = _split_alternatives(pattern[i + 1 : j - 1])
            out.append("(?:" + "|".join(_translate(p, doublestar=True) for p in parts) + ")")
            i = j
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@cache
def _segment(pattern: str) -> re.Pattern[str]:
    """Go's `path.Match` of one segment (`**` is two `*`s)."""
    return re.compile(_translate(pattern, doublestar=False) + r"\Z")


def _split_alternatives(body: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for k, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:k])
            start = k + 1
    parts.append(body[start:])
    return parts


@cache
def _doublestar(pattern: str) -> re.Pattern[str]:
    """doublestar's `Match`: `**` any number of segments, `{a,b}` alternatives."""
    return re.compile(_translate(pattern, doublestar=True) + r"\Z")


def _excluded_by(path: str, patterns: tuple[str, ...]) -> bool:
    name = path.rpartition("/")[2]
    for p in patterns:
        if _doublestar(p).match(path) or ("/" not in p and _doublestar(p).match(name)):
            return True
    return False


def excluded(path: str, base: str, patterns: tuple[str, ...]) -> bool:
    """source-watcher's `shouldExcludePath`: from the alias root, or from `base`."""
    if not patterns:
        return False
    if _excluded_by(path, patterns):
        return True
    if base in ("", "."):
        return False
    if not path.startswith(base + "/"):
        return False
    return _excluded_by(path[len(base) + 1 :], patterns)


def _selection_root(pattern: str) -> str:
    parts = []
    for part in posixpath.normpath(pattern or ".").split("/"):
        if _GLOB_CHARS & set(part):
            break
        parts.append(part)
    return "/".join(parts) if parts and parts != ["."] else "."


# -- the staging ------------------------------------------------------------------------


class _Tree:
    """An alias's files (relative to its root) and its directories."""

    def __init__(self, files: Mapping[str, FileEntry]) -> None:
        self.files = files
        dirs = {""}
        for p in files:
            d = p
            while "/" in d:
                d = d.rpartition("/")[0]
                if d in dirs:
                    break
                dirs.add(d)
        self.dirs = dirs

    def glob(self, pattern: str) -> list[str]:
        """Go's `fs.Glob`: files and directories, one pattern segment per path segment."""
        segs = pattern.split("/")
        out: list[str] = []
        for p in (*self.files, *(d for d in self.dirs if d)):
            parts = p.split("/")
            if len(parts) == len(segs) and all(
                _segment(s).match(x) for s, x in zip(segs, parts, strict=True)
            ):
                out.append(p)
        return sorted(out)

    def under(self, d: str) -> list[str]:
        if d in ("", "."):
            return sorted(self.files)
        return sorted(p for p in self.files if p.startswith(d + "/"))


def _join(*parts: str) -> str:
    return (
        posixpath.normpath("/".join(p for p in parts if p not in ("", ".")))
        if any(p not in ("", ".") for p in parts)
        else ""
    )


class _Stage:
    def __init__(self, read: Callable[[Iterable[str]], dict[str, bytes]]) -> None:
        self.files: dict[str, FileEntry] = {}
        self.made: dict[str, bytes] = {}
        self._read = read

    def is_dir(self, path: str) -> bool:
        return path in ("", ".") or any(p.startswith(path + "/") for p in self.files)

    def put(self, op: CopyOp, dest: str, entry: FileEntry) -> None:
        if not dest or dest == ".":
            raise CopyError(f"{op.text}: '{entry.path}' would replace the artifact's root")
        if op.strategy is Strategy.MERGE and dest in self.files:
            self._merge(op, dest, entry)
            return
        self.files[dest] = FileEntry(dest, entry.blob, entry.size, entry.mode)

    def _content(self, entry: FileEntry) -> bytes:
        if entry.blob in self.made:
            return self.made[entry.blob]
        return self._read([entry.blob])[entry.blob]

    def _merge(self, op: CopyOp, dest: str, entry: FileEntry) -> None:
        import yaml

        docs = []
        for what, e in (("the staged file", self.files[dest]), (entry.path, entry)):
            try:
                doc = yaml.load(self._content(e), Loader=yaml.CSafeLoader)
            except yaml.YAMLError as err:
                raise CopyError(f"{op.text}: {what} is not YAML: {err}") from None
            if doc is not None and not isinstance(doc, dict):
                raise CopyError(f"{op.text}: {what} is not a YAML map; only maps merge")
            docs.append(doc or {})
        merged = yaml.safe_dump(_merged(docs[0], docs[1]), sort_keys=False).encode()
        blob = git_blob_id(merged)
        self.made[blob] = merged
        self.files[dest] = FileEntry(dest, blob, len(merged), self.files[dest].mode)


def _merged(base: Any, over: Any) -> Any:
    """Helm's coalescing of values files: maps merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merged(base.get(k), v) if k in base else v
        return out
    return over


def _apply(op: CopyOp, tree: _Tree, stage: _Stage) -> None:
    if op.strategy is Strategy.EXTRACT:
        raise CopyError(f"{op.text}: strategy Extract (tarballs) is not supported by gitkrm")
    dest_dir = op.to.endswith("/") or op.to == ""
    dest = _join(op.to)
    if not _GLOB_CHARS & set(op.pattern):
        src = posixpath.normpath(op.pattern or ".")
        if src == "." or src in tree.dirs:
            name = "" if src == "." else src.rpartition("/")[2]
            _copy_dir(op, tree, stage, src, _join(dest, name), base=src)
            return
        entry = tree.files.get(src)
        if entry is None:
            raise CopyError(f"{op.text}: source '{src}' does not exist")
        if excluded(src, ".", op.exclude):
            return
        name = src.rpartition("/")[2]
        target = _join(dest, name) if dest_dir or stage.is_dir(dest) else dest
        stage.put(op, target, entry)
        return
    try:
        matches = tree.glob(op.pattern)
    except re.error as e:
        raise CopyError(f"{op.text}: invalid glob pattern: {e}") from None
    if not matches:
        raise CopyError(f"{op.text}: no files match pattern '{op.pattern}' in '@{op.alias}'")
    base = _selection_root(op.pattern)
    kept = [m for m in matches if not excluded(m, base, op.exclude)]
    if not kept:
        raise CopyError(f"{op.text}: every file matching '{op.pattern}' is excluded")
    prefix = op.pattern[:-3] + "/" if op.pattern.endswith("/**") else None
    for match in kept:
        rel = match[len(prefix) :] if prefix and match.startswith(prefix) else match
        target = _join(dest, rel)
        if match in tree.files:
            stage.put(op, target, tree.files[match])
        else:
            _copy_dir(op, tree, stage, match, target, base=base)


def _copy_dir(op: CopyOp, tree: _Tree, stage: _Stage, src: str, dest: str, *, base: str) -> None:
    skipped: set[str] = set()
    for path in tree.under(src):
        rel = path[len(src) + 1 :] if src not in ("", ".") else path
        # A directory an exclude matches is skipped whole (WalkDir's SkipDir).
        parts = rel.split("/")
        top = src if src not in ("", ".") else ""
        dirs = [_join(top, *parts[:k]) for k in range(1, len(parts))]
        if any(d in skipped for d in dirs):
            continue
        hit = next((d for d in dirs if excluded(d, base, op.exclude)), None)
        if hit is not None:
            skipped.add(hit)
            continue
        if excluded(path, base, op.exclude):
            continue
        stage.put(op, _join(dest, rel), tree.files[path])


def build(
    recipe: ArtifactRecipe,
    files: Mapping[str, FileEntry],
    read: Callable[[Iterable[str]], dict[str, bytes]],
) -> Built:
    """The artifact `recipe` makes of `files` (a listing by path; an alias's files are
    those under its prefix). `read` gives blob contents (only `Merge` reads any).
    CopyError names the operation that failed; bounds on files and bytes."""
    prefixes = dict(recipe.aliases)
    trees: dict[str, _Tree] = {}
    stage = _Stage(read)
    for op in recipe.copy:
        if op.alias not in prefixes:
            raise CopyError(f"{op.text}: no source has the alias '{op.alias}'")
        tree = trees.get(op.alias)
        if tree is None:
            prefix = prefixes[op.alias]
            picked = {
                p[len(prefix) :]: e for p, e in files.items() if not prefix or p.startswith(prefix)
            }
            tree = trees[op.alias] = _Tree(picked)
        _apply(op, tree, stage)
    total = sum(e.size for e in stage.files.values())
    if len(stage.files) > MAX_ARTIFACT_FILES or total > MAX_ARTIFACT_BYTES:
        raise CopyError(
            f"artifact {recipe.name}: {len(stage.files)} files, {total} bytes: over the bounds "
            f"({MAX_ARTIFACT_FILES} files, {MAX_ARTIFACT_BYTES} bytes)"
        )
    if not stage.files:
        raise CopyError(f"artifact {recipe.name}: no files")
    h = hashlib.sha256()
    for path in sorted(stage.files):
        e = stage.files[path]
        h.update(f"{e.mode:o} {e.blob} {path}\n".encode())
    made = {e.blob: stage.made[e.blob] for e in stage.files.values() if e.blob in stage.made}
    return Built(files=dict(stage.files), made=made, digest=f"sha256:{h.hexdigest()}")
