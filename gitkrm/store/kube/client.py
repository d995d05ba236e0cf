"""The HTTP client of the cluster target: httpx with a timeout on every call, a client-side
rate limit (QPS and burst, a token bucket), bounded concurrency, and retries.

Retry policy (client-go's, see `request.go`): a 429 or a 5xx carrying Retry-After means the
server did not do the request, so any verb is retried after the time it asks for; a 429
without it is retried with backoff too. A 5xx without Retry-After, or a connection that
broke after the request went out, is retried only for reads (GET), whose repetition is
harmless; a connection that could not be opened at all is retried for every verb.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import random
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx
import orjson

from gitkrm import __version__
from gitkrm.errors import BadRequest, GitkrmError, ServiceUnavailable, Timeout, from_status
from gitkrm.store.kube.kubeconfig import ClusterConfig

log = logging.getLogger(__name__)

JSON: Final = "application/json"
USER_AGENT: Final = f"gitkrm/{__version__}"
_BEFORE_SEND: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_AFTER_SEND: Final = (
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
    httpx.ReadTimeout,
    httpx.WriteTimeout,
)
Params = Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """Limits of one client. `qps <= 0` turns the rate limit off."""

    qps: float = 1000.0
    burst: int = 2000
    concurrency: int = 32
    timeout: float = 30.0  # seconds, every call (watches: their own, longer one)
    max_retries: int = 8
    backoff: float = 0.1  # first backoff, doubled per attempt
    max_backoff: float = 5.0
    max_retry_after: float = 30.0
    http2: bool = False

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.burst < 1 or self.timeout <= 0 or self.max_retries < 0:
            raise BadRequest(
                "kube client options: concurrency and burst must be at least 1, timeout "
                "positive and max_retries not negative"
            )


class RateLimiter:
    """A token bucket: `burst` requests at once, then `qps` per second. Callers reserve a
    token and sleep until it is theirs (first come, first served)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = float(max(1, burst))
        self._tokens = self.burst
        self._at = time.monotonic()

    def reserve(self) -> float:
        """Take a token; the seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
        self._at = now
        self._tokens -= 1.0
        return -self._tokens / self.qps if self._tokens < 0 else 0.0

    async def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)


def ssl_context(
    config: ClusterConfig, cert_pem: bytes | None = None, key_pem: bytes | None = None
) -> ssl.SSLContext:
    """TLS settings of a cluster: its CA (or the system's), insecure-skip-tls-verify, and
    a client certificate (written to a private temporary file only while it is loaded:
    Python's ssl reads certificates from files only)."""
    ctx = ssl.create_default_context()
    if config.ca_pem:
        try:
            ctx.load_verify_locations(cadata=config.ca_pem.decode())
        except (ssl.SSLError, ValueError) as e:
            raise BadRequest(f"cluster {config.server}: bad certificate authority: {e}") from None
    if config.insecure_skip_tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert_pem = cert_pem or config.client_cert_pem
    key_pem = key_pem or config.client_key_pem
    if cert_pem and key_pem:
        with tempfile.TemporaryDirectory(prefix="gitkrm-tls-") as d:
            cf, kf = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
            for p, data in ((cf, cert_pem), (kf, key_pem)):
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            try:
                ctx.load_cert_chain(cf, kf)
            except ssl.SSLError as e:
                raise BadRequest(f"cluster {config.server}: bad client certificate: {e}") from None
    return ctx


def error_of(resp: httpx.Response, method: str, path: str) -> GitkrmError:
    """The gitkrm error for an error response (its Status body, or a plain one)."""
    code = resp.status_code
    status: Any = None
    with contextlib.suppress(orjson.JSONDecodeError):
        status = orjson.loads(resp.content)
    if not isinstance(status, dict) or status.get("kind") != "Status":
        text = resp.content[:200].decode(errors="replace").strip()
        status = {"code": code, "message": f"{method} {path}: HTTP {code}: {text}"}
    err = from_status(status, http_code=code)
    after = retry_after(resp)
    if after is not None and err.details.retry_after_seconds is None:
        err.details.retry_after_seconds = round(after)
    return err


def _tls_failure(e: BaseException) -> ssl.SSLError | None:
    """The TLS error under a transport error (httpx wraps httpcore's, which wraps ssl's)."""
    seen: BaseException | None = e
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from API servers; fall back to backoff


class KubeClient:
    """Requests to one API server, limited and retried as the module docstring says."""

    def __init__(self, config: ClusterConfig, options: ClientOptions | None = None) -> None:
        self.config = config
        self.options = options or ClientOptions()
        self.limiter = RateLimiter(self.options.qps, self.options.burst)
        self._sem = asyncio.Semaphore(self.options.concurrency)
        self._http: httpx.AsyncClient | None = None
        self._exec_cert: bytes | None = None
        self._retired: list[httpx.AsyncClient] = []
        self.requests = 0  # sent, retries included
        self.retries = 0
        self._extensions: dict[str, Any] = {}
        if config.tls_server_name:
            self._extensions["sni_hostname"] = config.tls_server_name

    async def _client(self) -> httpx.AsyncClient:
        """The httpx client; made anew when an exec plugin hands out a new client cert."""
        cert = key = None
        plugin = self.config.exec_plugin
        if plugin is not None:
            res = await plugin.result()
            cert, key = res.client_cert_pem, res.client_key_pem
        if self._http is not None and cert == self._exec_cert:
            return self._http
        if self._http is not None:
            self._retired.append(self._http)
        o = self.options
        verify: ssl.SSLContext | bool = (
            ssl_context(self.config, cert, key) if self.config.server.startswith("https") else True
        )
        self._http = httpx.AsyncClient(
            base_url=self.config.server,
            verify=verify,
            http2=o.http2,
            timeout=httpx.Timeout(o.timeout),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=o.concurrency),
            headers={"user-agent": USER_AGENT, "accept": JSON},
        )
        self._exec_cert = cert
        return self._http

    async def _auth(self) -> dict[str, str]:
        tokens = self.config.tokens
        if tokens is not None:
            token = await tokens.token()
            if token:
                return {"authorization": f"Bearer {token}"}
        if self.config.basic_auth is not None:
            user, password = self.config.basic_auth
            raw = base64.b64encode(f"{user}:{password}".encode()).decode()
            return {"authorization": f"Basic {raw}"}
        return {}

    def _backoff(self, attempt: int, after: float | None) -> float:
        o = self.options
        if after is not None:
            return min(after, o.max_retry_after)
        base = min(o.max_backoff, o.backoff * float(2**attempt))
        return base * (0.5 + random.random() / 2)  # jitter, not crypto

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params = (),
        body: bytes | None = None,
        content_type: str = JSON,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One API call; its JSON answer, or the gitkrm error of its Status."""
        read = method == "GET"
        reauth = True
        attempt = 0
        while True:
            await self.limiter.acquire()
            http = await self._client()
            sent = await self._auth()
            if headers:
                sent.update(headers)
            if body is not None:
                sent["content-type"] = content_type
            try:
                async with self._sem:
                    self.requests += 1
                    resp = await http.request(
                        method,
                        path,
                        params=list(params),
                        content=body,
                        headers=sent,
                        extensions=self._extensions,
                    )
            except httpx.TimeoutException as e:
                if attempt < self.options.max_retries and (read or isinstance(e, _BEFORE_SEND)):
                    await self._sleep(attempt, None, f"{method} {path}: {e!r}")
                    attempt += 1
                    continue
                raise Timeout(f"{method} {path}: no answer from {self.config.server}") from None
            except httpx.TransportError as e:
                tls = _tls_failure(e)
                if tls is not None:  # a wrong CA or certificate: trying again won't help
                    raise ServiceUnavailable(
                        f"{method} {path}: TLS with {self.config.server} failed: {tls}"
                    ) from None
                if attempt < self.options.max_retries and (read or isinstance(e, _BEFORE_SEND)):
                    await self._sleep(attempt, None, f"{method} {path}: {e!r}")
                    attempt += 1
                    continue
                raise ServiceUnavailable(
                    f"{method} {path}: {self.config.server}: {e or type(e).__name__}"
                ) from None
            code = resp.status_code
            if code < 400:
                return orjson.loads(resp.content) if resp.content else {}
            if code == 401 and reauth and self.config.tokens is not None:
                reauth = False  # a rotated or expired token: fetch it again, once
                self.config.tokens.invalidate()
                continue
            after = retry_after(resp)
            retryable = code == 429 or (code >= 500 and (after is not None or read))
            if retryable and attempt < self.options.max_retries:
                await self._sleep(attempt, after, f"{method} {path}: HTTP {code}")
                attempt += 1
                continue
            raise error_of(resp, method, path)

    async def _sleep(self, attempt: int, after: float | None, why: str) -> None:
        self.retries += 1
        delay = self._backoff(attempt, after)
        log.debug("retrying in %.2fs: %s", delay, why)
        await asyncio.sleep(delay)

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, params: Params = (), read_timeout: float | None = None
    ) -> AsyncIterator[httpx.Response]:
        """A long GET (a watch): the open response, status checked. Not counted against
        the concurrency bound (it would hold a slot for minutes); rate limited."""
        reauth = True
        while True:
            await self.limiter.acquire()
            http = await self._client()
            headers = await self._auth()
            timeout = httpx.Timeout(self.options.timeout, read=read_timeout)
            self.requests += 1
            async with http.stream(
                "GET",
                path,
                params=list(params),
                headers=headers,
                timeout=timeout,
                extensions=self._extensions,
            ) as resp:
                if resp.status_code == 401 and reauth and self.config.tokens is not None:
                    reauth = False
                    self.config.tokens.invalidate()
                    continue
                if resp.status_code >= 400:
                    await resp.aread()
                    raise error_of(resp, "GET", path)
                yield resp
                return

    async def close(self) -> None:
        clients = [*self._retired, *([self._http] if self._http is not None else [])]
        self._http = None
        self._retired = []
        for c in clients:
            await c.aclose()


def encode_params(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Query parameters without the unset ones; booleans as Kubernetes spells them."""
    out: list[tuple[str, str]] = []
    for k, v in params.items():
        if v is None or v is False:
            continue
        out.append((k, "true" if v is True else str(v)))
    return out
