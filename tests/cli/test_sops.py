"""SOPS decryption through the CLI on real Git repositories, with files encrypted by the
real `sops` for keys made by `age-keygen`: YAML and JSON manifests (whole and partial),
Secret data holding encrypted dotenv, JSON and binary files, a secretGenerator over an
encrypted env file, a tampered MAC, a missing key, keys from a Secret in the store, and
decrypted values masked in what gitkrm prints and logs."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path

import pytest

from gitkrm.krm import GVK, masking
from gitkrm.store import open_store
from tests.cli.test_substitute import (
    _config,
    _create,
    _var_source,
    cli,
    read,
    repo_with,
    run_once,
)
from tests.support.sops import AgeKey, encrypt

PASSWORD = "pw-Decrypted-91xQ"
SECRET = f"""\
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: default
  labels: {{tier: db}}
type: Opaque
stringData:
  password: {PASSWORD}
  user: admin-user
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: default}\n"


@pytest.fixture
def key(tmp_path: Path) -> AgeKey:
    masking.forget_all()
    return AgeKey(tmp_path / "keys")


def enc(text: str | bytes, key: AgeKey, tmp_path: Path, kind: str, *args: str) -> str:
    data = text.encode() if isinstance(text, str) else text
    return encrypt(data, key=key, input_type=kind, work=tmp_path / "work", args=args).decode()


def secret_data(state: Path, name: str) -> dict[str, str]:
    obj = read(state, "Secret", name)
    assert obj is not None, name
    return {k: base64.b64decode(v).decode() for k, v in obj["data"].items()}


@pytest.mark.parametrize(
    "args",
    [(), ("--encrypted-regex", "^(data|stringData)$"), ("--encrypted-suffix", "Data")],
    ids=["whole", "encrypted-regex", "encrypted-suffix"],
)
def test_yaml_secrets_whole_and_partial(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    key: AgeKey,
    args: tuple[str, ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    encrypted = enc(SECRET, key, tmp_path, "yaml", *args)
    assert PASSWORD not in encrypted
    if args:
        assert "name: db" in encrypted  # partial: metadata stays readable
    repo = repo_with(tmp_path, {"secrets/db.yaml": encrypted, "cm.yaml": CONFIGMAP})
    state = tmp_path / "state"
    with caplog.at_level(logging.DEBUG):
        code, out, err = run_once(
            capsys, state, "--repo", repo.url, "--sops-age-key-file", str(key.file)
        )
    assert code == 0, err
    assert secret_data(state, "db") == {"password": PASSWORD, "user": "admin-user"}
    obj = read(state, "Secret", "db")
    assert obj is not None
    assert "sops" not in obj
    assert obj["metadata"]["labels"]["tier"] == "db"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert PASSWORD not in out + err + logged


def test_json_manifest_and_secret_data_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    """A .json manifest encrypted whole, and a Secret whose data values are encrypted
    dotenv, JSON and binary files (Flux decrypts each into the format its key names)."""
    manifest = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "from-json", "namespace": "default"},
            "data": {"endpoint": "https://db.internal:5432"},
        }
    )
    env = enc("DB_USER=app\nDB_PASS=env-Pass-5511\n", key, tmp_path, "dotenv")
    js = enc('{"token": "json-Token-2288", "n": 3}', key, tmp_path, "json")
    binary = enc(b"\x00\x01raw-Binary-7741", key, tmp_path, "binary")

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    holder = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: files, namespace: default}\ndata:\n"
        f"  app.env: {b64(env)}\n  config.json: {b64(js)}\n  blob.bin: {b64(binary)}\n"
        f"  plain: {b64('not encrypted')}\n"
    )
    repo = repo_with(
        tmp_path,
        {"cm.json": enc(manifest, key, tmp_path, "json"), "files.yaml": holder},
    )
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--sops-age-key-file", str(key.file))
    assert code == 0, err
    cm = read(state, "ConfigMap", "from-json")
    assert cm is not None
    assert cm["data"] == {"endpoint": "https://db.internal:5432"}
    obj = read(state, "Secret", "files")
    assert obj is not None
    data = {k: base64.b64decode(v) for k, v in obj["data"].items()}
    assert data["app.env"] == b"DB_USER=app\nDB_PASS=env-Pass-5511\n"
    assert json.loads(data["config.json"]) == {"token": "json-Token-2288", "n": 3}
    assert data["blob.bin"] == b"\x00\x01raw-Binary-7741"
    assert data["plain"] == b"not encrypted"


def test_secret_generator_over_an_encrypted_env_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    kustomization = (
        "namespace: default\nresources: [cm.yaml]\nsecretGenerator:\n"
        "- name: creds\n  envs: [creds.env]\n- name: token\n  files: [token=token.bin]\n"
    )
    repo = repo_with(
        tmp_path,
        {
            "app/kustomization.yaml": kustomization,
            "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
            "app/creds.env": enc("USER=app\nPASS=gen-Pass-6620\n", key, tmp_path, "dotenv"),
            "app/token.bin": enc(b"gen-Token-3391", key, tmp_path, "binary"),
        },
    )
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--sops-age-key-file", str(key.file))
    assert code == 0, err

    async def secrets() -> dict[str, dict[str, str]]:
        store = await open_store("sqlite:///" + str(state / "store.db"), read_only=True)
        try:
            listed = await store.list(GVK(group="", version="v1", kind="Secret"), "default")
        finally:
            await store.close()
        return {
            s["metadata"]["name"].rsplit("-", 1)[0]: {
                k: base64.b64decode(v).decode() for k, v in s["data"].items()
            }
            for s in listed["items"]
        }

    found = asyncio.run(secrets())
    assert found["creds"] == {"USER": "app", "PASS": "gen-Pass-6620"}
    assert found["token"] == {"token": "gen-Token-3391"}


def test_a_tampered_file_is_refused_by_name_and_nothing_is_applied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    encrypted = enc(SECRET, key, tmp_path, "yaml", "--encrypted-regex", "^stringData$")
    tampered = encrypted.replace("tier: db", "tier: dev")  # an unencrypted value changed
    repo = repo_with(tmp_path, {"secrets/db.yaml": tampered, "cm.yaml": CONFIGMAP})
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--sops-age-key-file", str(key.file))
    assert code == 1
    assert "secrets/db.yaml:1: Secret default/db: SOPS decryption failed: MAC mismatch" in err
    assert read(state, "ConfigMap", "plain") is None
    # A tampered encrypted value fails its own authentication.
    lines = encrypted.splitlines()
    i = next(n for n, line in enumerate(lines) if "password: ENC[" in line)
    lines[i] = lines[i].replace("data:", "data:AA", 1)
    repo.publish("tamper a value", {"secrets/db.yaml": "\n".join(lines) + "\n"})
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--sops-age-key-file", str(key.file))
    assert code == 1
    assert "secrets/db.yaml:1: Secret default/db: SOPS decryption failed: " in err
    assert "stringData:password" in err


def test_a_missing_key_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    other = AgeKey(tmp_path / "other", "other")
    repo = repo_with(tmp_path, {"db.yaml": enc(SECRET, key, tmp_path, "yaml")})
    state = tmp_path / "state"
    code, _, err = run_once(
        capsys, state, "--repo", repo.url, "--sops-age-key-file", str(other.file)
    )
    assert code == 1
    assert "db.yaml:1: " in err
    assert f"no usable key: encrypted for {key.recipient}" in err
    code, _, err = run_once(capsys, state, "--repo", repo.url)  # no decryption at all
    assert code == 1
    assert "encrypted with SOPS, and the source does not decrypt" in err


def test_keys_from_a_secret_in_the_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    repo = repo_with(tmp_path, {"db.yaml": enc(SECRET, key, tmp_path, "yaml")})
    state = tmp_path / "state"
    config = _config(
        tmp_path,
        repo,
        {"decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}}},
    )
    code, _, err = run_once(capsys, state, "--config", str(config))
    assert code == 1
    # A source's setting, not a file: the message alone, naming the field (no bare ": ").
    missing = "decryption Secret gitkrm-system/sops-age (spec.decryption.secretRef): not found"
    assert f'error="{missing}' in err
    secret = _var_source("sops-age", "Secret", {"identity.agekey": key.file.read_text()})
    asyncio.run(_create(state, [secret]))
    code, _, err = run_once(capsys, state, "--config", str(config))
    assert code == 0, err
    assert secret_data(state, "db")["password"] == PASSWORD


def test_validate_decrypts_and_masks_what_it_decrypted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: AgeKey
) -> None:
    """An encrypted ConfigMap the API rules refuse: the error quotes the value, masked."""
    bad = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: enc-bad, namespace: default}\n"
        "data: {key: {nested: validate-Secret-4417}}\n"
    )
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "bad.enc.yaml").write_text(enc(bad, key, tmp_path, "yaml"))
    (tree / "db.enc.yaml").write_text(enc(SECRET, key, tmp_path, "yaml"))
    code, out, err = cli(capsys, "validate", str(tree), "--sops-age-key-file", str(key.file))
    assert code == 1
    assert "bad.enc.yaml" in err
    assert "ConfigMap default/enc-bad" in err
    assert "***" in err
    assert "validate-Secret-4417" not in out + err
    assert "db.enc.yaml" not in err  # the Secret decrypted and is valid
    code, out, err = cli(capsys, "validate", str(tree))
    assert code == 1
    assert "encrypted with SOPS, and the source does not decrypt" in err
