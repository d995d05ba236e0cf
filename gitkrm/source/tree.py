"""From a raw tree (files and symlinks under the source root) to the files a source lists.

Shared by Git and plain directories: ignore rules and manifest names select the files,
symlinks are resolved inside the root (a link that leaves it is an error naming the link),
and files over the size bound are errors naming the file. Every problem is reported, not
only the first.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from gitkrm.errors import Cause

from .ignore import IgnoreRules, is_manifest_name, select
from .snapshot import MODE_SYMLINK

DEFAULT_MAX_FILE_SIZE = 8 * 1024 * 1024
_MAX_HOPS = 40  # as the kernel's ELOOP limit


@dataclass(frozen=True, slots=True)
class RawEntry:
    """A file or symlink of the raw tree; `ref` is the caller's handle (blob id or path)."""

    mode: int
    size: int
    ref: str


@dataclass(slots=True)
class Listing:
    """Listed path -> the raw entry its content comes from (itself, or a link's target)."""

    files: dict[str, RawEntry] = field(default_factory=dict)
    causes: list[Cause] = field(default_factory=list)


class _Escape(Exception):
    pass


class _Missing(Exception):
    pass


class _Resolver:
    def __init__(self, entries: Mapping[str, RawEntry], targets: Mapping[str, str]) -> None:
        self.entries = entries
        self.targets = targets
        self._dirs: set[str] | None = None

    @property
    def dirs(self) -> set[str]:
        """Every directory of the tree; computed only when a link needs it."""
        if self._dirs is None:
            self._dirs = {""}
            for p in self.entries:
                d = p.rpartition("/")[0]
                while d not in self._dirs:
                    self._dirs.add(d)
                    d = d.rpartition("/")[0]
        return self._dirs

    def resolve(self, link: str) -> str:
        """The real path (inside the root) the link leads to, component by component."""
        hops = 0
        pending = self._split(self.targets[link], posixpath.dirname(link))
        done: list[str] = []
        while pending:
            part = pending.pop(0)
            if part == "..":
                if not done:
                    raise _Escape
                done.pop()
                continue
            candidate = "/".join([*done, part])
            if candidate in self.targets:
                hops += 1
                if hops > _MAX_HOPS:
                    raise _Missing("too many levels of symbolic links")
                pending = self._split(self.targets[candidate], "/".join(done)) + pending
                done = []
                continue
            done.append(part)
        path = "/".join(done)
        if path in self.entries or path in self.dirs:
            return path
        raise _Missing("does not exist")

    @staticmethod
    def _split(target: str, base: str) -> list[str]:
        if target.startswith("/"):
            raise _Escape
        joined = f"{base}/{target}" if base else target
        return [p for p in joined.split("/") if p not in ("", ".")]


def _relevant_link(path: str) -> bool:
    """Links a source would follow: manifest names, and names without a suffix (a
    directory link usually has none)."""
    name = posixpath.basename(path)
    return is_manifest_name(path) or "." not in name.lstrip(".")


def _candidates(
    entries: Mapping[str, RawEntry],
    *,
    link_targets: Mapping[str, str],
    rules: IgnoreRules,
    prefix: str,
    every_link: bool,
) -> tuple[dict[str, RawEntry], list[Cause]]:
    """Files and resolved symlinks (a link to a directory brings its files under the
    link's path); the links that leave the root or lead nowhere, as causes."""
    causes: list[Cause] = []
    res = _Resolver(entries, link_targets)
    candidates: dict[str, RawEntry] = {}
    for path, entry in entries.items():
        if entry.mode != MODE_SYMLINK:
            candidates[path] = entry
            continue
        if rules.ignored(prefix + path) or not (every_link or _relevant_link(path)):
            continue
        target = link_targets.get(path, "")
        try:
            real = res.resolve(path)
        except _Escape:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    f"symlink to {target!r} leaves the source root",
                    prefix + path,
                )
            )
            continue
        except _Missing as e:
            causes.append(Cause("FieldValueNotFound", f"symlink to {target!r}: {e}", prefix + path))
            continue
        if real in entries:
            if entries[real].mode != MODE_SYMLINK:
                candidates[path] = entries[real]
            continue
        # A link to a directory: its files appear under the link's path.
        base = real + "/" if real else ""
        for sub, sub_entry in entries.items():
            if sub.startswith(base) and sub_entry.mode != MODE_SYMLINK:
                candidates[f"{path}/{sub[len(base) :]}"] = sub_entry
    return candidates, causes


def list_tree(
    entries: Mapping[str, RawEntry],
    *,
    link_targets: Mapping[str, str],
    rules: IgnoreRules,
    prefix: str = "",
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> Listing:
    """Select, resolve and bound-check the raw tree of one revision.

    `entries` are relative to the source root; `prefix` is the root's path in the repository
    (ignore files and the files that errors name are in repository coordinates);
    `link_targets` holds each symlink's target.
    """
    out = Listing()
    candidates, out.causes = _candidates(
        entries, link_targets=link_targets, rules=rules, prefix=prefix, every_link=False
    )
    by_repo_path = {prefix + p: p for p in candidates}
    for repo_path in sorted(select(by_repo_path.keys(), rules)):
        path = by_repo_path[repo_path]
        entry = candidates[path]
        if entry.size > max_file_size:
            out.causes.append(
                Cause(
                    "FieldValueTooLong",
                    f"file is {entry.size:,} bytes, over the limit of {max_file_size:,}",
                    repo_path,
                )
            )
            continue
        out.files[path] = entry
    return out


def list_repository(
    entries: Mapping[str, RawEntry], *, link_targets: Mapping[str, str], rules: IgnoreRules
) -> tuple[dict[str, RawEntry], dict[str, str]]:
    """What a kustomize build may read: every file of the whole repository that no ignore
    rule excludes (any name, not only manifests), symlinks resolved inside the repository.
    A link that leaves the repository or leads nowhere is refused, by path with the reason,
    and named only when a build reaches it."""
    candidates, causes = _candidates(
        entries, link_targets=link_targets, rules=rules, prefix="", every_link=True
    )
    files = {p: e for p, e in candidates.items() if not rules.ignored(p)}
    refused = {c.field: c.message.replace("source root", "repository") for c in causes}
    return files, refused
