"""Where the cluster is and how to prove who we are: a kubeconfig context or the pod's
service account, reduced to one `ClusterConfig` the HTTP client can use.

Credentials that change while the agent runs (a projected service-account token, a
`tokenFile`, an exec plugin's short-lived token) live behind `TokenSource`, asked before
each request and told when the server answered 401, as client-go does.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import orjson
import yaml

from gitkrm.errors import BadRequest, Unauthorized

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD: Final = 60.0  # seconds: client-go re-reads token files once a minute
EXEC_API_VERSIONS: Final = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
)
EXEC_EXPIRY_MARGIN: Final = 10.0  # seconds before expirationTimestamp a token is renewed
EXEC_TIMEOUT: Final = 60.0


class TokenSource(Protocol):
    """A bearer token that may change: `token()` before a request, `invalidate()` after a 401."""

    async def token(self) -> str | None: ...

    def invalidate(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StaticToken:
    value: str

    async def token(self) -> str | None:
        return self.value

    def invalidate(self) -> None:
        return None


class FileToken:
    """A token read from a file, read again every minute and after a 401 (service-account
    tokens are projected and rotated by the kubelet)."""

    def __init__(self, path: Path, *, reread: float = TOKEN_REREAD) -> None:
        self.path = path
        self._reread = reread
        self._value: str | None = None
        self._read_at = 0.0

    async def token(self) -> str | None:
        now = time.monotonic()
        if self._value is None or now - self._read_at >= self._reread:
            try:
                value = self.path.read_text().strip()
            except OSError as e:
                if self._value is not None:
                    return self._value  # keep the last good one until the file is back
                raise Unauthorized(f"token file {self.path}: {e.strerror or e}") from None
            if not value:
                raise Unauthorized(f"token file {self.path} is empty")
            self._value, self._read_at = value, now
        return self._value

    def invalidate(self) -> None:
        self._read_at = 0.0


@dataclass(frozen=True, slots=True)
class ExecConfig:
    """A kubeconfig `user.exec` stanza (client.authentication.k8s.io/v1 or v1beta1)."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"


@dataclass(frozen=True, slots=True)
class ExecResult:
    token: str | None
    client_cert_pem: bytes | None
    client_key_pem: bytes | None
    expires: float | None  # time.time() seconds; None: valid until a 401


def _parse_expiry(value: Any) -> float | None:
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise BadRequest(f"exec credential: bad expirationTimestamp {value!r}") from None


class ExecCredentials:
    """Runs an exec credential plugin and caches what it returns until it expires (or
    the server answers 401); concurrent callers share one run."""

    def __init__(self, config: ExecConfig, *, cluster: Mapping[str, Any] | None = None) -> None:
        if config.api_version not in EXEC_API_VERSIONS:
            raise BadRequest(
                f"exec plugin {config.command}: apiVersion {config.api_version!r} is not "
                f"supported (use one of {', '.join(EXEC_API_VERSIONS)})"
            )
        self.config = config
        self._cluster = dict(cluster or {})
        self._cached: ExecResult | None = None
        self._lock = asyncio.Lock()
        self.runs = 0

    def _fresh(self) -> ExecResult | None:
        c = self._cached
        if c is None:
            return None
        if c.expires is not None and time.time() >= c.expires - EXEC_EXPIRY_MARGIN:
            return None
        return c

    async def result(self) -> ExecResult:
        hit = self._fresh()
        if hit is not None:
            return hit
        async with self._lock:
            hit = self._fresh()
            if hit is None:
                hit = self._cached = await self._run()
            return hit

    async def token(self) -> str | None:
        return (await self.result()).token

    def invalidate(self) -> None:
        self._cached = None

    async def _run(self) -> ExecResult:
        cfg = self.config
        spec: dict[str, Any] = {"interactive": False}
        if cfg.provide_cluster_info and self._cluster:
            spec["cluster"] = self._cluster
        info = {"apiVersion": cfg.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **dict(cfg.env), "KUBERNETES_EXEC_INFO": orjson.dumps(info).decode()}
        try:
            proc = await asyncio.create_subprocess_exec(
                cfg.command,
                *cfg.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as e:
            raise Unauthorized(f"exec plugin {cfg.command}: {e.strerror or e}") from None
        try:
            async with asyncio.timeout(EXEC_TIMEOUT):
                out, err = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise Unauthorized(
                f"exec plugin {cfg.command} did not answer within {EXEC_TIMEOUT:.0f}s"
            ) from None
        self.runs += 1
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise Unauthorized(f"exec plugin {cfg.command} exited {proc.returncode}: {tail[0]}")
        return self._parse(out)

    def _parse(self, out: bytes) -> ExecResult:
        cmd = self.config.command
        try:
            cred = orjson.loads(out)
        except orjson.JSONDecodeError:
            raise Unauthorized(f"exec plugin {cmd} printed no ExecCredential JSON") from None
        if not isinstance(cred, dict) or cred.get("kind") != "ExecCredential":
            raise Unauthorized(f"exec plugin {cmd} printed no ExecCredential")
        if cred.get("apiVersion") != self.config.api_version:
            raise Unauthorized(
                f"exec plugin {cmd} answered {cred.get('apiVersion')!r}, "
                f"configured for {self.config.api_version!r}"
            )
        status = cred.get("status") or {}
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if token is None and not (cert and key):
            raise Unauthorized(f"exec plugin {cmd} returned neither a token nor a client cert")
        return ExecResult(
            token=token,
            client_cert_pem=cert.encode() if cert else None,
            client_key_pem=key.encode() if key else None,
            expires=_parse_expiry(status.get("expirationTimestamp")),
        )


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """One cluster and one identity: what the HTTP client needs."""

    server: str
    ca_pem: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    tokens: TokenSource | None = None
    basic_auth: tuple[str, str] | None = None
    namespace: str = "default"
    exec_plugin: ExecCredentials | None = field(default=None, compare=False)


# -- kubeconfig files ---------------------------------------------------------------------


def _named(items: Any, name: str, what: str, path: Path) -> dict[str, Any]:
    for item in items or ():
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(what)
            return body if isinstance(body, dict) else {}
    raise BadRequest(f"kubeconfig {path}: no {what} named {name!r}")


def _data_or_file(
    section: Mapping[str, Any], key: str, base: Path, path: Path, *, what: str
) -> bytes | None:
    data = section.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except ValueError:
            raise BadRequest(f"kubeconfig {path}: {key}-data is not base64") from None
    file = section.get(key)
    if not file:
        return None
    p = Path(os.path.expanduser(str(file)))
    p = p if p.is_absolute() else base / p
    try:
        return p.read_bytes()
    except OSError as e:
        raise BadRequest(f"kubeconfig {path}: {what} {p}: {e.strerror or e}") from None


def _exec_config(spec: Mapping[str, Any], base: Path) -> ExecConfig:
    command = str(spec.get("command") or "")
    if not command:
        raise BadRequest("kubeconfig exec: no command")
    if "/" in command and not os.path.isabs(command):
        command = str(base / command)  # relative to the kubeconfig, as client-go does
    env = tuple(
        (str(e.get("name")), str(e.get("value", "")))
        for e in spec.get("env") or ()
        if isinstance(e, dict)
    )
    return ExecConfig(
        command=command,
        args=tuple(str(a) for a in spec.get("args") or ()),
        env=env,
        api_version=str(spec.get("apiVersion") or ""),
        provide_cluster_info=bool(spec.get("provideClusterInfo")),
        interactive_mode=str(spec.get("interactiveMode") or "IfAvailable"),
    )


def load_kubeconfig(path: str | Path, *, context: str | None = None) -> ClusterConfig:
    """The cluster and identity of one context (the current one by default)."""
    path = Path(os.path.expanduser(str(path)))
    try:
        doc = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
    except OSError as e:
        raise BadRequest(f"kubeconfig {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise BadRequest(f"kubeconfig {path}: not YAML: {e}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"kubeconfig {path}: not a kubeconfig")
    name = context or doc.get("current-context")
    if not name:
        raise BadRequest(f"kubeconfig {path}: no current-context; name one with context=")
    ctx = _named(doc.get("contexts"), str(name), "context", path)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster") or ""), "cluster", path)
    user_name = ctx.get("user")
    user = _named(doc.get("users"), str(user_name), "user", path) if user_name else {}
    base = path.parent
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise BadRequest(f"kubeconfig {path}: cluster of context {name!r} has no server URL")
    tokens: TokenSource | None = None
    plugin: ExecCredentials | None = None
    if user.get("token"):
        tokens = StaticToken(str(user["token"]))
    elif user.get("tokenFile"):
        tf = Path(os.path.expanduser(str(user["tokenFile"])))
        tokens = FileToken(tf if tf.is_absolute() else base / tf)
    if isinstance(user.get("exec"), dict) and tokens is None:
        info = {
            "server": server,
            "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify"),
        }
        plugin = ExecCredentials(_exec_config(user["exec"], base), cluster=info)
        tokens = plugin
    if user.get("auth-provider"):
        raise BadRequest(
            f"kubeconfig {path}: user {user_name!r} uses an auth-provider (removed from "
            "Kubernetes): use an exec credential plugin"
        )
    basic = None
    if user.get("username") and user.get("password"):
        basic = (str(user["username"]), str(user["password"]))
    cert = _data_or_file(user, "client-certificate", base, path, what="client certificate")
    key = _data_or_file(user, "client-key", base, path, what="client key")
    if (cert is None) != (key is None):
        raise BadRequest(f"kubeconfig {path}: user {user_name!r} has a client cert without key")
    return ClusterConfig(
        server=server.rstrip("/"),
        ca_pem=_data_or_file(cluster, "certificate-authority", base, path, what="CA file"),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name") or None,
        client_cert_pem=cert,
        client_key_pem=key,
        tokens=tokens,
        basic_auth=basic,
        namespace=str(ctx.get("namespace") or "default"),
        exec_plugin=plugin,
    )


def in_cluster_config(
    *, env: Mapping[str, str] | None = None, directory: Path | None = None
) -> ClusterConfig:
    """The pod's service account: KUBERNETES_SERVICE_HOST/PORT, its CA and its token
    (re-read as the kubelet rotates it); `directory` defaults to SERVICE_ACCOUNT_DIR."""
    env = os.environ if env is None else env
    directory = SERVICE_ACCOUNT_DIR if directory is None else directory
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise BadRequest(
            "not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
            "are unset): give kube://?kubeconfig=PATH"
        )
    token_file = directory / "token"
    if not token_file.is_file():
        raise BadRequest(f"in-cluster configuration: no service-account token at {token_file}")
    ca_file = directory / "ca.crt"
    try:
        ca = ca_file.read_bytes()
    except OSError as e:
        raise BadRequest(f"in-cluster configuration: CA {ca_file}: {e.strerror or e}") from None
    ns_file = directory / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.is_file() else "default"
    shown = f"[{host}]" if ":" in host else host
    return ClusterConfig(
        server=f"https://{shown}:{port}",
        ca_pem=ca,
        tokens=FileToken(token_file),
        namespace=namespace or "default",
    )
