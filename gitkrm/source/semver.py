"""Semantic versions and Helm's version constraints (Masterminds/semver, which Helm uses for
dependency versions): `1.2.3`, `=`, `!=`, `>`, `<`, `>=`, `<=`, `~1.2` (patch updates), `^1.2`
(minor updates; below 1.0 patch only, as Masterminds does), wildcards (`1.2.x`, `1.*`, `*`),
hyphen ranges (`1.2 - 1.4.5`), `,` or space for "and", `||` for "or". A pre-release
matches only where every comparator of an "and" names a pre-release (Masterminds checks
each comparator: `>=1.0.0-0 <2.0.0` takes no 1.5.0-rc.1, `>=1.0.0-0 <2.0.0-0` does).
Versions may carry a leading `v` and leave out minor or patch (`v1.2` is 1.2.0), as
Masterminds' `NewVersion`. Helm's chart versions and Flux's `GitRepository`
`spec.ref.semver` use them. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering

from gitkrm.errors import BadRequest

_VERSION = re.compile(
    r"^v?(?P<major>0|[1-9]\d*|[xX*])(?:\.(?P<minor>\d+|[xX*]))?(?:\.(?P<patch>\d+|[xX*]))?"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)
_WILD = frozenset({"x", "X", "*"})
_ALIASES = {"=>": ">=", "=<": "<=", "~>": "~"}


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        m = _VERSION.match(text.strip())
        if m is None or any(m.group(g) in _WILD for g in ("major", "minor", "patch")):
            raise BadRequest(f"{text!r} is not a semantic version")
        pre = tuple(int(p) if p.isdigit() else p for p in (m.group("pre") or "").split(".") if p)
        return cls(
            int(m.group("major")), int(m.group("minor") or 0), int(m.group("patch") or 0), pre
        )

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # A release sorts after its pre-releases; numeric identifiers before alphanumeric.
        pre = tuple((0, p) if isinstance(p, int) else (1, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return base + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")


@dataclass(frozen=True, slots=True)
class _Bound:
    op: str  # one of = != > < >= <=
    version: Version
    pre: bool = False
    """The comparator it came from names a pre-release (so pre-releases may match it)."""

    def holds(self, v: Version) -> bool:
        w = self.version
        return {
            "=": v == w,
            "!=": v != w,
            ">": v > w,
            "<": v < w,
            ">=": v >= w,
            "<=": v <= w,
        }[self.op]


@dataclass(frozen=True, slots=True)
class Constraint:
    """Alternatives (`||`), each a conjunction of bounds."""

    text: str
    alternatives: tuple[tuple[_Bound, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Constraint:
        alts: list[tuple[_Bound, ...]] = []
        for part in text.split("||"):
            part = re.sub(r"\s*-\s+", " - ", part.strip())
            part = re.sub(r"(>=|<=|!=|[=<>~^])\s+", r"\1", part)
            tokens = [t for t in re.split(r"[\s,]+", part) if t]
            bounds: list[_Bound] = []
            i = 0
            while i < len(tokens):
                if i + 2 < len(tokens) and tokens[i + 1] == "-":
                    lo = _expand(">=", tokens[i], text)
                    hi = _expand("<=", tokens[i + 2], text)
                    bounds += [*lo, *hi]
                    i += 3
                    continue
                m = re.match(r"^(>=|=>|<=|=<|!=|~>|=|>|<|~|\^)?(.*)$", tokens[i])
                assert m is not None
                op = _ALIASES.get(m.group(1) or "=", m.group(1) or "=")
                bounds += _expand(op, m.group(2), text)
                i += 1
            alts.append(tuple(bounds))
        return cls(text, tuple(alts))

    def allows(self, v: Version) -> bool:
        for alt in self.alternatives:
            if v.pre and not (alt and all(b.pre for b in alt)):
                continue  # a pre-release needs every comparator to name one
            if all(b.holds(v) for b in alt):
                return True
        return False


def _expand(op: str, text: str, whole: str) -> list[_Bound]:
    """One `op version` term as plain bounds (wildcards, `~` and `^` become ranges)."""
    m = _VERSION.match(text)
    if m is None:
        raise BadRequest(f"version constraint {whole!r}: {text!r} is not a version")
    parts = [m.group("major"), m.group("minor"), m.group("patch")]
    given = [p for p in parts if p is not None]
    wild = next((i for i, p in enumerate(given) if p in _WILD), len(given))
    nums = [int(p) for p in given[:wild]]
    pre = m.group("pre")
    named = pre is not None
    exact = len(nums) == 3
    full = [*nums, 0, 0, 0]
    low = Version(full[0], full[1], full[2], _pre(pre) if exact else ())
    if not nums:  # `*`; `*-0` takes pre-releases too (Argo CD's and Helm's idiom)
        if op not in ("=", ">=", "<=", "~", "^"):
            return [_Bound("<", Version(0, 0, 0))]
        return [_Bound(">=", Version(0, 0, 0, _pre(pre)), True)] if named else []

    def bump(index: int) -> Version:
        up = [*nums[: index + 1], *([0] * 3)][:3]
        up[index] += 1
        for j in range(index + 1, 3):
            up[j] = 0
        return Version(up[0], up[1], up[2])

    if op == "^":
        first = next((i for i, n in enumerate(nums) if n != 0), len(nums) - 1)
        if len(nums) < 3 and first >= len(nums) - 1 and nums[first] == 0:
            first = len(nums) - 1
        return [_Bound(">=", low, named), _Bound("<", bump(min(first, len(nums) - 1)), named)]
    if op == "~":
        index = 1 if len(nums) >= 2 else 0
        return [_Bound(">=", low, named), _Bound("<", bump(index), named)]
    if exact:
        return [_Bound(op, low, named)]
    # A partial version: a range over what is left out.
    top = bump(len(nums) - 1)
    return {
        "=": [_Bound(">=", low, named), _Bound("<", top, named)],
        "!=": [],  # approximated: a partial != excludes nothing
        ">": [_Bound(">=", top, named)],
        ">=": [_Bound(">=", low, named)],
        "<": [_Bound("<", low, named)],
        "<=": [_Bound("<", top, named)],
    }[op]


def _pre(text: str | None) -> tuple[int | str, ...]:
    return tuple(int(p) if p.isdigit() else p for p in (text or "").split(".") if p)


def newest(versions: Iterable[str], constraint: str) -> str | None:
    """The newest of `versions` the constraint allows (unparsable versions are skipped; of
    equal versions, `v1.0.0` and `1.0.0+build`, the last in sorted order)."""
    c = Constraint.parse(constraint or "*")
    best: tuple[Version, str] | None = None
    for text in sorted(versions):
        try:
            v = Version.parse(text)
        except BadRequest:
            continue
        if c.allows(v) and (best is None or v >= best[0]):
            best = (v, text)
    return None if best is None else best[1]
