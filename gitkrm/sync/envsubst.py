"""Flux's post-build variable substitution language: `${var}` and the bash forms it takes.

A port of `github.com/fluxcd/pkg/envsubst` (Flux's fork of drone/envsubst, what the
kustomize-controller runs), quirks included, so a manifest renders as Flux renders it:

- only `${...}` is an expression (a bare `$var` is text); `$$` is one `$` anywhere in the
  text, so `$${var}` is the literal `${var}`;
- `${var}`, `${#var}` (length in bytes), `${var^}`, `${var^^}`, `${var,}`, `${var,,}`,
  `${var:n}`, `${var:n:len}` (byte offsets), `${var#pat}`, `${var##pat}`, `${var%pat}`,
  `${var%%pat}` (shell patterns), `${var/pat/rep}`, `${var//pat/rep}`, `${var/#pat/rep}`,
  `${var/%pat/rep}`, and the defaults `${var-d}`, `${var:-d}`, `${var=d}`, `${var:=d}`
  (each of them takes the default when the value is empty, as Flux's do); defaults and
  arguments may hold expressions;
- strict mode: a variable that is not set is an error, except under a default form.

The parser is drone's scanner, kept token for token (its corner cases are the contract);
only plain text between expressions is scanned with `str.find`, and nothing recurses per
token, so a long document costs no more than its expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

_EOF: Final = ""
# tokens
_ILLEGAL, _EOF_TOKEN, _IDENT, _LBRACK, _RBRACK = range(5)
# scanner modes
_SCAN_IDENT, _SCAN_LBRACK, _SCAN_RBRACK, _SCAN_ESCAPE = 1, 2, 4, 8
# escape characters
_DOLLAR, _BACKSLASH = 1, 2
_ESCAPE_ALL: Final = _DOLLAR | _BACKSLASH

_DEFAULT_OPS: Final = frozenset({"-", "+", "=", "?", ":-", ":+", ":=", ":?"})


class SubstitutionError(Exception):
    """A bad expression or (strict mode) an unset variable; `line`: how many lines of the
    text come before it (0 on the first line)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(slots=True)
class _Text:
    value: str


@dataclass(slots=True)
class _Func:
    param: str = ""
    name: str = ""
    args: list[_Node] = field(default_factory=list)
    line: int = 0  # lines before its `${`


_Node = _Text | _Func
Accept = Callable[[str, int], bool]


def _accept_rune(r: str, i: int) -> bool:
    return True


def _accept_ident(r: str, i: int) -> bool:
    return r.isalpha() or r.isdigit() or r == "_"


def _accept_colon(r: str, i: int) -> bool:
    return r == ":"


def _accept_one_hash(r: str, i: int) -> bool:
    return r == "#" and i == 1


def _accept_not_closing(r: str, i: int) -> bool:
    return r != "}"


def _accept_hash_func(r: str, i: int) -> bool:
    return r == "#" and i < 3


def _accept_percent_func(r: str, i: int) -> bool:
    return r == "%" and i < 3


def _accept_default_func(r: str, i: int) -> bool:
    return (i == 1 and r == ":") or (i == 2 and r in "=-?+")


def _accept_replace_func(r: str, i: int) -> bool:
    return (i == 1 and r == "/") or (i == 2 and r in "/#%")


def _accept_one_equal(r: str, i: int) -> bool:
    return i == 1 and r == "="


def _accept_one_colon(r: str, i: int) -> bool:
    return i == 1 and r == ":"


def _reject_colon_close(r: str, i: int) -> bool:
    return r not in ":}"


def _accept_slash(r: str, i: int) -> bool:
    return r == "/"


def _accept_not_slash(r: str, i: int) -> bool:
    return r != "/"


def _accept_casing_func(r: str, i: int) -> bool:
    return r in ",^" and i < 3


class _Scanner:
    """drone/envsubst's scanner (positions in code points; every operator is ASCII, so
    its byte-counted positions agree)."""

    __slots__ = ("accept", "buf", "escape", "mode", "pos", "start", "width")

    def __init__(self, buf: str) -> None:
        self.buf = buf
        self.pos = 0
        self.start = 0
        self.width = 0
        self.mode = 0
        self.escape = _DOLLAR
        self.accept: Accept = _accept_rune

    def read(self) -> str:
        if self.pos >= len(self.buf):
            self.width = 0
            return _EOF
        r = self.buf[self.pos]
        self.width = 1
        self.pos += 1
        return r

    def unread(self) -> None:
        self.pos -= self.width

    def skip(self) -> None:
        self.buf = self.buf[: self.pos - 1] + self.buf[self.pos :]

    def peek(self) -> str:
        r = self.read()
        self.unread()
        return r

    def string(self) -> str:
        return self.buf[self.start : self.pos]

    def scan(self) -> int:
        self.start = self.pos
        r = self.read()
        if r == _EOF:
            return _EOF_TOKEN
        if self._lbrack(r):
            return _LBRACK
        if self._rbrack(r):
            return _RBRACK
        if self._ident(r):
            return _IDENT
        return _ILLEGAL

    def _ident(self, r: str) -> bool:
        if not self.mode & _SCAN_IDENT:
            return False
        if self._escaped(r):
            self.skip()
        elif not self.accept(r, self.pos - self.start):
            return False
        while True:
            r = self.read()
            if r == _EOF:
                self.unread()
                break
            if self._lbrack(r):
                self.unread()
                self.unread()
                break
            if self._escaped(r):
                self.skip()
                continue
            if not self.accept(r, self.pos - self.start):
                self.unread()
                break
        return True

    def _lbrack(self, r: str) -> bool:
        if not self.mode & _SCAN_LBRACK:
            return False
        if r == "$":
            if self.read() == "{":
                return True
            self.unread()
        return False

    def _rbrack(self, r: str) -> bool:
        return bool(self.mode & _SCAN_RBRACK) and r == "}"

    def _escaped(self, r: str) -> bool:
        if not self.mode & _SCAN_ESCAPE:
            return False
        if r == "$" and self.escape & _DOLLAR and self.peek() == "$":
            return True
        return r == "\\" and bool(self.escape & _BACKSLASH) and self.peek() in ("/", "\\")


class _Parser:
    """drone/envsubst's recursive-descent parser of one `${...}`."""

    def __init__(self, s: _Scanner) -> None:
        self.s = s
        self.line = 0  # of the expression being parsed

    def func(self) -> _Node:
        s = self.s
        s.escape = _ESCAPE_ALL
        if s.peek() == "#":
            node = self._len()
            node.line = self.line
            return node
        s.accept, s.mode = _accept_ident, _SCAN_IDENT
        if s.scan() != _IDENT:
            raise SubstitutionError("unable to parse variable name")
        name = s.string()
        nxt = s.peek()
        if nxt == ":":
            node = self._default_or_substr(name)
        elif nxt == "=":
            node = self._default(name)
        elif nxt in (",", "^"):
            node = self._casing(name)
        elif nxt == "/":
            node = self._replace(name)
        elif nxt == "#":
            node = self._remove(name, _accept_hash_func)
        elif nxt == "%":
            node = self._remove(name, _accept_percent_func)
        else:
            s.accept, s.mode = _accept_ident, _SCAN_RBRACK
            if s.scan() != _RBRACK:
                raise SubstitutionError("missing closing brace")
            node = _Func(param=name)
        node.line = self.line
        return node

    def _bad(self) -> SubstitutionError:
        return SubstitutionError("bad substitution")

    def _ident(self, accept: Accept) -> str:
        """The next identifier `accept` takes (a function's name, a parameter); else "bad
        substitution"."""
        s = self.s
        s.accept, s.mode = accept, _SCAN_IDENT
        if s.scan() != _IDENT:
            raise self._bad()
        return s.string()

    def _param(self, accept: Accept, mode: int) -> _Node:
        s = self.s
        s.accept, s.mode = accept, mode | _SCAN_LBRACK
        tok = s.scan()
        if tok == _LBRACK:
            return self.func()
        if tok in (_IDENT, _RBRACK):
            return _Text(s.string())
        raise SubstitutionError("unable to parse substitution within function")

    def _default_or_substr(self, name: str) -> _Func:
        s = self.s
        s.read()
        r = s.peek()
        s.unread()
        if r in ("=", "-", "?", "+"):
            return self._default(name)
        return self._substr(name)

    def _substr(self, name: str) -> _Func:
        s = self.s
        node = _Func(param=name)
        node.name = self._ident(_accept_one_colon)
        node.args.append(self._param(_reject_colon_close, _SCAN_IDENT))
        s.accept, s.mode = _accept_colon, _SCAN_IDENT | _SCAN_RBRACK
        tok = s.scan()
        if tok == _RBRACK:
            return node
        if tok != _IDENT:
            raise self._bad()
        node.args.append(self._param(_accept_not_closing, _SCAN_IDENT))
        self._rbrack()
        return node

    def _remove(self, name: str, accept: Accept) -> _Func:
        node = _Func(param=name)
        node.name = self._ident(accept)
        node.args.append(self._param(_accept_not_closing, _SCAN_IDENT))
        self._rbrack()
        return node

    def _replace(self, name: str) -> _Func:
        s = self.s
        node = _Func(param=name)
        node.name = self._ident(_accept_replace_func)
        node.args.append(self._param(_accept_not_slash, _SCAN_IDENT | _SCAN_ESCAPE))
        self._ident(_accept_slash)
        if s.peek() == "}":
            self._rbrack()
            return node
        node.args.append(self._param(_accept_not_closing, _SCAN_IDENT | _SCAN_ESCAPE))
        self._rbrack()
        return node

    def _default(self, name: str) -> _Func:
        s = self.s
        node = _Func(param=name)
        s.accept = _accept_one_equal if s.peek() == "=" else _accept_default_func
        s.mode = _SCAN_IDENT
        if s.scan() != _IDENT:
            raise SubstitutionError("unable to parse default function")
        node.name = s.string()
        while s.peek() != "}":
            node.args.append(self._param(_accept_not_closing, _SCAN_IDENT))
        self._rbrack()
        return node

    def _casing(self, name: str) -> _Func:
        node = _Func(param=name)
        node.name = self._ident(_accept_casing_func)
        self._rbrack()
        return node

    def _len(self) -> _Func:
        node = _Func()
        node.name = self._ident(_accept_one_hash)
        node.param = self._ident(_accept_ident)
        self._rbrack()
        return node

    def _rbrack(self) -> None:
        self.s.mode = _SCAN_RBRACK
        if self.s.scan() != _RBRACK:
            raise self._bad()


def parse(text: str) -> list[_Node]:
    """The text as literal runs and expressions; SubstitutionError at a bad expression."""
    nodes: list[_Node] = []
    out: list[str] = []
    scanner = _Scanner(text)
    parser = _Parser(scanner)
    i = 0
    while True:
        buf = scanner.buf
        j = buf.find("$", i)
        if j < 0:
            out.append(buf[i:])
            break
        parser.line += buf.count("\n", i, j)
        out.append(buf[i:j])
        nxt = buf[j + 1 : j + 2]
        if nxt == "$":
            out.append("$")
            i = j + 2
        elif nxt == "{":
            if out:
                nodes.append(_Text("".join(out)))
                out = []
            scanner.pos = j + 2
            try:
                nodes.append(parser.func())
            except SubstitutionError as e:
                end = buf.find("}", j)
                shown = buf[j : end + 1 if 0 <= end < j + 60 else j + 60].split("\n")[0]
                raise SubstitutionError(f"{e.message} in {shown!r}", parser.line) from None
            i = scanner.pos  # in its buffer, which may have lost escape characters
            parser.line += scanner.buf.count("\n", j, i)
        else:
            out.append("$")
            i = j + 1
    rest = "".join(out)
    if rest:
        nodes.append(_Text(rest))
    return nodes


Lookup = Callable[[str], tuple[str, bool]]


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _str(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _substr(s: str, args: list[str]) -> str:
    b = _utf8(s)
    try:
        pos = int(args[0])
    except ValueError:
        return s
    if pos < 0:
        pos = max(len(b) + pos, 0)
    if len(args) == 1:
        return _str(b[pos:]) if pos < len(b) else ""
    try:
        length = int(args[1])
    except ValueError:
        return s
    if pos + length >= len(b):
        return _str(b[pos:]) if pos < len(b) else ""
    return _str(b[pos : pos + length])


def _trim(s: str, pattern: str, *, longest: bool) -> str:
    """Strip a prefix matching `pattern` (drone's trimShortest/trimLongest: candidate
    prefixes from the longest down, never the empty one)."""
    from gitkrm.sync.envsubst_match import BadPattern, match

    found = ""
    for i in range(len(s)):
        prefix = s[: len(s) - i]
        try:
            ok = match(pattern, prefix)
        except BadPattern:
            return s
        if ok:
            if longest:
                return s[len(prefix) :]
            found = prefix
    return s[len(found) :] if found else s


def _suffix(s: str, pattern: str, *, longest: bool) -> str:
    return _trim(s[::-1], pattern[::-1], longest=longest)[::-1]


def _apply(name: str, v: str, args: list[str]) -> str:
    """drone's lookupFunc and the function it names."""
    if name == ",":
        return v[:1].lower() + v[1:]
    if name == ",,":
        return v.lower()
    if name == "^":
        return v[:1].upper() + v[1:]
    if name == "^^":
        return v.upper()
    if name == "#" and not args:
        return str(len(_utf8(v)))
    if name in ("#", "##", "%", "%%"):
        if not args:
            return v
        if name[0] == "#":
            return _trim(v, args[0], longest=name == "##")
        return _suffix(v, args[0], longest=name == "%%")
    if name == ":":
        return _substr(v, args) if args else v
    if name in ("/", "//"):
        if not args:
            return v
        rep = args[1] if len(args) > 1 else ""
        return v.replace(args[0], rep, -1 if name == "//" else 1)
    if name == "/#":
        if len(args) != 2:
            return v
        return v.replace(args[0], args[1], 1) if v.startswith(args[0]) else v
    if name == "/%":
        if len(args) != 2:
            return v
        return v.removesuffix(args[0]) + args[1] if v.endswith(args[0]) else v
    # defaults, and anything else: the value, or the arguments when it is empty
    if not v and args:
        return "".join(args)
    return v


def _eval(node: _Node, lookup: Lookup) -> str:
    if isinstance(node, _Text):
        return node.value
    args = [_eval(a, lookup) for a in node.args]
    value, exists = lookup(node.param)
    if not exists and node.name not in _DEFAULT_OPS:
        raise SubstitutionError(f'variable not set (strict mode): "{node.param}"', node.line)
    return _apply(node.name, value, args)


def evaluate(nodes: list[_Node], lookup: Lookup) -> str:
    return "".join(_eval(n, lookup) for n in nodes)


def substitute(text: str, variables: Mapping[str, str], *, strict: bool = False) -> str:
    """`text` with its expressions evaluated against `variables` (Flux's mapping: a
    missing variable is empty, or in strict mode an error)."""
    if "$" not in text:
        return text

    def lookup(name: str) -> tuple[str, bool]:
        value = variables.get(name)
        if value is None:
            return "", not strict
        return value, True

    return evaluate(parse(text), lookup)
