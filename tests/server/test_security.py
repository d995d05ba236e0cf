"""Loopback needs nothing; any other address needs a bearer token and TLS."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from gitkrm.errors import BadRequest
from gitkrm.server import ServeOptions, ServerThread, is_loopback, parse_listen
from gitkrm.server.auth import load_token
from gitkrm.server.tls import ensure_self_signed, generate_self_signed
from tests.server.conftest import Kubectl, kubectl_path


def test_loopback_and_listen_parsing() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.5.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("10.1.2.3")
    assert not is_loopback("example")
    assert parse_listen("127.0.0.1:6443") == ("127.0.0.1", 6443)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("6443", "host:", ":80", "h:99999"):
        with pytest.raises(BadRequest):
            parse_listen(bad)


def test_other_addresses_need_a_token_and_tls(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="needs a bearer token"):
        ServeOptions(host="0.0.0.0", state_dir=tmp_path).secured()
    with pytest.raises(BadRequest, match="without TLS"):
        ServeOptions(host="0.0.0.0", token="t").secured()
    secured = ServeOptions(host="0.0.0.0", token="t", state_dir=tmp_path).secured()
    assert secured.tls is not None
    assert secured.tls.cert == tmp_path / "tls.crt"
    assert oct(secured.tls.key.stat().st_mode & 0o777) == "0o600"
    again = ServeOptions(host="0.0.0.0", token="t", state_dir=tmp_path).secured()
    assert again.tls is not None
    assert again.tls.cert.read_bytes() == secured.tls.cert.read_bytes()


def test_generated_pair_is_renewed_for_new_hosts(tmp_path: Path) -> None:
    first = generate_self_signed(tmp_path, ["localhost", "127.0.0.1"]).cert.read_bytes()
    same = ensure_self_signed(tmp_path, ["127.0.0.1"])
    assert same.cert.read_bytes() == first
    wider = ensure_self_signed(tmp_path, ["127.0.0.1", "10.9.8.7"])
    assert wider.cert.read_bytes() != first


def test_token_file(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text("  s3cret\n")
    assert load_token(f) == "s3cret"
    f.write_text("")
    with pytest.raises(BadRequest, match="empty"):
        load_token(f)
    with pytest.raises(BadRequest):
        load_token(tmp_path / "missing")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    state = tmp_path_factory.mktemp("secure")
    server = ServerThread(
        store_path=":memory:",
        options=ServeOptions(host="0.0.0.0", port=0, token="tok3n", state_dir=state),
    )
    server.start()
    yield server
    server.stop()


def test_token_and_tls_with_the_generated_kubeconfig(secured: ServerThread, tmp_path: Path) -> None:
    assert secured.bound is not None
    assert secured.bound.kubeconfig is not None
    assert secured.url.startswith("https://127.0.0.1:")
    kc = yaml.safe_load(secured.bound.kubeconfig.read_text())
    assert kc["users"][0]["user"] == {"token": "tok3n"}
    ca = Path(secured.bound.kubeconfig.parent / "tls.crt")
    ctx = ssl.create_default_context(cafile=str(ca))
    with httpx.Client(base_url=secured.url, verify=ctx) as c:
        r = c.get("/api/v1/namespaces")
        assert r.status_code == 401
        assert r.json()["reason"] == "Unauthorized"
        assert c.get("/healthz").status_code == 200  # public, as on a cluster
        r = c.get("/api/v1/namespaces", headers={"authorization": "Bearer wrong"})
        assert r.status_code == 401
        r = c.get("/api/v1/namespaces", headers={"authorization": "Bearer tok3n"})
        assert r.status_code == 200
    k = Kubectl(binary=kubectl_path(), kubeconfig=secured.bound.kubeconfig, home=tmp_path)
    names = json.loads(k("get", "namespaces", "-o", "json"))["items"]
    assert "default" in [n["metadata"]["name"] for n in names]
