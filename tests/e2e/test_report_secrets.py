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


# -- values that came from Secrets through Flux's post-build steps --------------------

SUBST_VALUE = "subst-Marker-5QW2x"
SOPS_VALUE = "sops-Marker-8ZK4y"
SOPS_CM_VALUE = "sops-cm-Marker-3HJ7z"
POSTBUILD_MARKERS = [
    SUBST_VALUE,
    SOPS_VALUE,
    SOPS_CM_VALUE,
    *(base64.b64encode(v.encode()).decode() for v in (SUBST_VALUE, SOPS_VALUE, SOPS_CM_VALUE)),
]
SUBSTITUTED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: uses-token, namespace: default}
data: {token: "${token}"}
"""
# The API rules refuse these, quoting the value: a substituted one and a decrypted one.
BAD_SUBSTITUTED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: bad-token, namespace: default}
data: {token: {nested: "${token}"}}
"""


async def test_values_from_secrets_never_reach_git_or_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A variable from a Secret substituted into a ConfigMap, a SOPS-encrypted Secret and a
    SOPS-encrypted ConfigMap, then values the API rules refuse (errors quote them): no
    marker in any Git object gitkrm wrote, nor in the logs; the errors show `***`."""
    from gitkrm.krm import ObjectRef
    from gitkrm.sync.postbuild_spec import DecryptionSpec, PostBuildSpec, RefKind, SubstituteRef
    from tests.support.sops import AgeKey, encrypt

    key = AgeKey(tmp_path / "keys")
    work = tmp_path / "enc"
    secret = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: default}\n"
        f"stringData: {{password: {SOPS_VALUE}}}\n"
    )
    cm = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: enc-cm, namespace: default}\n"
        f"data: {{key: {SOPS_CM_VALUE}}}\n"
    )
    bad_cm = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: enc-bad, namespace: default}\n"
        f"data: {{key: {{nested: {SOPS_CM_VALUE}}}}}\n"
    )
    repo = RemoteRepo(tmp_path / "srv" / "repo")
    repo.write("cm.yaml", SUBSTITUTED)
    repo.write("db.enc.yaml", encrypt(secret.encode(), key=key, input_type="yaml", work=work))
    repo.write("cm.enc.yaml", encrypt(cm.encode(), key=key, input_type="yaml", work=work))
    good = repo.commit("post-build")
    repo.push()
    postbuild = PostBuildSpec(
        substitute_from=(SubstituteRef(RefKind.SECRET, "vars", "gitkrm-system"),),
        decryption=DecryptionSpec(key_files=(str(key.file),)),
    )
    with caplog.at_level(logging.DEBUG):
        async with Pipeline(state=tmp_path / "state", url=repo.url, postbuild=postbuild) as p:
            assert p.store is not None
            await p.store.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitkrm-system"}}
            )
            await p.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "vars", "namespace": "gitkrm-system"},
                    "data": {"token": base64.b64encode(SUBST_VALUE.encode()).decode()},
                }
            )
            synced = await p.sync()
            assert synced.ok, synced.problems()
            live = await p.store.get(
                ObjectRef(group="", kind="ConfigMap", name="uses-token", namespace="default")
            )
            assert live["data"] == {"token": SUBST_VALUE}
            assert await p.reporter.flush(timeout=20)
            repo.write("bad.yaml", BAD_SUBSTITUTED)
            repo.write(
                "bad.enc.yaml", encrypt(bad_cm.encode(), key=key, input_type="yaml", work=work)
            )
            bad = repo.commit("values the API refuses")
            repo.push()
            failed = await p.sync()
            assert not failed.ok
            assert await p.reporter.flush(timeout=20)
            cache = p.source.cache_dir
    note = read_note(repo.bare, "edge-1", bad)
    assert note is not None
    errors = note["sources"]["default"]["errors"]
    assert any("bad-token" in e and "***" in e for e in errors), errors
    assert any("enc-bad" in e and "***" in e for e in errors), errors
    assert read_note(repo.bare, "edge-1", good) is not None
    assert read_status(repo.bare, "edge-1") is not None
    content = _content_oids(repo.work)
    for git_dir in (repo.bare, cache):
        ours = _objects(git_dir, _all_oids(git_dir) - content)
        assert b"SyncNote" in ours
        for value in POSTBUILD_MARKERS:
            assert value.encode() not in ours, (git_dir, value)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad-token" in logged or caplog.records
    for value in POSTBUILD_MARKERS:
        assert value not in logged, value
