"""A small Go text/template interpreter with the Sprig/Helm functions the gitkrm chart uses.

No helm binary can be installed here, so the chart's reviewed renderings are made (and
checked) by this: the Go template grammar (actions, trim markers, comments, pipelines,
variables, if/else if/else, range, with, define, include/template) and Go's truth rules.
Whatever the chart does beyond this subset fails loudly (unknown function, bad syntax)
rather than rendering something Helm would not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml


class TemplateError(Exception):
    """A template that Go (or Helm) would refuse, or a `fail`/`required` in the chart."""


# -- lexing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Action:
    tokens: tuple[str, ...]
    where: str


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<num>-?\d+(?:\.\d+)?)
      | (?P<op>:=|=|\(|\)|\||,)
      | (?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
    )""",
    re.VERBOSE,
)


def _tokens(src: str, where: str) -> tuple[str, ...]:
    out: list[str] = []
    pos = 0
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:
            raise TemplateError(f"{where}: can't read {src[pos:]!r}")
        tok = m.group(m.lastgroup or "word")
        if m.lastgroup == "field" and out and out[-1] == ")" and src[pos] == ".":
            tok = "~" + tok  # `(pipeline).Field`: a field of the parenthesized value
        out.append(tok)
        pos = m.end()
    return tuple(out)


def lex(src: str, name: str) -> list[Text | Action]:
    items: list[Text | Action] = []
    pos = 0
    trim_next = False
    for m in _ACTION.finditer(src):
        text = src[pos : m.start()]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        if text:
            items.append(Text(text))
        body = m.group(2)
        where = f"{name}:{src.count(chr(10), 0, m.start()) + 1}"
        if not body.strip().startswith("/*"):
            items.append(Action(_tokens(body, where), where))
        elif not body.strip().endswith("*/"):
            raise TemplateError(f"{where}: unclosed comment")
        trim_next = bool(m.group(3))
        pos = m.end()
    text = src[pos:]
    if trim_next:
        text = text.lstrip(" \t\r\n")
    if text:
        items.append(Text(text))
    return items


# -- parsing -------------------------------------------------------------------------------


@dataclass(slots=True)
class Node:
    kind: str  # text, action, if, range, with, template
    text: str = ""
    pipe: tuple[str, ...] = ()
    body: list[Node] = field(default_factory=list)
    branches: list[tuple[tuple[str, ...], list[Node]]] = field(default_factory=list)
    orelse: list[Node] = field(default_factory=list)
    where: str = ""


def parse(items: list[Text | Action], defines: dict[str, list[Node]]) -> list[Node]:
    it = iter(items)
    body, end = _parse_list(it, defines)
    if end is not None:
        raise TemplateError(f"{end.where}: unexpected {end.tokens[0]}")
    return body


def _parse_list(
    it: Iterator[Text | Action], defines: dict[str, list[Node]]
) -> tuple[list[Node], Action | None]:
    out: list[Node] = []
    for item in it:
        if isinstance(item, Text):
            out.append(Node("text", text=item.text))
            continue
        head = item.tokens[0] if item.tokens else ""
        if head in ("end", "else"):
            return out, item
        if head == "define":
            name = json.loads(item.tokens[1])
            body, end = _parse_list(it, defines)
            if end is None or end.tokens[0] != "end":
                raise TemplateError(f"{item.where}: define {name} has no end")
            defines[name] = body
        elif head in ("if", "with", "range"):
            out.append(_parse_block(head, item, it, defines))
        elif head == "template":
            out.append(Node("template", pipe=item.tokens[1:], where=item.where))
        else:
            out.append(Node("action", pipe=item.tokens, where=item.where))
    return out, None


def _parse_block(
    head: str, item: Action, it: Iterator[Text | Action], defines: dict[str, list[Node]]
) -> Node:
    node = Node(head, where=item.where)
    pipe = item.tokens[1:]
    while True:
        body, end = _parse_list(it, defines)
        node.branches.append((pipe, body))
        if end is None:
            raise TemplateError(f"{item.where}: {head} has no end")
        if end.tokens[0] == "end":
            return node
        if len(end.tokens) > 1 and end.tokens[1] == head and head in ("if", "with"):
            pipe = end.tokens[2:]  # else if / else with
            continue
        node.orelse, end2 = _parse_list(it, defines)
        if end2 is None or end2.tokens[0] != "end":
            raise TemplateError(f"{item.where}: {head} ... else has no end")
        return node


# -- values and functions ------------------------------------------------------------------


def truth(v: Any) -> bool:
    """Go's template truth: false, 0, nil and empty strings, maps and lists are false."""
    if v is None or v is False:
        return False
    if isinstance(v, (int, float, str, list, dict, tuple)):
        return bool(v)
    return True


def to_string(v: Any) -> str:
    if v is None:
        return ""  # Helm prints a missing value as nothing, not <no value>
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise TemplateError(f"printing a map or list as text ({v!r}): use toYaml")
    return str(v)


def to_yaml(v: Any) -> str:
    """Sprig/Helm toYaml: keys sorted (sigs.k8s.io/yaml), no trailing newline."""
    out: str = yaml.safe_dump(v, sort_keys=True, default_flow_style=False, width=1 << 16)
    if out.endswith("\n...\n"):
        out = out[: -len("...\n")]
    return out.rstrip("\n")


def _indent(n: int, s: str) -> str:
    pad = " " * int(n)
    return pad + s.replace("\n", "\n" + pad)


def _default(d: Any, v: Any = None) -> Any:
    return v if truth(v) else d


def _required(msg: str, v: Any = None) -> Any:
    if v is None or v == "":
        raise TemplateError(msg)
    return v


def _fail(msg: str) -> Any:
    raise TemplateError(msg)


def _printf(fmt: str, *args: Any) -> str:
    py = re.sub(r"%[vsd]", "%s", fmt)
    return py % tuple(to_string(a) for a in args)


def _print(*args: Any) -> str:
    # fmt.Sprint: a space between operands when neither is a string.
    out = ""
    for i, a in enumerate(args):
        if i and not isinstance(a, str) and not isinstance(args[i - 1], str):
            out += " "
        out += to_string(a)
    return out


def _eq(a: Any, *bs: Any) -> bool:
    return any(a == b for b in bs)


def _and(*args: Any) -> Any:
    for a in args:
        if not truth(a):
            return a
    return args[-1]


def _or(*args: Any) -> Any:
    for a in args:
        if truth(a):
            return a
    return args[-1]


def _index(m: Any, *keys: Any) -> Any:
    for k in keys:
        m = None if m is None else m.get(k) if isinstance(m, dict) else m[int(k)]
    return m


def _dict(*kv: Any) -> dict[str, Any]:
    return {to_string(kv[i]): kv[i + 1] for i in range(0, len(kv), 2)}


def _rand_alnum(n: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(int(n)))


FUNCS: dict[str, Callable[..., Any]] = {
    "toYaml": to_yaml,
    "toJson": lambda v: json.dumps(v, separators=(",", ":")),
    "nindent": lambda n, s: "\n" + _indent(n, s),
    "indent": _indent,
    "quote": lambda *a: " ".join(json.dumps(to_string(x)) for x in a if x is not None),
    "squote": lambda *a: " ".join(f"'{to_string(x)}'" for x in a if x is not None),
    "default": _default,
    "required": _required,
    "fail": _fail,
    "printf": _printf,
    "print": _print,
    "trunc": lambda n, s: s[: int(n)] if n >= 0 else s[int(n) :],
    "trimSuffix": lambda suf, s: s[: -len(suf)] if suf and s.endswith(suf) else s,
    "trimPrefix": lambda pre, s: s[len(pre) :] if pre and s.startswith(pre) else s,
    "contains": lambda sub, s: sub in s,
    "replace": lambda old, new, s: s.replace(old, new),
    "lower": lambda s: s.lower(),
    "upper": lambda s: s.upper(),
    "b64enc": lambda s: base64.b64encode(to_string(s).encode()).decode(),
    "b64dec": lambda s: base64.b64decode(s).decode(),
    "sha256sum": lambda s: hashlib.sha256(s.encode()).hexdigest(),
    "ternary": lambda a, b, cond: a if truth(cond) else b,
    "eq": _eq,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "and": _and,
    "or": _or,
    "not": lambda v: not truth(v),
    "empty": lambda v: not truth(v),
    "len": len,
    "index": _index,
    "hasKey": lambda m, k: k in m,
    "dict": _dict,
    "list": lambda *a: list(a),
    "int": lambda v: int(v or 0),
    "toString": to_string,
    "join": lambda sep, xs: sep.join(to_string(x) for x in xs),
    "randAlphaNum": _rand_alnum,
    # `helm template` and dry runs see no cluster: lookup finds nothing.
    "lookup": lambda api_version, kind, namespace, name: {},
}


# -- evaluation ----------------------------------------------------------------------------


class Renderer:
    """Renders the named templates of one chart (files and `define`s) against one context."""

    def __init__(self) -> None:
        self.defines: dict[str, list[Node]] = {}
        self.funcs: dict[str, Callable[..., Any]] = {**FUNCS, "include": self._include}

    def add(self, name: str, src: str) -> None:
        """A template file: its `define`s are registered; the file itself is a template too."""
        self.defines[name] = parse(lex(src, name), self.defines)

    def render(self, name: str, dot: Any) -> str:
        if name not in self.defines:
            raise TemplateError(f"no template {name!r}")
        out: list[str] = []
        self._exec(self.defines[name], dot, [{"$": dot}], out)
        return "".join(out)

    def _include(self, name: str, dot: Any) -> str:
        return self.render(name, dot)

    def _exec(
        self, nodes: list[Node], dot: Any, scopes: list[dict[str, Any]], out: list[str]
    ) -> None:
        for n in nodes:
            if n.kind == "text":
                out.append(n.text)
            elif n.kind == "action":
                v = self._pipe(n.pipe, dot, scopes, n.where)
                if not _is_decl(n.pipe):
                    out.append(to_string(v))
            elif n.kind == "template":
                name = json.loads(n.pipe[0])
                arg = self._pipe(n.pipe[1:], dot, scopes, n.where) if len(n.pipe) > 1 else None
                out.append(self.render(name, arg))
            elif n.kind in ("if", "with"):
                self._if_with(n, dot, scopes, out)
            elif n.kind == "range":
                self._range(n, dot, scopes, out)

    def _if_with(self, n: Node, dot: Any, scopes: list[dict[str, Any]], out: list[str]) -> None:
        for pipe, body in n.branches:
            scope: dict[str, Any] = {}
            v = self._pipe(pipe, dot, [*scopes, scope], n.where)
            if truth(v):
                self._exec(body, v if n.kind == "with" else dot, [*scopes, scope], out)
                return
        self._exec(n.orelse, dot, scopes, out)

    def _range(self, n: Node, dot: Any, scopes: list[dict[str, Any]], out: list[str]) -> None:
        pipe = n.branches[0][0]
        names: list[str] = []
        if ":=" in pipe:
            at = pipe.index(":=")
            names = [t for t in pipe[:at] if t != ","]
            pipe = pipe[at + 1 :]
        v = self._pipe(pipe, dot, scopes, n.where)
        pairs: list[tuple[Any, Any]]
        if isinstance(v, dict):
            pairs = sorted(v.items())
        elif isinstance(v, (list, tuple)):
            pairs = list(enumerate(v))
        elif v is None:
            pairs = []
        else:
            raise TemplateError(f"{n.where}: range over {type(v).__name__}")
        if not pairs:
            self._exec(n.orelse, dot, scopes, out)
        for key, item in pairs:
            scope: dict[str, Any] = {}
            if len(names) == 1:
                scope[names[0]] = item
            elif len(names) == 2:
                scope[names[0]], scope[names[1]] = key, item
            self._exec(n.branches[0][1], item, [*scopes, scope], out)

    # A pipeline: [$x := | $x =] cmd | cmd ...
    def _pipe(
        self, toks: tuple[str, ...], dot: Any, scopes: list[dict[str, Any]], where: str
    ) -> Any:
        decl, assign = None, False
        if len(toks) > 2 and toks[0].startswith("$") and toks[1] in (":=", "="):
            decl, assign, toks = toks[0], toks[1] == "=", toks[2:]
        cmds: list[list[str]] = [[]]
        depth = 0
        for t in toks:
            if t == "|" and depth == 0:
                cmds.append([])
                continue
            depth += (t == "(") - (t == ")")
            cmds[-1].append(t)
        value: Any = _NOTHING
        for cmd in cmds:
            if not cmd:
                raise TemplateError(f"{where}: empty command in pipeline")
            value = self._command(cmd, dot, scopes, where, value)
        if decl is not None:
            if assign:
                for s in reversed(scopes):
                    if decl in s:
                        s[decl] = value
                        break
                else:
                    raise TemplateError(f"{where}: undefined variable {decl}")
            else:
                scopes[-1][decl] = value
        return value

    def _command(
        self, cmd: list[str], dot: Any, scopes: list[dict[str, Any]], where: str, piped: Any
    ) -> Any:
        head = cmd[0]
        if re.fullmatch(r"[A-Za-z_]\w*", head) and head not in (
            *self.funcs,
            "true",
            "false",
            "nil",
        ):
            raise TemplateError(f"{where}: function {head!r} not defined")
        args = self._operands(cmd, dot, scopes, where)
        if isinstance(args[0], str):
            lazy = [a for a in args[1:] if not isinstance(a, str)]
            if piped is not _NOTHING:
                lazy.append(lambda: piped)
            if head in ("and", "or"):  # Go evaluates these lazily, left to right
                v: Any = None
                for arg in lazy:
                    v = arg()
                    if truth(v) == (head == "or"):
                        return v
                return v
            try:
                return self.funcs[head](*(arg() for arg in lazy))
            except TemplateError as e:
                raise TemplateError(f"{where}: {e}") from None
            except (TypeError, KeyError, ValueError, AttributeError) as e:
                raise TemplateError(f"{where}: {head}: {e}") from None
        if len(args) != 1 or piped is not _NOTHING:
            raise TemplateError(f"{where}: {head} is not a function")
        first = args[0]
        assert not isinstance(first, str)
        return first()

    def _operands(
        self, cmd: list[str], dot: Any, scopes: list[dict[str, Any]], where: str
    ) -> list[str | Callable[[], Any]]:
        """The function name (a str) if the command calls one, and every operand as a
        thunk (evaluated when used: `and` and `or` stop early, as in Go)."""
        out: list[str | Callable[[], Any]] = []
        i = 0
        while i < len(cmd):
            t = cmd[i]
            if t == "(":
                depth, j = 1, i + 1
                while depth:
                    if j >= len(cmd):
                        raise TemplateError(f"{where}: unbalanced parentheses")
                    depth += (cmd[j] == "(") - (cmd[j] == ")")
                    j += 1
                inner, chain = tuple(cmd[i + 1 : j - 1]), None
                if j < len(cmd) and cmd[j].startswith("~"):
                    chain, j = cmd[j][1:], j + 1
                out.append(self._paren_thunk(inner, chain, dot, scopes, where))
                i = j
                continue
            if i == 0 and t in self.funcs:
                out.append(t)
            else:
                out.append(self._term_thunk(t, dot, scopes, where))
            i += 1
        return out

    def _paren_thunk(
        self,
        inner: tuple[str, ...],
        chain: str | None,
        dot: Any,
        scopes: list[dict[str, Any]],
        where: str,
    ) -> Callable[[], Any]:
        def thunk() -> Any:
            v = self._pipe(inner, dot, scopes, where)
            return _fields(v, chain, where) if chain else v

        return thunk

    def _term_thunk(
        self, t: str, dot: Any, scopes: list[dict[str, Any]], where: str
    ) -> Callable[[], Any]:
        return lambda: self._term(t, dot, scopes, where)

    def _term(self, t: str, dot: Any, scopes: list[dict[str, Any]], where: str) -> Any:
        if t.startswith('"'):
            return json.loads(t)
        if t.startswith("`"):
            return t[1:-1]
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        if re.fullmatch(r"-?\d+\.\d+", t):
            return float(t)
        if t in ("true", "false"):
            return t == "true"
        if t == "nil":
            return None
        if t == ".":
            return dot
        if t.startswith("."):
            return _fields(dot, t, where)
        if t.startswith("$"):
            var, _, rest = t.partition(".")
            for s in reversed(scopes):
                if var in s:
                    return _fields(s[var], "." + rest, where) if rest else s[var]
            raise TemplateError(f"{where}: undefined variable {var}")
        raise TemplateError(f"{where}: function {t!r} not defined")


_NOTHING = object()


def _is_decl(pipe: tuple[str, ...]) -> bool:
    return len(pipe) > 1 and pipe[0].startswith("$") and pipe[1] in (":=", "=")


def _fields(v: Any, chain: str, where: str) -> Any:
    for name in chain.strip(".").split("."):
        if v is None:
            raise TemplateError(f"{where}: nil pointer evaluating {chain} (at .{name})")
        if not isinstance(v, dict):
            raise TemplateError(f"{where}: can't evaluate field {name} in {type(v).__name__}")
        v = v.get(name)
    return v
