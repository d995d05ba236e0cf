"""The JSON REST API of a Git host (GitHub's, Gitea's), as Argo CD's SCM clients call it.

GET only, with the host's token (read from its `SecretRef` at every client, so a rotated
token is used at once) in an `Authorization` header sent to the API's own origin only
(a redirect elsewhere is refused, never followed with the token), a timeout per request,
a bounded body, and pages followed as go-github follows them: the `page` of the
`rel="next"` link of the `Link` header, asked of the same URL. A failure is an
`ApiError` naming the method, the URL (no token: it never is in one) and the HTTP
status with the host's message, all redacted of the token.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from gitkrm.errors import ServiceUnavailable

from .bounded import SessionClient, read_bounded
from .credentials import SecretRef
from .links import next_link
from .redact import Redactor

if TYPE_CHECKING:
    pass

TIMEOUT: Final = 30.0
"""Seconds for one request (connect, headers and body)."""
MAX_BODY: Final = 8 * 1024 * 1024
"""Bytes of one response (100 pull requests of GitHub's are about 1 MiB)."""
MAX_PAGES: Final = 100
"""Pages of one listing (10,000 items at 100 a page)."""
_REDIRECTS: Final = 5


class ApiError(ServiceUnavailable):
    """The host answered with an error (`status`), or not at all (`status` None)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class RestApi:
    """One host's API: its base URL (ending in `/`), its token and how it is sent."""

    base: str
    token: SecretRef | None = None
    scheme: str = "Bearer"
    """`Authorization: <scheme> <token>` (go-github: `Bearer`; Gitea's SDK: `token`)."""
    headers: tuple[tuple[str, str], ...] = ()
    insecure: bool = False
    """Skip TLS verification (Gitea's `insecure`)."""
    timeout: float = TIMEOUT
    max_body: int = MAX_BODY


def next_page(link: str | None) -> str | None:
    """The `page` of the `rel="next"` link of a `Link` header (go-github's
    `populatePageValues`); None on the last page."""
    target = next_link(link)
    if target is None:
        return None
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
    return (query.get("page") or [""])[0] or None


class RestClient(SessionClient):
    """`async with RestClient(api) as c:` one session; `get`, `pages`, `exists`."""

    def __init__(self, api: RestApi) -> None:
        self.api = api
        self._authorization: str | None = None
        self._redact = Redactor()

    async def __aenter__(self) -> RestClient:
        if self.api.token is not None:
            token = self.api.token.read()
            self._redact.add(token)
            self._authorization = f"{self.api.scheme} {token}"
        self._open(self.api.timeout)
        return self

    def url(self, path: str, params: Mapping[str, str] | None = None) -> str:
        url = urllib.parse.urljoin(self.api.base, path.lstrip("/"))
        return f"{url}?{urllib.parse.urlencode(params)}" if params else url

    async def get(
        self, path: str, params: Mapping[str, str] | None = None, *, missing_ok: bool = False
    ) -> tuple[Any, Mapping[str, str]]:
        """The JSON body and headers of `GET path?params`; `(None, {})` for a 404 when
        `missing_ok`."""
        import aiohttp

        assert self._session is not None, "use `async with RestClient(...)`"
        url = self.url(path, params)
        own = urllib.parse.urlsplit(url)[:2]
        headers = {"Accept": "application/json", **dict(self.api.headers)}
        if self._authorization:
            headers["Authorization"] = self._authorization
        target = url
        try:
            for _ in range(_REDIRECTS + 1):
                async with self._session.get(
                    target, headers=headers, allow_redirects=False,
                    ssl=not self.api.insecure,
                ) as r:  # fmt: skip
                    if r.status in (301, 302, 303, 307, 308):
                        target = urllib.parse.urljoin(target, r.headers.get("Location", ""))
                        if urllib.parse.urlsplit(target)[:2] != own:
                            raise self._error(
                                url, f"redirected to another host ({r.status})", r.status
                            )
                        continue
                    if r.status == 404 and missing_ok:
                        return None, {}
                    body = await read_bounded(r.content, self.api.max_body)
                    if body is None:
                        raise self._error(url, f"more than {self.api.max_body:,} bytes", r.status)
                    if r.status != 200:
                        said = _message(body)
                        reason = f"HTTP {r.status} {r.reason or ''}".rstrip()
                        raise self._error(url, f"{reason}{': ' + said if said else ''}", r.status)
                    try:
                        return json.loads(body), dict(r.headers)
                    except ValueError:
                        raise self._error(url, "the answer is not JSON", r.status) from None
            raise self._error(url, f"more than {_REDIRECTS} redirects", None)
        except aiohttp.ClientError as e:
            raise self._error(url, " ".join(str(e).split()) or type(e).__name__, None) from None
        except TimeoutError:
            raise self._error(url, f"timed out after {self.api.timeout:g}s", None) from None

    async def pages(
        self, path: str, params: Mapping[str, str] | None = None, *, missing_ok: bool = False
    ) -> list[Any] | None:
        """Every item of a listing, page after page (None: a 404 when `missing_ok`)."""
        out: list[Any] = []
        query = dict(params or {})
        for _ in range(MAX_PAGES):
            items, headers = await self.get(path, query, missing_ok=missing_ok)
            if items is None and missing_ok:
                return None
            if not isinstance(items, list):
                raise self._error(self.url(path, query), "the answer is not a list", 200)
            out.extend(items)
            page = next_page(headers.get("Link"))
            if page is None:
                return out
            query["page"] = page
        raise self._error(self.url(path, params), f"more than {MAX_PAGES} pages", 200)

    async def exists(self, path: str, params: Mapping[str, str] | None = None) -> bool:
        """Whether `GET path` answers (a 404 is False; other errors raise)."""
        found, _ = await self.get(path, params, missing_ok=True)
        return found is not None

    def _error(self, url: str, what: str, status: int | None) -> ApiError:
        return ApiError(self._redact(f"GET {url}: {what}"), status=status)


def _message(body: bytes) -> str:
    """The host's own `message` of an error body (GitHub's and Gitea's), bounded."""
    try:
        said = json.loads(body).get("message")
    except (ValueError, AttributeError):
        return ""
    return " ".join(str(said).split())[:200] if said else ""


__all__ = ["MAX_BODY", "MAX_PAGES", "TIMEOUT", "ApiError", "RestApi", "RestClient", "next_page"]
