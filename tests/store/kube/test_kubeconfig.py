"""kubeconfig contexts and credentials, exec plugins, in-cluster configuration: each one
used for real against a server that wants TLS and a bearer token."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, ServiceUnavailable, Unauthorized
from gitkrm.krm import GVK
from gitkrm.server import ServerThread
from gitkrm.server.tls import generate_self_signed
from gitkrm.store import open_store
from gitkrm.store.kube import (
    ClientOptions,
    ClusterConfig,
    ExecConfig,
    ExecCredentials,
    FileToken,
    KubeStore,
    in_cluster_config,
    load_kubeconfig,
)
from gitkrm.store.kube import kubeconfig as kubeconfig_module
from gitkrm.store.kube.client import ssl_context
from tests.store.kube.conftest import TOKEN, ca_data, ca_of, write_kubeconfig

NAMESPACE = GVK(group="", version="v1", kind="Namespace")


async def _list_ns(store: KubeStore) -> list[str]:
    out = await store.list(NAMESPACE)
    return [o["metadata"]["name"] for o in out["items"]]


async def _namespaces(config: ClusterConfig) -> list[str]:
    store = KubeStore(config, ClientOptions(max_retries=0, timeout=10))
    try:
        return await _list_ns(store)
    finally:
        await store.close()


async def test_context_token_and_ca_data(secured: ServerThread, tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "config",
        server=secured.url,
        user={"token": TOKEN},
        **{"certificate-authority-data": ca_data(secured)},
    )
    config = load_kubeconfig(path, context="test")
    assert config.server == secured.url
    assert config.namespace == "team-a"
    assert "default" in await _namespaces(config)
    with pytest.raises(BadRequest, match="no context named 'missing'"):
        load_kubeconfig(path, context="missing")
    nowhere = load_kubeconfig(path)  # the current context
    assert nowhere.server == "https://127.0.0.1:1"


async def test_token_file_is_read_again_after_a_401(secured: ServerThread, tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(ca_of(secured))
    (tmp_path / "token").write_text("stale\n")
    path = write_kubeconfig(
        tmp_path / "config",
        server=secured.url,
        user={"tokenFile": "token"},  # relative to the kubeconfig
        **{"certificate-authority": "ca.crt"},
    )
    config = load_kubeconfig(path, context="test")
    assert isinstance(config.tokens, FileToken)
    store = KubeStore(config, ClientOptions(max_retries=0))
    try:
        assert await config.tokens.token() == "stale"
        (tmp_path / "token").write_text(TOKEN)  # rotated: the 401 makes us read it again
        assert "default" in await _list_ns(store)
    finally:
        await store.close()


async def test_insecure_skip_tls_verify_and_a_wrong_ca(
    secured: ServerThread, tmp_path: Path
) -> None:
    insecure = write_kubeconfig(
        tmp_path / "insecure",
        server=secured.url,
        user={"token": TOKEN},
        **{"insecure-skip-tls-verify": True},
    )
    assert "default" in await _namespaces(load_kubeconfig(insecure, context="test"))
    other = generate_self_signed(tmp_path / "other", ["127.0.0.1"]).cert.read_bytes()
    wrong = write_kubeconfig(
        tmp_path / "wrong",
        server=secured.url,
        user={"token": TOKEN},
        **{"certificate-authority-data": base64.b64encode(other).decode()},
    )
    with pytest.raises(ServiceUnavailable, match="TLS"):
        await _namespaces(load_kubeconfig(wrong, context="test"))


def test_client_certificates_from_files_and_data(tmp_path: Path) -> None:
    pair = generate_self_signed(tmp_path / "client", ["client"])
    files = write_kubeconfig(
        tmp_path / "files",
        server="https://127.0.0.1:6443",
        user={"client-certificate": str(pair.cert), "client-key": str(pair.key)},
    )
    data = write_kubeconfig(
        tmp_path / "data",
        server="https://127.0.0.1:6443",
        user={
            "client-certificate-data": base64.b64encode(pair.cert.read_bytes()).decode(),
            "client-key-data": base64.b64encode(pair.key.read_bytes()).decode(),
        },
    )
    a, b = load_kubeconfig(files, context="test"), load_kubeconfig(data, context="test")
    assert a.client_cert_pem == b.client_cert_pem == pair.cert.read_bytes()
    assert a.client_key_pem == b.client_key_pem == pair.key.read_bytes()
    assert isinstance(ssl_context(a), ssl.SSLContext)  # the pair loads
    half = write_kubeconfig(
        tmp_path / "half", server="https://x", user={"client-certificate": str(pair.cert)}
    )
    with pytest.raises(BadRequest, match="client cert without key"):
        load_kubeconfig(half, context="test")
    bad = write_kubeconfig(
        tmp_path / "bad", server="https://x", user={"client-key-data": "not base64!"}
    )
    with pytest.raises(BadRequest, match="client-key-data is not base64"):
        load_kubeconfig(bad, context="test")


def _plugin(tmp_path: Path, *, api_version: str, expires: str | None, tokens: list[str]) -> Path:
    """An exec plugin script: the n-th run prints the n-th token (the last one after),
    and counts its runs in a file; it checks KUBERNETES_EXEC_INFO."""
    script = tmp_path / "plugin.sh"
    exp = f', "expirationTimestamp": "{expires}"' if expires else ""
    cases = "\n".join(f"  {i + 1}) t={t} ;;" for i, t in enumerate(tokens))
    script.write_text(
        f"""#!/bin/sh
case "$KUBERNETES_EXEC_INFO" in
  *'"kind":"ExecCredential"'*) ;;
  *) echo "no exec info" >&2; exit 3 ;;
esac
n=$(( $(cat "{tmp_path}/runs" 2>/dev/null || echo 0) + 1 ))
echo $n > "{tmp_path}/runs"
case $n in
{cases}
  *) t={tokens[-1]} ;;
esac
[ "$PLUGIN_GREETING" = hello ] || exit 4
echo '{{"apiVersion": "{api_version}", "kind": "ExecCredential",'
echo ' "status": {{"token": "'$t'"{exp}}}}}'
"""
    )
    script.chmod(0o755)
    return script


def _runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


@pytest.mark.parametrize(
    "api_version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]
)
async def test_exec_plugin_token_is_cached_until_it_expires(
    secured: ServerThread, tmp_path: Path, api_version: str
) -> None:
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    _plugin(
        tmp_path,
        api_version=api_version,
        expires=later.strftime("%Y-%m-%dT%H:%M:%SZ"),
        tokens=[TOKEN],
    )
    path = write_kubeconfig(
        tmp_path / "config",
        server=secured.url,
        user={
            "exec": {
                "apiVersion": api_version,
                "command": "./plugin.sh",  # relative to the kubeconfig
                "env": [{"name": "PLUGIN_GREETING", "value": "hello"}],
            }
        },
        **{"certificate-authority-data": ca_data(secured)},
    )
    store = KubeStore(load_kubeconfig(path, context="test"), ClientOptions(max_retries=0))
    try:
        for _ in range(3):
            assert "default" in await _list_ns(store)
    finally:
        await store.close()
    assert _runs(tmp_path) == 1


async def test_exec_plugin_runs_again_when_expired_or_refused(
    secured: ServerThread, tmp_path: Path
) -> None:
    past = "2020-01-01T00:00:00Z"
    script = _plugin(
        tmp_path,
        api_version="client.authentication.k8s.io/v1",
        expires=None,
        tokens=["refused", TOKEN],
    )
    creds = ExecCredentials(ExecConfig(command=str(script), env=(("PLUGIN_GREETING", "hello"),)))
    config = ClusterConfig(server=secured.url, ca_pem=ca_of(secured), tokens=creds)
    store = KubeStore(config, ClientOptions(max_retries=0))
    try:
        assert "default" in await _list_ns(store)  # 401 with "refused": run again
        assert _runs(tmp_path) == 2
        assert "default" in await _list_ns(store)
        assert _runs(tmp_path) == 2
    finally:
        await store.close()
    (tmp_path / "x").mkdir()
    expired = _plugin(
        tmp_path / "x", api_version="client.authentication.k8s.io/v1", expires=past, tokens=[TOKEN]
    )
    again = ExecCredentials(ExecConfig(command=str(expired), env=(("PLUGIN_GREETING", "hello"),)))
    await again.token()
    await again.token()
    assert _runs(tmp_path / "x") == 2  # an expired token is never reused


async def test_exec_plugin_failures(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="apiVersion 'v0' is not supported"):
        ExecCredentials(ExecConfig(command="x", api_version="v0"))
    script = _plugin(
        tmp_path, api_version="client.authentication.k8s.io/v1", expires=None, tokens=["t"]
    )
    no_env = ExecCredentials(ExecConfig(command=str(script)))
    with pytest.raises(Unauthorized, match="exited 4"):
        await no_env.token()
    wrong = ExecCredentials(
        ExecConfig(
            command=str(script),
            api_version="client.authentication.k8s.io/v1beta1",
            env=(("PLUGIN_GREETING", "hello"),),
        )
    )
    with pytest.raises(Unauthorized, match="configured for"):
        await wrong.token()
    with pytest.raises(Unauthorized, match="No such file"):
        await ExecCredentials(ExecConfig(command=str(tmp_path / "missing"))).token()


def _service_account(tmp_path: Path, ca: bytes, token: str) -> Path:
    d = tmp_path / "serviceaccount"
    d.mkdir()
    (d / "token").write_text(token)
    (d / "ca.crt").write_bytes(ca)
    (d / "namespace").write_text("gitkrm-system\n")
    return d


async def test_in_cluster_configuration(
    secured: ServerThread, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _service_account(tmp_path, ca_of(secured), TOKEN)
    monkeypatch.setattr(kubeconfig_module, "SERVICE_ACCOUNT_DIR", d)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(secured.port))
    config = in_cluster_config()
    assert config.server == f"https://127.0.0.1:{secured.port}"
    assert config.namespace == "gitkrm-system"
    store = await open_store("kube://", timeout=10)
    assert isinstance(store, KubeStore)
    try:
        assert "default" in await _list_ns(store)
    finally:
        await store.close()
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(BadRequest, match="not running in a cluster"):
        in_cluster_config()
    with pytest.raises(BadRequest, match="no service-account token"):
        in_cluster_config(
            env={"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"},
            directory=tmp_path / "nothing",
        )
