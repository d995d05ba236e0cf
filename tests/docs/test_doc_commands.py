"""The commands the documentation shows work as it says.

Every command of README.md, sample-repo/README.md and docs/*.md (found as
tests/docs/doc_commands.py describes) is either run here, offline, in a scratch copy of the
project's layout, or listed in SKIPPED with the reason it cannot be: a network host, a
cluster, a long-lived process, a placeholder. A command added to the docs is thus run or
consciously listed, and an entry of SKIPPED no doc shows any more fails too.

The scratch directory holds `sample-repo` (a copy), `manifests` (a Git repository of it,
branch main: the docs' `./manifests`), the state `.gitkrm` in which `manifests` was synced
once, `clone` (a clone of `manifests`: "any copy of the repository", where the commands of
status-format.md run; agent `edge-1`, the docs' example, synced `manifests` too, from a
state of its own) and `.venv` (the project's).
A command passes when it exits with a code the docs give it: 0, or for `gitkrm diff` 0 (in
sync) or 1 (differences).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.doc_commands import ROOT, commands_of, doc_commands
from tests.source.source_gitrepo import ENV, git

SKIPPED: dict[str, str] = {
    # The quickstart: its steps are the validate, run --once --wait and status lines run here.
    "make run": "installs the project into .venv with pip, then syncs into the project's "
    "own ./.gitkrm (its steps are run here: validate, run --once --wait, status)",
    "make test": "the whole test suite, this test included",
    # Long-lived agents and servers (they run until Ctrl-C or SIGTERM).
    ".venv/bin/gitkrm run --repo sample-repo": "long-lived (Ctrl-C stops it)",
    "gitkrm run --repo sample-repo --interval 10s": "long-lived",
    "gitkrm run --config sources.yaml": "long-lived; sources.yaml is the reader's file",
    "gitkrm run --repo ./manifests --apply-mode server-side": "long-lived",
    "gitkrm run --config sources.yaml --agent-name edge-7 --state /var/lib/gitkrm": "long-lived, "
    "in a system directory; sources.yaml is the reader's file",
    "gitkrm serve --state .gitkrm &": "long-lived (tests/cli/test_serve_cmd.py: with kubectl)",
    "gitkrm serve --listen 0.0.0.0:6443 --token-file token": "long-lived, on every interface",
    # A network host or a cluster.
    "gitkrm run --repo https://git.example.com/apps.git --branch main --path clusters/edge": (
        "a network host; long-lived"
    ),
    "gitkrm run --repo https://git.example.com/apps.git --branch main --interval 1m": (
        "a network host; long-lived"
    ),
    "gitkrm run --repo ./manifests --kubeconfig ~/.kube/config --context prod": "a cluster",
    "gitkrm run --repo https://git.example.com/apps.git --kubeconfig ~/.kube/config "
    "--context prod": "a network host and a cluster",
    "docker build -t registry.example.com/gitkrm:0.1.0 .": "docker, a base image from a registry",
    "docker push registry.example.com/gitkrm:0.1.0": "a registry",
    "helm install gitkrm helm/gitkrm -n gitkrm-system --create-namespace --set "
    "image.repository=registry.example.com/gitkrm --set 'sources[0].name=prod' --set "
    "'sources[0].spec.url=https://git.example.com/org/manifests.git' --set "
    "'sources[0].spec.ref.branch=main' --set 'sources[0].spec.path=clusters/prod'": "a cluster",
    "helm install gitkrm helm/gitkrm -n gitkrm-system --create-namespace -f values-prod.yaml": (
        "a cluster"
    ),
    "helm install edge helm/gitkrm -n edge --create-namespace --set mode=embedded --set "
    "'sources[0].name=edge' --set "
    "'sources[0].spec.url=https://git.example.com/org/edge-site.git'": "a cluster",
    "helm upgrade gitkrm helm/gitkrm -n gitkrm-system -f values-prod.yaml": "a cluster",
    "kubectl get gitsources -n gitkrm-system": "a cluster",
    "kubectl create secret generic gitkrm-git -n gitkrm-system --from-literal=username=git "
    "--from-file=password=./token": "a cluster",
    "kubectl port-forward -n edge svc/edge-gitkrm 6443 &": "a cluster; long-lived",
    "TOKEN=$(kubectl get secret -n edge edge-gitkrm-api-token -o jsonpath='{.data.token}' "
    "| base64 -d)": "a cluster",
    'kubectl --server https://127.0.0.1:6443 --token "$TOKEN" --insecure-skip-tls-verify get '
    "gitsources,deployments -A": "a cluster, through a port-forward",
    # kubectl against the API of a running agent or `gitkrm serve` (long-lived); kubectl
    # against that API is tested in tests/cli/test_serve_cmd.py and tests/server/.
    "kubectl --kubeconfig .gitkrm/kubeconfig get gitsources,deployments -A": "needs the API of "
    "a running agent",
    "kubectl --kubeconfig .gitkrm/kubeconfig get gitsources -A": "needs the API of a running agent",
    "kubectl --kubeconfig .gitkrm/kubeconfig -n gitkrm-system annotate gitsource default "
    '--overwrite gitkrm.io/requestedAt="$(date +%s)"': "needs the API of a running agent",
    "export KUBECONFIG=$PWD/.gitkrm/kubeconfig": "sets up the shell for the kubectl line after it",
    "kubectl get namespaces": "needs a running gitkrm serve",
    "kubectl --kubeconfig .gitkrm/kubeconfig get ns": "needs a running gitkrm serve",
    "kubectl apply --server-side -f app.yaml": "app.yaml is the reader's file; needs a running "
    "gitkrm serve (server-side apply with kubectl: tests/server/)",
    "kubectl apply --server-side --field-manager ci -f app.yaml": "as above; the conflict it "
    "shows needs a changed file",
    "kubectl apply --server-side --field-manager ci --force-conflicts -f app.yaml": "as above",
    "kubectl diff --server-side -f app.yaml": "as above",
    "kubectl get deploy web -o yaml --show-managed-fields": "needs a running gitkrm serve",
    # Placeholders and measurements.
    "git notes --ref gitkrm/edge-1 show <commit>": "<commit> is a placeholder",
    ".venv/bin/python -m benchmarks": "the W10k benchmarks: minutes of both cores",
}

EXIT_CODES: dict[str, tuple[int, ...]] = {
    "gitkrm diff": (0, 1),  # "exit 0 in sync, 1 differences, 2 error" (reference.md)
    "gitkrm plan": (0, 1),  # "0 nothing to do, 1 changes, 2 error, 3 refused" (plan.md)
}
CWD: dict[str, str] = {"docs/status-format.md": "clone"}  # "in any copy of the repository"
AGENT = "edge-1"
TIMEOUT = 100.0


@dataclass(frozen=True, slots=True)
class Case:
    text: str
    cwd: str
    where: tuple[str, ...]

    def expected(self) -> tuple[int, ...]:
        program = self.text.removeprefix(".venv/bin/")
        for prefix, codes in EXIT_CODES.items():
            if program == prefix or program.startswith(prefix + " "):
                return codes
        return (0,)


def _cases() -> list[Case]:
    found: dict[tuple[str, str], list[str]] = {}
    for c in doc_commands():
        cwd = CWD.get(str(c.path.relative_to(ROOT)), ".")
        found.setdefault((c.text, cwd), []).append(c.where)
    return [Case(text, cwd, tuple(where)) for (text, cwd), where in found.items()]


CASES = _cases()


def _params() -> list[object]:
    return [
        pytest.param(
            case,
            id=case.text[:80],
            marks=[pytest.mark.skip(reason=SKIPPED[case.text])] if case.text in SKIPPED else [],
        )
        for case in CASES
    ]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in ENV.items() if k not in ("KUBECONFIG",)}
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _gitkrm(*args: str, cwd: Path, env: dict[str, str]) -> None:
    res = subprocess.run(
        [str(Path(sys.executable).parent / "gitkrm"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert res.returncode == 0, f"gitkrm {' '.join(args)}: exit {res.returncode}\n{res.stderr}"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("docs")
    (ws / "home").mkdir()
    env = _env(ws / "home")
    shutil.copytree(ROOT / "sample-repo", ws / "sample-repo")
    shutil.copytree(ROOT / "sample-repo", ws / "manifests")
    (ws / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    git("init", "-q", "--initial-branch=main", cwd=ws / "manifests")
    git("add", "-A", cwd=ws / "manifests")
    git("commit", "-q", "-m", "sample-repo", cwd=ws / "manifests")
    _gitkrm("run", "--repo", "./manifests", "--once", cwd=ws, env=env)
    # The docs' example agent, with a state of its own (one store has one agent per source).
    _gitkrm(
        *("run", "--repo", "./manifests", "--once", "--agent-name", AGENT),
        *("--state", str(ws / "edge-1")),
        cwd=ws,
        env=env,
    )
    git("clone", "-q", str(ws / "manifests"), str(ws / "clone"), cwd=ws)
    return ws


@pytest.mark.parametrize("case", _params())
def test_doc_command(case: Case, workspace: Path) -> None:
    try:
        res = subprocess.run(
            ["bash", "-c", case.text],
            cwd=workspace / case.cwd,
            env=_env(workspace / "home"),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"{case.text!r} ({', '.join(case.where)}) did not end within {TIMEOUT:.0f} s: "
            "a long-lived command belongs in SKIPPED, with its reason"
        )
    assert res.returncode in case.expected(), (
        f"{case.text!r} ({', '.join(case.where)}), run in {case.cwd}, exited "
        f"{res.returncode} (the docs say {case.expected()})\n"
        f"stdout:\n{res.stdout[-2000:]}\nstderr:\n{res.stderr[-2000:]}"
    )


def test_skipped_commands_are_ones_the_docs_show() -> None:
    shown = {case.text for case in CASES}
    assert sorted(set(SKIPPED) - shown) == [], "SKIPPED lists commands no doc shows any more"


def test_commands_are_found_in_each_shape_of_block(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Text `gitkrm not-a-command`.\n"
        "```sh\n"
        "gitkrm run --repo x --once   # a comment\n"
        "# a comment line\n"
        "kubectl annotate gs a \\\n"
        '    x="$(date +%s)"  # more\n'
        "```\n"
        "```console\n"
        "$ gitkrm status\n"
        "NAME   REVISION\n"
        "gitkrm output that is not a command\n"
        "```\n"
        "```\n"
        "gitkrm serve [--state DIR] [--listen HOST:PORT]\n"
        "gitkrm get deploy,svc -n guestbook\n"
        "$ git log -1\n"
        "COMMIT  DATE\n"
        "```\n"
        "```yaml\n"
        "gitkrm: not a command\n"
        "```\n"
        "````md\n"
        "```sh\n"
        "gitkrm inside another block's text\n"
        "```\n"
        "````\n"
    )
    found = [(c.line, c.text) for c in commands_of(doc)]
    assert found == [
        (3, "gitkrm run --repo x --once"),
        (5, 'kubectl annotate gs a x="$(date +%s)"'),
        (9, "gitkrm status"),
        (15, "gitkrm get deploy,svc -n guestbook"),
        (16, "git log -1"),
    ]
    # And in the docs themselves (the extractor has not gone blind).
    texts = {c.text for c in doc_commands()}
    assert {"gitkrm validate sample-repo", "gitkrm history --repo ."} <= texts
