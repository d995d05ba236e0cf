"""Argo CD's jsonnet: a directory source's `*.jsonnet` files evaluated to manifests.

As Argo CD's repo-server does: each `.jsonnet` file a directory source selects is evaluated
with the Application's `directory.jsonnet` external variables, top-level arguments and
library paths, and its output (an object, or an array of objects) is that file's
manifests. An import resolves relative to the importing file, then in each library path
(repository paths, in order), and only to a file of the revision: nothing outside the
repository, no symlink escape (the source's listing already resolved links), each file
under the source's size limit.

Evaluation runs in a forked child process that is killed after `TIMEOUT` (jsonnet can
loop for ever), so a runaway file fails its render, not the agent. The child only reads
the contents handed to it and writes its answer to a pipe of its own. An evaluation is
kept with the blob ids of the file and of everything it imported: a file whose inputs did
not change is not evaluated again (`Evaluations.run`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.source.ignore import JSONNET_SUFFIXES, MANIFEST_SUFFIXES
from gitkrm.source.snapshot import FileEntry, Snapshot
from gitkrm.sync.appsource_spec import JsonnetSpec
from gitkrm.sync.cache import GenerationCache
from gitkrm.sync.parse import FileError, ParseContext, ParsedFile, builtin_registry, parse_file
from gitkrm.sync.pool import prepare_child
from gitkrm.sync.problems import Problem

TIMEOUT: Final = 60.0
IMPORTABLE: Final = (*JSONNET_SUFFIXES, *MANIFEST_SUFFIXES)
"""What an import may read (the files a source lists)."""
_LOCATION: Final = re.compile(r"(?:^|\s)(?P<path>[^\s:]+):(?P<line>\d+):\d+")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One file's output (JSON documents, `---` between them) or its error; `inputs` are
    the (repository path, blob id) of the file and every file it imported."""

    key: str  # a digest of the inputs and the options: the parsed output's cache key
    inputs: tuple[tuple[str, str], ...]
    text: bytes | None = None
    error: FileError | None = None


class Evaluations:
    """One source's jsonnet evaluations, kept while their inputs stay the same."""

    def __init__(self, spec: JsonnetSpec, *, max_output: int) -> None:
        self.spec = spec
        self.max_output = max_output
        self._done: dict[str, Evaluation] = {}
        self._options = repr(spec)
        self.evaluated = 0  # files evaluated by the last run (tests and benchmarks read it)

    def respec(self, spec: JsonnetSpec) -> None:
        """Evaluate with `spec` from now on (its variables substituted for the revision:
        `gitkrm.sync.buildenv`): other values evaluate anew."""
        if spec != self.spec:
            self.spec, self._options, self._done = spec, repr(spec), {}

    def _fresh(self, path: str, files: Mapping[str, FileEntry]) -> Evaluation | None:
        done = self._done.get(path)
        if done is None:
            return None
        for p, blob in done.inputs:
            entry = files.get(p)
            if entry is None or entry.blob != blob:
                return None
        return done

    async def run(
        self,
        paths: Sequence[str],
        *,
        files: Mapping[str, FileEntry],
        read: Callable[[Iterable[str]], dict[str, bytes]],
        max_file_size: int,
    ) -> dict[str, Evaluation]:
        """The evaluation of each of `paths` (repository paths) in the revision whose files
        (by repository path) are `files`; `read` reads contents by repository path."""
        todo = [p for p in paths if self._fresh(p, files) is None]
        self.evaluated = len(todo)
        if todo:
            importable = [
                p for p, e in files.items() if p.endswith(IMPORTABLE) and e.size <= max_file_size
            ]
            contents = read(importable)
            answers = await _in_child(todo, contents, self.spec, self.max_output)
            for path, (text, error, imported) in zip(todo, answers, strict=True):
                inputs = tuple(sorted((p, files[p].blob) for p in {path, *imported}))
                digest = hashlib.sha256(f"{self._options}\0{inputs!r}".encode()).hexdigest()
                self._done[path] = Evaluation(digest, inputs, text, error)
        self._done = {p: self._done[p] for p in paths}  # files no longer selected go
        return dict(self._done)


_Answer = tuple[bytes | None, FileError | None, tuple[str, ...]]


async def _in_child(
    paths: Sequence[str], contents: Mapping[str, bytes], spec: JsonnetSpec, max_output: int
) -> list[_Answer]:
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(os.getpid(), send, paths, contents, spec, max_output))
    child.start()
    send.close()
    try:
        async with asyncio.timeout(TIMEOUT):
            answers: list[_Answer] = await asyncio.to_thread(receive.recv)
        return answers
    except TimeoutError:
        message = f"jsonnet evaluation did not finish within {TIMEOUT:g}s"
    except EOFError:
        message = f"jsonnet evaluation failed (the evaluating process ended: {child.exitcode})"
    finally:
        if child.is_alive():
            child.kill()
        await asyncio.to_thread(child.join)
        child.close()
        receive.close()
    return [(None, FileError(0, None, message), ()) for _ in paths]


def _child(
    parent: int,
    send: Any,
    paths: Sequence[str],
    contents: Mapping[str, bytes],
    spec: JsonnetSpec,
    limit: int,
) -> None:
    prepare_child(parent)  # its pipe to the agent is no socket: it stays
    send.send([evaluate(p, contents, spec, max_output=limit) for p in paths])
    send.close()


def evaluate(
    path: str, contents: Mapping[str, bytes], spec: JsonnetSpec, *, max_output: int
) -> _Answer:
    """Evaluate one file (in the child; a pure function of its arguments)."""
    import _jsonnet  # type: ignore[import-untyped]  # only here: the child's first need

    imported: set[str] = set()

    def load(directory: str, rel: str) -> tuple[str, bytes]:
        for base in (directory, *spec.libs):
            found = _resolve(base, rel, contents)
            if found is not None:
                imported.add(found)
                return found, contents[found]
        raise RuntimeError("no such file in the revision (imports resolve relative to the "
                           "importing file, then in directory.jsonnet.libs)")  # fmt: skip

    def split(vars_: Sequence[Any], code: bool) -> dict[str, str]:
        return {v.name: v.value for v in vars_ if v.code is code}

    try:
        out = _jsonnet.evaluate_snippet(
            path, contents[path].decode("utf-8", "replace"),
            ext_vars=split(spec.ext_vars, False), ext_codes=split(spec.ext_vars, True),
            tla_vars=split(spec.tlas, False), tla_codes=split(spec.tlas, True),
            import_callback=load, max_trace=10,
        )  # fmt: skip
    except RuntimeError as e:
        return None, _located(str(e), path), tuple(imported)
    if len(out) > max_output:
        error = FileError(0, None, f"jsonnet output is {len(out):,} bytes, over {max_output:,}")
        return None, error, tuple(imported)
    value = json.loads(out)
    docs = value if isinstance(value, list) else [value]
    if not all(isinstance(d, dict) for d in docs):
        message = "jsonnet output must be an object or an array of objects"
        return None, FileError(0, None, message), tuple(imported)
    text = "".join("---\n" + json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
    return text.encode(), None, tuple(imported)


def _resolve(base: str, rel: str, contents: Mapping[str, bytes]) -> str | None:
    if rel.startswith("/"):
        return None
    path = posixpath.normpath(posixpath.join(base, rel))
    if path == ".." or path.startswith("../") or path not in contents:
        return None
    return path


def _located(message: str, path: str) -> FileError:
    """jsonnet's error, at the line it names in `path` (the first frame there)."""
    line = 0
    for m in _LOCATION.finditer(message):
        if m.group("path") == path:
            line = int(m.group("line"))
            break
    text = " ".join(part.strip() for part in message.strip().splitlines()[:4])
    return FileError(line, None, text)


class JsonnetStage:
    """The renderer's jsonnet step: a directory source's `*.jsonnet` files to parsed files
    (each output parsed once per evaluation)."""

    def __init__(self, spec: JsonnetSpec, *, context: ParseContext, max_file_size: int) -> None:
        self.context = context
        self.max_file_size = max_file_size
        self.spec = spec
        self.evaluations = Evaluations(spec, max_output=context.max_bytes)
        self._parsed: GenerationCache[str, ParsedFile] = GenerationCache()

    async def outputs(
        self,
        paths: Sequence[str],
        snapshot: Snapshot,
        *,
        prefix: str,
        variables: Mapping[str, str] | None = None,
    ) -> tuple[list[tuple[str, str, ParsedFile]], list[Problem]]:
        """(path shown, cache key, parsed file) of each file of `paths` (relative to the
        source path, under the repository path `prefix`), and the problems; `variables`:
        Argo CD's build environment for this revision (`gitkrm.sync.buildenv`)."""
        if variables is not None:
            from gitkrm.sync import buildenv

            self.evaluations.respec(buildenv.jsonnet(self.spec, variables))
        tree = snapshot.tree
        files = tree.files if tree is not None else snapshot.files
        repo = {p: posixpath.join(prefix, p) if prefix else p for p in paths}
        done = await self.evaluations.run(
            list(repo.values()), files=files, read=snapshot.read_tree,
            max_file_size=self.max_file_size,
        )  # fmt: skip
        outputs: list[tuple[str, str, ParsedFile]] = []
        problems: list[Problem] = []
        for shown, path in repo.items():
            ev = done[path]
            if ev.error is not None:
                e = ev.error
                problems.append(Problem(shown, e.line or None, e.object, e.message))
                continue
            assert ev.text is not None
            pf = self._parsed.get(ev.key)
            if pf is None:
                pf = parse_file(shown, ev.text, ctx=self.context, registry=builtin_registry())
                self._parsed.put(ev.key, pf)
            outputs.append((shown, ev.key, pf))
        self._parsed.rotate()
        return outputs, problems
