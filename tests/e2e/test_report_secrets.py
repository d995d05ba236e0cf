"""Secret data, tokens and credentials never reach what gitkrm writes into Git, nor its
logs: a repository with Secrets, synced over HTTPS with credentials in the remote URL, then
scanned (every object of the remote and of the cache, every ref, every log record)."""

from __future__ import annotations

import base64
import logging
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.report.report_helpers import read_note, read_status
from tests.report.report_pipeline import Pipeline
from tests.source.source_gitrepo import ENV, RemoteRepo
from tests.source.source_https import GitHttpsServer, require_tools

TOKEN = "tok-7f3e9c1a5b2d8e4f"
DATA_VALUE = "db-password-QX81Zr"
STRING_VALUE = "api-key-LM29Tp"
NESTED_VALUE = "nested-value-VB55Kw"
SECRETS = [DATA_VALUE, base64.b64encode(DATA_VALUE.encode()).decode(), STRING_VALUE, NESTED_VALUE]

GOOD = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: db, namespace: default}}
data: {{password: {base64.b64encode(DATA_VALUE.encode()).decode()}}}
stringData: {{apiKey: {STRING_VALUE}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: default}}
data: {{mode: prod}}
"""
# A Secret the API rules refuse: the error quotes the value it refuses.
BAD = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: broken, namespace: default}}
stringData: {{apiKey: {{nested: {NESTED_VALUE}}}}}
"""


def _git(git_dir: Path, *args: str, stdin: bytes | None = None) -> bytes:
    res = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        env=ENV,
        input=stdin,
        capture_output=True,
        check=True,
    )
    return res.stdout


def _objects(git_dir: Path, oids: set[str] | None = None) -> bytes:
    """The contents of every object (or of `oids`) of a repository."""
    if oids is None:
        return _git(git_dir, "cat-file", "--batch-all-objects", "--batch")
    return _git(git_dir, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode())


def _all_oids(git_dir: Path) -> set[str]:
    out = _git(git_dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(out.decode().split())


def _content_oids(work: Path) -> set[str]:
    """The objects of the repository's own history (the manifests hold the secrets)."""
    out = _git(work / ".git", "rev-list", "--objects", "--all")
    return {line.split()[0] for line in out.decode().splitlines()}


async def test_no_secret_value_or_credential_reaches_git_or_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    require_tools()
    repo = RemoteRepo(tmp_path / "srv" / "repo")
    repo.write("db.yaml", GOOD)
    good = repo.commit("db")
    repo.push()
    with GitHttpsServer(repo.bare.parent, username="deploy", password=TOKEN, certs=tmp_path) as srv:
        url = srv.url("remote.git").replace("https://", f"https://deploy:{TOKEN}@")
        with caplog.at_level(logging.DEBUG):
            async with Pipeline(state=tmp_path / "state", url=url, spec={"ca_file": srv.cert}) as p:
                assert (await p.sync()).ok
                assert await p.reporter.flush(timeout=20)
                repo.write("broken.yaml", BAD)
                bad = repo.commit("broken secret")
                repo.push()
                failed = await p.sync()
                assert not failed.ok
                # Admission masks a Secret's values in its errors, so the engine never has them.
                assert not any(NESTED_VALUE in e for e in failed.problems())
                assert any('"[redacted]"' in e for e in failed.problems())
                assert await p.reporter.flush(timeout=20)
                cache = p.source.cache_dir
        assert any(h.startswith("Basic ") for h in srv.auth_headers)  # pushed with the creds
    note = read_note(repo.bare, "edge-1", bad)
    assert note is not None
    errors = note["sources"]["default"]["errors"]
    assert errors
    assert "Invalid value: ***" in errors[0]
    assert read_note(repo.bare, "edge-1", good) is not None
    status = read_status(repo.bare, "edge-1")
    assert status is not None
    assert status["sources"]["default"]["url"] == srv.url("remote.git")  # no user-info

    content = _content_oids(repo.work)
    for git_dir in (repo.bare, cache):
        everything = _objects(git_dir)
        for credential in (TOKEN, quote(TOKEN, safe=""), "deploy:"):
            assert credential.encode() not in everything, (git_dir, credential)
        ours = _objects(git_dir, _all_oids(git_dir) - content)
        assert b"SyncNote" in ours
        assert b"AgentStatus" in ours
        for value in SECRETS:
            assert value.encode() not in ours, (git_dir, value)
        refs = _git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)")
        assert TOKEN.encode() not in refs
        config = (git_dir / "config").read_bytes()
        assert TOKEN.encode() not in config
    assert caplog.records
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for value in [TOKEN, *SECRETS]:
        assert value not in logged, value
