"""Keep credentials out of every message: URL user-info and known secret strings."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "***"

# scheme://user[:password]@host -- anything up to the last '@' before the host part.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s'\"]*)@")


@dataclass(frozen=True, slots=True)
class UrlParts:
    """A remote URL split into the part safe to show and the user-info it carried."""

    url: str
    username: str | None = None
    password: str | None = None


def split_userinfo(url: str) -> UrlParts:
    """`https://user:tok@host/x` -> (`https://host/x`, user, tok); other URLs unchanged.

    scp-like SSH remotes (`git@host:repo`) keep their user: it names the account, not a secret.
    """
    if "://" not in url:
        return UrlParts(url)
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return UrlParts(url)
    info, _, hostport = parts.netloc.rpartition("@")
    user, sep, password = info.partition(":")
    if parts.scheme in ("ssh", "git+ssh") and not sep:
        return UrlParts(url)
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return UrlParts(clean, unquote(user) or None, unquote(password) if sep else None)


class Redactor:
    """Replaces secrets (and their URL-quoted forms) and URL user-info in text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        for s in secrets:
            self.add(s)

    def add(self, secret: str) -> None:
        from urllib.parse import quote

        # Short strings would redact ordinary words; real secrets are longer.
        for form in {secret, quote(secret, safe="")}:
            if len(form) >= 4 and form not in self._secrets:
                self._secrets.append(form)
        self._secrets.sort(key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
        for s in self._secrets:
            text = text.replace(s, REDACTED)
        return text
