"""SOPS-encrypted inputs of kustomize builds, decrypted in memory (Flux's DecryptSources).

Flux decrypts, before a build, the files that kustomizations read as data: the `files`
and `envs` of each `secretGenerator` (a `.env` file as dotenv, other files by their key's
name) and the `path` of each patch, when they carry SOPS's MAC line. kustomize reads files
from a directory, and decrypted bytes must never touch a disk: each such file is a FIFO in
the build directory, and a thread writes the plaintext into it each time kustomize opens
it. The MAC of each is checked; a file that fails names itself and fails the build.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gitkrm.errors import BadRequest
from gitkrm.sync import kustomize
from gitkrm.sync.postbuild import PostBuild

_JOIN_TIMEOUT = 5.0
_POLL = 0.05  # s: how often a waiting feeder checks whether the build is over


def _inputs(kpath: str, text: bytes) -> list[tuple[str, str]]:
    """(path, name whose extension says the format) of what one kustomization reads."""
    try:
        doc: Any = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict):
        return []
    d = posixpath.dirname(kpath)
    out: list[tuple[str, str]] = []

    def add(ref: Any, name: str, *, env: bool = False) -> None:
        if isinstance(ref, str) and ref and "://" not in ref:
            path = posixpath.normpath(posixpath.join(d or ".", ref))
            out.append((path, name if not env or name.endswith(".env") else name + ".env"))

    for gen in doc.get("secretGenerator") or ():
        if not isinstance(gen, dict):
            continue
        for f in gen.get("files") or ():
            if isinstance(f, str):
                key, _, ref = f.partition("=")
                add(ref or key, key)
        envs = list(gen.get("envs") or ())
        if gen.get("env"):
            envs.append(gen["env"])
        for e in envs:
            add(e, str(e), env=True)
    for patch in doc.get("patches") or ():
        if isinstance(patch, dict):
            add(patch.get("path"), str(patch.get("path")))
    return out


def verify_resources(
    contents: Mapping[str, bytes], inputs: Mapping[str, bytes], *, keys: Sequence[str]
) -> None:
    """Check the MAC of every SOPS-encrypted manifest among `contents` as the repository
    holds it: after the build, kustomize will have added fields (a namespace, labels) that
    the MAC does not cover, so Flux skips the check there; gitkrm makes it here, before.
    BadRequest naming the file that fails."""
    from gitkrm.sync import sops
    from gitkrm.sync.postbuild import segments

    for path, data in sorted(contents.items()):
        if path in inputs or not path.endswith((".yaml", ".yml", ".json")):
            continue
        if (
            sops.MARKERS[sops.Format.YAML] not in data
            and sops.MARKERS[sops.Format.JSON] not in data
        ):
            continue
        text = data.decode("utf-8", "replace")
        try:
            if path.endswith(".json"):
                sops.decrypt_document(text, json_text=True, keys=keys)
                continue
            for seg in segments(text):
                sops.decrypt_document(text[seg.start : seg.end], json_text=False, keys=keys)
        except sops.SopsError as e:
            raise BadRequest(f"{path}: SOPS decryption failed: {e}") from None
        except yaml.YAMLError:
            continue  # not YAML: kustomize says what it thinks of it


def decrypt_inputs(contents: Mapping[str, bytes], *, keys: Sequence[str]) -> dict[str, bytes]:
    """The encrypted inputs of the kustomizations among `contents`, decrypted (path ->
    plaintext); BadRequest naming the file that fails."""
    from gitkrm.sync import sops

    out: dict[str, bytes] = {}
    for kpath in sorted(contents):
        if posixpath.basename(kpath) not in kustomize.KUSTOMIZATION_NAMES:
            continue
        for path, name in _inputs(kpath, contents[kpath]):
            data = contents.get(path)
            if data is None or path in out:
                continue
            fmt = sops.format_for_path(name)
            marker = sops.MARKERS.get(fmt, sops.MARKERS[sops.Format.JSON])
            if marker not in data:
                continue
            try:
                out[path] = sops.decrypt_file(data, fmt=fmt, out=fmt, keys=keys)
            except sops.SopsError as e:
                raise BadRequest(f"{path}: SOPS decryption failed: {e}") from None
    return out


_IN_CLOSE_NOWRITE = 0x10
_EVENT_SIZE = 16  # struct inotify_event without its name


class _ReaderCloses:
    """inotify on one FIFO: tells when a reader closes it (Linux; None elsewhere)."""

    def __init__(self, path: Path) -> None:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
        if self.fd < 0 or libc.inotify_add_watch(self.fd, bytes(path), _IN_CLOSE_NOWRITE) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def wait(self, stop: threading.Event) -> None:
        """Until a reader closes the FIFO (or `stop`)."""
        import select

        while not stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], _POLL)
            if ready:
                os.read(self.fd, 64 * _EVENT_SIZE)
                return

    def close(self) -> None:
        os.close(self.fd)


def _feed(path: Path, data: bytes, stop: threading.Event) -> None:
    """Write `data` to each reader of the FIFO in turn: after a reader was served, the
    next open waits until it closed (kustomize may open a file twice, and a reader that
    has not yet seen the end of the file must not be served again)."""
    try:
        closes: _ReaderCloses | None = _ReaderCloses(path)
    except (OSError, AttributeError):
        closes = None  # no inotify: each reader until the first is served once
    try:
        while not stop.is_set():
            try:
                fd = os.open(path, os.O_WRONLY)  # waits for a reader
            except OSError:
                return
            try:
                if stop.is_set():
                    return
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except BrokenPipeError:
                pass
            finally:
                os.close(fd)
            if closes is None:
                return
            closes.wait(stop)
    finally:
        if closes is not None:
            closes.close()


@contextlib.contextmanager
def fed(base: Path, plain: Mapping[str, bytes]) -> Iterator[None]:
    """FIFOs under `base` that serve `plain` (path -> bytes) while the block runs."""
    stop = threading.Event()
    feeders: list[tuple[Path, threading.Thread]] = []
    try:
        for rel, data in plain.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(path, 0o600)
            t = threading.Thread(target=_feed, args=(path, data, stop), daemon=True)
            t.start()
            feeders.append((path, t))
        yield
    finally:
        stop.set()
        for path, t in feeders:
            try:  # a feeder waiting for a reader gets one, sees `stop` and leaves
                fd: int | None = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                fd = None
            t.join(_JOIN_TIMEOUT)
            if fd is not None:
                os.close(fd)


async def build(
    root: str,
    contents: Mapping[str, bytes],
    postbuild: PostBuild | None,
    *,
    root_only: bool = False,
) -> bytes:
    """`kustomize.build`, with the SOPS-encrypted inputs served decrypted when the source
    decrypts (`root_only`: kustomize's default load restrictions, as Argo CD)."""
    if postbuild is None or not postbuild.decrypt:
        return await kustomize.build(root, contents, root_only=root_only)
    plain = decrypt_inputs(contents, keys=postbuild.identities)
    verify_resources(contents, plain, keys=postbuild.identities)
    if not plain:
        return await kustomize.build(root, contents, root_only=root_only)
    rest = {p: b for p, b in contents.items() if p not in plain}
    return await kustomize.build(
        root, rest, fifos=lambda base: fed(base, plain), root_only=root_only
    )
