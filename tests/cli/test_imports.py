"""The CLI imports only what a command uses: parsing the arguments of any command (and
`--help`) loads no agent, server, controllers, sync engine, store or aiohttp."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.sync.sync_helpers import Remote, configmap

HEAVY = (
    "aiohttp",
    "starlette",
    "uvicorn",
    "git",  # GitPython (no longer a dependency: never imported)
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


RUN_PROBE = """
import sys
from gitkrm.cli.main import main
code = main({argv!r})
loaded = sorted(
    m for m in sys.modules
    if any(m == h or m.startswith(h + ".") for h in {heavy!r})
)
print("LOADED=" + ",".join(loaded))
sys.exit(code)
"""

# What `run --once` needs only when it syncs, or only with --wait or --listen.
NOT_FOR_NOTHING_TO_DO = (
    "aiohttp",
    "apscheduler",
    "git",  # GitPython (no longer a dependency)
    "gitkrm.agent.api",
    "gitkrm.agent.cluster",
    "gitkrm.agent.steering",
    "gitkrm.controllers.manager",
    "gitkrm.controllers.runtime",
    "gitkrm.report",
    "gitkrm.server.app",
    "gitkrm.server.serve",
    "gitkrm.server.tls",
    "gitkrm.sync.engine",
    "starlette",
    "uvicorn",
)


def _run_once(argv: list[str], heavy: tuple[str, ...]) -> tuple[str, list[str]]:
    code = RUN_PROBE.format(argv=argv, heavy=heavy)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    loaded = out.stdout.rpartition("LOADED=")[2].strip()
    return out.stdout, [m for m in loaded.split(",") if m]


def test_run_once_with_nothing_to_do_imports_no_controllers_server_or_reporter(
    tmp_path: Path,
) -> None:
    remote = Remote(tmp_path / "repo")
    remote.write("cm.yaml", configmap("cfg", ns="default"))
    remote.commit()
    argv = ["run", "--once", "--repo", remote.url, "--state", str(tmp_path / "st")]
    out, loaded = _run_once(argv, NOT_FOR_NOTHING_TO_DO)
    assert "synced revision" in out
    # A sync reports into Git (without following health: the run ends right after it).
    assert "gitkrm.report.reporter" in loaded
    assert "gitkrm.report.follow" not in loaded
    assert "gitkrm.sync.engine" in loaded
    assert not [m for m in loaded if m.startswith(("gitkrm.controllers", "gitkrm.server"))]
    assert "gitkrm.agent.cluster" not in loaded  # the embedded target's run
    out, loaded = _run_once(argv, NOT_FOR_NOTHING_TO_DO)
    assert "nothing changed since the last sync" in out
    assert loaded == []


TARGET_PROBE = """
import sys
import {module}
heavy = {heavy!r}
print(",".join(sorted(m for m in sys.modules if m in heavy or m.startswith(heavy))))
"""


@pytest.mark.parametrize(
    ("module", "never"),
    [
        # The embedded target: no leader election, no cluster target (nor its probes).
        (
            "gitkrm.agent.embedded",
            ("gitkrm.agent.leader", "gitkrm.agent.cluster", "gitkrm.agent.probes"),
        ),
        # The cluster target, probes included: no controllers, no API server.
        (
            "gitkrm.agent.cluster, gitkrm.agent.probes",
            (
                "gitkrm.agent.embedded",
                "gitkrm.agent.api",
                "gitkrm.controllers",
                "gitkrm.server.app",
                "gitkrm.server.serve",
                "gitkrm.store.sqlite",
            ),
        ),
    ],
)
def test_each_target_imports_nothing_of_the_other(module: str, never: tuple[str, ...]) -> None:
    code = TARGET_PROBE.format(module=module, heavy=never + tuple(h + "." for h in never))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", f"{module} imported: {out.stdout.strip()}"
