"""A repository laid out for Flux (clusters/, infrastructure/, apps/base and an overlay)
that uses both post-build steps: variables from the GitSource, a ConfigMap and a Secret of
the store, SOPS-encrypted Secrets (a manifest and a secretGenerator's env file) decrypted
with an age key from a Secret of the store; synced through the CLI, changed, and diffed
with every Secret-sourced value masked."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from gitkrm.krm import GVK, masking
from gitkrm.store import open_store
from tests.cli.test_substitute import (
    _config,
    _create,
    _update_secret,
    _var_source,
    cli,
    read,
    repo_with,
)
from tests.support.sops import AgeKey, encrypt

TOKEN = "api-Token-Flux-4471"
DB_PASSWORD = "db-Password-Flux-8812"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {cluster: "${cluster_name}"}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: "nginx:${image_tag:=1.27}"
        env:
        - {name: CLUSTER, value: "${cluster_name^^}"}
        - {name: DOMAIN, value: "web.${domain:=example.com}"}
"""
SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  api_token: "${api_token}"
  script: "echo $${HOME}"
"""
DB_SECRET = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData:
  password: {DB_PASSWORD}
  host: "db.${{cluster_name}}.internal"
"""


def _flux_repo(tmp_path: Path, key: AgeKey) -> dict[str, str]:
    work = tmp_path / "work"
    secret = encrypt(
        DB_SECRET.encode(), key=key, input_type="yaml", work=work,
        args=("--encrypted-regex", "^(data|stringData)$"),
    ).decode()  # fmt: skip
    env = encrypt(b"SMTP_PASS=smtp-Pass-Flux-3302\n", key=key, input_type="dotenv", work=work)
    return {
        ".sops.yaml": "creation_rules:\n- encrypted_regex: ^(data|stringData)$\n",
        "kustomization.yaml": "resources: [clusters/prod]\n",
        "clusters/prod/kustomization.yaml": "resources: [../../infrastructure, ../../apps/prod]\n",
        "infrastructure/kustomization.yaml": "resources: [namespace.yaml]\n",
        "infrastructure/namespace.yaml": "apiVersion: v1\nkind: Namespace\n"
        "metadata: {name: '${app_namespace}'}\n",
        "apps/base/kustomization.yaml": "resources: [deployment.yaml, settings.yaml]\n",
        "apps/base/deployment.yaml": DEPLOYMENT,
        "apps/base/settings.yaml": SETTINGS,
        "apps/prod/kustomization.yaml": (
            "namespace: ${app_namespace}\nresources: [../base, db.enc.yaml]\n"
            "secretGenerator:\n- name: smtp\n  envs: [smtp.env]\n"
        ),
        "apps/prod/db.enc.yaml": secret,
        "apps/prod/smtp.env": env.decode(),
    }


def test_a_flux_repository_with_variables_and_encrypted_secrets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    masking.forget_all()
    key = AgeKey(tmp_path / "keys")
    repo = repo_with(tmp_path, _flux_repo(tmp_path, key))
    state = tmp_path / "state"
    config = _config(
        tmp_path,
        repo,
        {
            "substitute": {"cluster_name": "prod-eu"},
            "substituteFrom": [
                {"kind": "ConfigMap", "name": "cluster-vars"},
                {"kind": "Secret", "name": "cluster-secrets"},
            ],
            "substituteStrict": True,
            "decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}},
        },
    )
    (state).mkdir()
    asyncio.run(
        _create(
            state,
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitkrm-system"}},
                _var_source(
                    "cluster-vars", "ConfigMap", {"replicas": "2", "app_namespace": "shop"}
                ),
                _var_source("cluster-secrets", "Secret", {"api_token": TOKEN}),
                _var_source("sops-age", "Secret", {"age.agekey": key.file.read_text()}),
            ],
        )
    )
    code, out, err = cli(capsys, "run", "--config", str(config), "--once", "--state", str(state))
    assert code == 0, err
    dep = read(state, "Deployment", "web", "shop")
    assert dep is not None
    assert dep["metadata"]["labels"]["cluster"] == "prod-eu"
    assert dep["spec"]["replicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.27"
    assert container["env"] == [
        {"name": "CLUSTER", "value": "PROD-EU"},
        {"name": "DOMAIN", "value": "web.example.com"},
    ]
    settings = read(state, "ConfigMap", "settings", "shop")
    assert settings is not None
    assert settings["data"] == {"api_token": TOKEN, "script": "echo ${HOME}"}
    db = read(state, "Secret", "db", "shop")
    assert db is not None
    assert {k: base64.b64decode(v).decode() for k, v in db["data"].items()} == {
        "password": DB_PASSWORD,
        "host": "db.prod-eu.internal",  # decrypted, then substituted (Flux's order)
    }

    async def smtp() -> dict[str, str]:
        store = await open_store("sqlite:///" + str(state / "store.db"), read_only=True)
        try:
            items = (await store.list(GVK(group="", version="v1", kind="Secret"), "shop"))["items"]
        finally:
            await store.close()
        (s,) = [s for s in items if s["metadata"]["name"].startswith("smtp-")]
        return {k: base64.b64decode(v).decode() for k, v in s["data"].items()}

    assert asyncio.run(smtp()) == {"SMTP_PASS": "smtp-Pass-Flux-3302"}
    assert TOKEN not in out + err

    # A new token in the store: diff shows the ConfigMap changing, the value masked.
    asyncio.run(_update_secret(state, "cluster-secrets", {"api_token": TOKEN + "-v2"}))
    code, out, err = cli(capsys, "diff", "--config", str(config), "--state", str(state))
    assert code == 1, err
    assert "ConfigMap.shop.settings" in out
    for value in (TOKEN, DB_PASSWORD, "smtp-Pass-Flux-3302"):
        assert value not in out + err
    code, out, err = cli(capsys, "run", "--config", str(config), "--once", "--state", str(state))
    assert code == 0, err
    assert "1 configured" in out
