"""`validate` predicts `run`: one repository through both CLI commands, compared.

`assert_validate_predicts_run` runs `gitkrm validate` on a work tree's directory and
`gitkrm run --once` on the same commit of its bare remote, and asserts the same verdict
and, when both accept it, the same set of objects (validate's rendered keys against the
inventory `run` wrote). Reusable for any repository: give the work tree, the remote URL
and the source path.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.krm import GVK
from tests.source.source_gitrepo import ENV

_CM = GVK(group="", version="v1", kind="ConfigMap")
_INVENTORY_LABEL = "cli-utils.sigs.k8s.io/inventory-id"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One command's verdict, the object keys it rendered or applied, and what it said."""

    ok: bool
    keys: frozenset[str]
    output: str


def gitkrm_cli(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`gitkrm ARGS` as a process (kubectl on PATH for kustomize builds)."""
    env = {**ENV, "PATH": f"/usr/lib/google-cloud-sdk/bin:{ENV.get('PATH', '/usr/bin:/bin')}"}
    return subprocess.run(
        [sys.executable, "-m", "gitkrm.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _exit_verdict(res: subprocess.CompletedProcess[str], what: str) -> bool:
    if res.returncode not in (0, 1):
        raise AssertionError(f"{what} exited {res.returncode}: {res.stderr}")
    return res.returncode == 0


def validate_outcome(
    directory: Path, *, namespace: str | None = None, extra: Sequence[str] = ()
) -> Outcome:
    """`gitkrm validate DIRECTORY` (its exit code), and the keys the same validation renders."""
    from gitkrm.sync.validate import validate_paths

    flags = [*(["--namespace", namespace] if namespace else []), *extra]
    res = gitkrm_cli("validate", str(directory), *flags, cwd=directory)
    ok = _exit_verdict(res, "gitkrm validate")
    report = validate_paths([directory], namespace=namespace, server_side="server-side" in extra)
    assert report.ok == ok, (report.problems, res.stderr)
    return Outcome(ok, report.keys if ok else frozenset(), res.stdout + res.stderr)


async def inventory_keys(state: Path) -> frozenset[str]:
    """The object keys of every inventory ConfigMap in the embedded store of `state`."""
    from gitkrm.store import open_store

    store = await open_store("sqlite:///" + str((state / "store.db").resolve()), read_only=True)
    try:
        listed = await store.list(_CM, namespace="gitkrm-system", label_selector=_INVENTORY_LABEL)
        return frozenset(k for item in listed["items"] for k in (item.get("data") or {}))
    finally:
        await store.close()


def run_outcome(
    url: str,
    *,
    state: Path,
    path: str = "",
    namespace: str | None = None,
    extra: Sequence[str] = (),
) -> Outcome:
    """`gitkrm run --once` of the remote's `main` into a fresh embedded store in `state`."""
    flags = [
        *(["--path", path] if path else []),
        *(["--namespace", namespace] if namespace else []),
    ]
    res = gitkrm_cli(
        "run", "--once", "--repo", url, "--state", str(state), *flags, *extra, cwd=state.parent
    )
    ok = _exit_verdict(res, "gitkrm run --once")
    keys = asyncio.run(inventory_keys(state)) if ok else frozenset()
    return Outcome(ok, keys, res.stdout + res.stderr)


def assert_validate_predicts_run(
    work: Path,
    url: str,
    *,
    state: Path,
    path: str = "",
    namespace: str | None = None,
    extra: Sequence[str] = (),
) -> tuple[Outcome, Outcome]:
    """Both commands over one repository: the same verdict, and the same objects."""
    checked = validate_outcome(work / path if path else work, namespace=namespace, extra=extra)
    synced = run_outcome(url, state=state, path=path, namespace=namespace, extra=extra)
    assert checked.ok == synced.ok, (
        f"validate says {'valid' if checked.ok else 'invalid'}, run "
        f"{'synced' if synced.ok else 'refused'}:\n{checked.output}\n---\n{synced.output}"
    )
    if synced.ok:
        assert checked.keys == synced.keys, (checked.keys ^ synced.keys, synced.output)
    return checked, synced


def assert_both_refuse(
    work: Path,
    url: str,
    *,
    state: Path,
    path: str = "",
    naming: Sequence[str] = (),
    never: Sequence[str] = (),
) -> tuple[Outcome, Outcome]:
    """`assert_validate_predicts_run` of a repository both commands refuse: each says every
    text of `naming` and none of `never`."""
    checked, synced = assert_validate_predicts_run(work, url, state=state, path=path)
    assert not synced.ok, synced.output
    for out in (checked.output, synced.output):
        for text in naming:
            assert text in out, out
        for text in never:
            assert text not in out, out
    return checked, synced
