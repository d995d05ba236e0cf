"""The notes of one agent in one cache repository: read, merge by source, write.

Several sources of one agent may sync the same commit; each writes its own key of the
commit's note and keeps the others' (read-modify-write). The last note written per commit
is remembered with its blob id, so the usual update does not parse YAML at all; a note
that holds only the entries being replaced is not read either.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from gitkrm.errors import Invalid

from .formats import (
    NOTE_KIND,
    merge_notes,
    note_document,
    notes_ref,
    parse,
    render,
    source_names,
)
from .repo import NoteCommit, ReportRepo, Written, blob_id

log = logging.getLogger("gitkrm.report")

_CACHED = 64


class NoteBook:
    """`refs/notes/gitkrm/<agent>` of one repository. Callers serialize writes."""

    def __init__(self, repo: ReportRepo, *, agent: str) -> None:
        self.repo = repo
        self.agent = agent
        self.ref = notes_ref(agent)
        self._docs: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()

    async def read(self, commit: str, *, ref: str | None = None) -> dict[str, Any] | None:
        """The note of `commit` (None if there is none; a note that is not ours is None
        too, and will be replaced by the next write)."""
        blob = await self.repo.note_blob(ref or self.ref, commit)
        if blob is None:
            return None
        return await self._doc(commit, blob)

    async def _doc(self, commit: str, blob: str) -> dict[str, Any] | None:
        hit = self._docs.get(commit)
        if hit is not None and hit[0] == blob:
            return hit[1]
        return await self._parse(commit, await self.repo.read_blob(blob))

    async def _parse(self, commit: str, data: bytes) -> dict[str, Any] | None:
        try:
            return await asyncio.to_thread(
                parse, data, kind=NOTE_KIND, what=f"note of {commit[:12]} in {self.ref}"
            )
        except Invalid as e:
            log.warning("%s; it will be replaced", e.message)
            return None

    def _remember(self, commit: str, blob: str, doc: dict[str, Any]) -> None:
        self._docs[commit] = (blob, doc)
        self._docs.move_to_end(commit)
        while len(self._docs) > _CACHED:
            self._docs.popitem(last=False)

    async def prepare(
        self, commit: str, entries: Mapping[str, Mapping[str, Any]]
    ) -> tuple[NoteCommit, dict[str, Any]] | None:
        """The write that sets the `entries` (source -> entry) of `commit`'s note, keeping
        other sources' (with the document it writes); None when the note already says
        exactly that. Written with `ReportRepo.commit`, then `written`."""
        blob = await self.repo.note_blob(self.ref, commit)
        base: dict[str, Any] | None = None
        hit = self._docs.get(commit)
        if hit is not None and hit[0] == blob:
            base = hit[1]
        elif blob is not None:
            data = await self.repo.read_blob(blob)
            names = source_names(data, kind=NOTE_KIND)
            if names is None or not names <= entries.keys():
                base = await self._parse(commit, data)  # other sources' entries to keep
        sources = dict((base or {}).get("sources") or {})
        sources.update(entries)
        doc = note_document(self.agent, sources)
        data = await asyncio.to_thread(render, doc)
        if blob is not None and blob_id(data, like=blob) == blob:
            self._remember(commit, blob, doc)
            return None
        return NoteCommit(self.ref, commit, content=data), doc

    def written(self, commit: str, done: Written, doc: dict[str, Any]) -> None:
        self._remember(commit, done.blob, doc)

    async def write(self, commit: str, entries: Mapping[str, Mapping[str, Any]]) -> bool:
        """Set the `entries` (source -> entry) of `commit`'s note, keeping other sources'.
        False when the note already said exactly that."""
        planned = await self.prepare(commit, entries)
        if planned is None:
            return False
        write, doc = planned
        [done] = await self.repo.commit([write], parents={self.ref: await self.repo.rev(self.ref)})
        self.written(commit, done, doc)
        return True

    async def rebase(self, remote_ref: str) -> None:
        """Make our notes ref a descendant of `remote_ref` (the remote's notes, fetched),
        keeping every source entry of both sides (the one updated last where both have it)."""
        remote = await self.repo.rev(remote_ref)
        if remote is None:
            return
        local = await self.repo.rev(self.ref)
        if local is None:
            await self.repo.update_ref(self.ref, remote, old=None, message="gitkrm: notes")
            return
        if await self.repo.is_ancestor(remote, local):
            return
        if await self.repo.is_ancestor(local, remote):
            await self.repo.update_ref(self.ref, remote, old=local, message="gitkrm: notes")
            return
        ours = await self.repo.notes(self.ref)
        theirs = await self.repo.notes(remote_ref)
        merged: dict[str, dict[str, Any]] = {}
        for commit, blob in ours.items():
            if theirs.get(commit) == blob:
                continue
            mine = await self._doc(commit, blob)
            if mine is None:
                continue
            other = await self._doc(commit, theirs[commit]) if commit in theirs else None
            merged[commit] = merge_notes(other or {}, mine)
        await self.repo.update_ref(self.ref, remote, old=local, message="gitkrm: notes rebase")
        commits = list(merged)
        rendered = [await asyncio.to_thread(render, merged[c]) for c in commits]
        writes = [
            NoteCommit(self.ref, c, content=data) for c, data in zip(commits, rendered, strict=True)
        ]
        done = await self.repo.commit(writes, parents={self.ref: remote}) if writes else []
        for commit, result in zip(commits, done, strict=True):
            self._remember(commit, result.blob, merged[commit])
        log.debug("notes %s rebased onto the remote's (%d merged)", self.ref, len(merged))
