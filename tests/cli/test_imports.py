"""The CLI imports only what a command uses: parsing the arguments of any command (and
`--help`) loads no agent, server, controllers, sync engine, store or aiohttp."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = (
    "aiohttp",
    "starlette",
    "uvicorn",
    "git",  # GitPython
    "gitkrm.agent.agent",
    "gitkrm.agent.leader",
    "gitkrm.controllers",
    "gitkrm.server",
    "gitkrm.store.sqlite",
    "gitkrm.store.kube",
    "gitkrm.sync.engine",
    "gitkrm.report",
    "gitkrm.schema",
)

PROBE = """
import sys
from gitkrm.cli.main import build_parser
parser = build_parser()
for argv in {argvs!r}:
    parser.parse_args(argv)
heavy = sorted(
    m for m in sys.modules
    if any(m == h or m.startswith(h + ".") for h in {heavy!r})
)
print(",".join(heavy))
"""

ARGVS = [
    ["run", "--repo", "x", "--once"],
    ["diff", "--repo", "x"],
    ["validate", "x"],
    ["serve"],
    ["get", "deploy"],
    ["status"],
    ["history"],
]


def test_parsing_any_command_imports_nothing_heavy() -> None:
    code = PROBE.format(argvs=ARGVS, heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", f"parsing imported: {out.stdout.strip()}"


def test_the_probe_sees_a_heavy_import() -> None:
    """The probe itself works: importing the agent is reported."""
    code = "import gitkrm.agent.agent\n" + PROBE.format(argvs=[], heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "gitkrm.agent.agent" in out.stdout.split(",")


@pytest.mark.parametrize(
    ("light", "heavy"),
    [
        ("gitkrm.cli.run_cmd:LEASE_NAMESPACE", "gitkrm.agent.leader:NAMESPACE"),
        ("gitkrm.cli.run_cmd:LEASE_NAMESPACE_ENV", "gitkrm.agent.leader:LEASE_NAMESPACE_ENV"),
        ("gitkrm.cli.serve_cmd:DEFAULT_LISTEN", "gitkrm.server.serve:DEFAULT_LISTEN"),
        ("gitkrm.cli.run_cmd:DEFAULT_LISTEN", "gitkrm.server.serve:DEFAULT_LISTEN"),
    ],
)
def test_constants_the_parser_repeats_stay_equal(light: str, heavy: str) -> None:
    """The parser spells a few defaults itself rather than import their heavy modules."""
    import importlib

    def value(spec: str) -> object:
        module, _, name = spec.partition(":")
        return getattr(importlib.import_module(module), name)

    assert value(light) == value(heavy)


def test_source_name_default_in_help_is_the_real_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gitkrm.agent.config import DEFAULT_SOURCE_NAME
    from gitkrm.cli.main import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert f"(default: {DEFAULT_SOURCE_NAME})" in " ".join(text.split())
