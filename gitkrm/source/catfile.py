"""Reading blobs straight from a repository's object database through one long-lived
`git cat-file --batch-command --buffer` process (started by the repository's `GitRunner`):
no checkout, no process per file, ref or object looked up."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Final

from gitkrm.errors import NotFound

from .gitcli import CorruptCache, GitRunner

log = logging.getLogger(__name__)

_CHUNK = 256  # requests per flush: keeps the request pipe far below its buffer size
CLOSE_TIMEOUT: Final = 5.0  # seconds git may take to end once its input is closed

_readers: weakref.WeakSet[CatFile] = weakref.WeakSet()


def _release_in_child() -> None:
    """A forked child (a parse worker) must not hold a reader's pipes. Holding the write
    end of cat-file's stdin, it would keep git from seeing EOF when the agent closes it,
    and every `run --once`, `diff` and shutdown would wait out CLOSE_TIMEOUT."""
    for reader in list(_readers):
        reader._release()


os.register_at_fork(after_in_child=_release_in_child)


class CatFile:
    """A thread-safe reader of objects by id (or `rev:path`) from one bare repository."""

    def __init__(self, git_dir: Path, *, runner: GitRunner | None = None) -> None:
        self._git_dir = git_dir
        self.runner = runner or GitRunner(git_dir=git_dir)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        _readers.add(self)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The running process's stdin and stdout, starting it when needed."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self.runner.popen("cat-file", "--batch-command", "--buffer")
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None
        assert stdout is not None
        return stdin, stdout

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        """Contents by id; a missing id is `NotFound`, a damaged repository `CorruptCache`."""
        out: dict[str, bytes] = {}
        missing: list[str] = []
        for name, data in self.read_objects(blob_ids).items():
            if data is None:
                missing.append(name)
            else:
                out[name] = data
        if missing:
            raise NotFound(f"object(s) {', '.join(sorted(missing)[:5])} missing from the cache")
        return out

    def info_type(self, name: str) -> str | None:
        """The type of an object (`blob`, `tree`, `commit`, `tag`), None if it is absent."""
        found = self.info(name)
        return None if found is None else found[1]

    def info(self, name: str) -> tuple[str, str, int] | None:
        """(id, type, size) of the object `name` names (an id, a ref, `rev:path`, any
        revision expression), None if there is none. Refs are read anew on every call."""
        if "\n" in name:
            return None  # not a name git could have (and it would end the request line)
        with self._lock:
            try:
                stdin, stdout = self._pipes()
                stdin.write(b"info %s\nflush\n" % name.encode())
                stdin.flush()
                header = stdout.readline()
            except (BrokenPipeError, OSError) as e:
                self._kill()
                raise CorruptCache(f"reading the cache {self._git_dir} failed: {e}") from None
        if not header:
            self._kill()
            raise CorruptCache(f"reading {name} from the cache {self._git_dir} failed")
        if header.endswith((b" missing\n", b" ambiguous\n")):
            return None
        parts = header.split()
        if len(parts) != 3 or not parts[2].isdigit():
            self._kill()
            raise CorruptCache(f"unexpected cat-file answer {header[:80]!r} for {name}")
        return parts[0].decode(), parts[1].decode(), int(parts[2])

    def exists(self, name: str) -> bool:
        return self.info_type(name) is not None

    def read_objects(self, names: Iterable[str]) -> dict[str, bytes | None]:
        """Contents by name, None for names that don't exist (e.g. an absent `rev:path`)."""
        todo = list(dict.fromkeys(names))
        out: dict[str, bytes | None] = {}
        with self._lock:
            try:
                stdin, stdout = self._pipes()
                for i in range(0, len(todo), _CHUNK):
                    chunk = todo[i : i + _CHUNK]
                    stdin.write(b"".join(b"contents %s\n" % n.encode() for n in chunk) + b"flush\n")
                    stdin.flush()
                    for name in chunk:
                        out[name] = _read_one(stdout, name)
            except (BrokenPipeError, OSError, ValueError, EOFError) as e:
                self._kill()
                raise CorruptCache(
                    f"reading objects from the cache {self._git_dir} failed: {e}"
                ) from None
        return out

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for f in (self._proc.stdin, self._proc.stdout):
                if f is not None:
                    f.close()
            self._proc = None

    def _release(self) -> None:
        """In a forked child: point this reader's pipe descriptors at /dev/null (the
        parent's pipes are let go; the numbers stay valid for the file objects, whose
        buffers the child never flushes into git)."""
        proc = self._proc
        if proc is None:
            return
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    os.dup2(null, f.fileno())
        finally:
            os.close(null)

    def close(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self._proc.stdin:
                try:
                    self._proc.stdin.close()
                    self._proc.wait(timeout=CLOSE_TIMEOUT)
                except subprocess.TimeoutExpired:
                    log.warning(
                        "git cat-file did not end within %ss of its input closing "
                        "(another process holds the pipe)",
                        CLOSE_TIMEOUT,
                    )
                except OSError:
                    pass
            self._kill()


def _read_one(stdout: IO[bytes], name: str) -> bytes | None:
    header = stdout.readline()
    if not header:
        raise EOFError(f"git cat-file ended while reading {name}")
    if header.endswith((b" missing\n", b" ambiguous\n")):
        return None
    parts = header.rstrip(b"\n").split(b" ")
    if len(parts) != 3:
        raise ValueError(f"unexpected cat-file answer {header[:80]!r} for {name}")
    size = int(parts[2])
    data = stdout.read(size + 1)
    if len(data) != size + 1:
        raise EOFError(f"git cat-file ended while reading {name}")
    return data[:size]
