"""The one reader of HTTP `Link` headers (RFC 8288): the target of `rel="next"`, how both a
registry's tag list (the OCI distribution spec) and a Git host's REST listings (GitHub's,
Gitea's) say where the next page is."""

from __future__ import annotations


def next_link(header: str | None) -> str | None:
    """The URI of the `rel="next"` link of a `Link` header, as written (None: none)."""
    for part in (header or "").split(","):
        segments = [s.strip() for s in part.split(";")]
        target = segments[0]
        if not (target.startswith("<") and target.endswith(">")):
            continue
        rels = {s.partition("=")[2].strip('"').lower() for s in segments[1:]
                if s.partition("=")[0].strip().lower() == "rel"}  # fmt: skip
        if any("next" in r.split() for r in rels):
            return target[1:-1]
    return None


__all__ = ["next_link"]
