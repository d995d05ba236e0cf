"""Compile and evaluate CEL expressions with cel-expr-python, programs cached by source.

One environment per set of variable names (every variable `dyn`, as Kubernetes' rules see
schemaless JSON), with the Kubernetes libraries of `library` and CEL's optional and bindings
extensions. A program is compiled once per (variables, source) in a process and reused by
every CRD version and policy holding the same text. Evaluation is bounded by cel-cpp's
comprehension iteration budget (there is no static cost estimate as kube-apiserver has).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional

from gitkrm.schema.cel.library import kubernetes_functions

_LOCK = threading.Lock()
_ENVS: dict[frozenset[str], Any] = {}
_PROGRAMS: dict[tuple[frozenset[str], str], Program] = {}
_PROGRAMS_MAX = 4096


class CelError(Exception):
    """A compile or evaluation error, worded as the runtime gave it (first line)."""


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled expression and the names of the variables it may read."""

    source: str
    variables: frozenset[str]
    compiled: Any

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        """The value of the expression as plain Python data; CelError on an error value."""
        try:
            result = self.compiled.eval(data=data)
        except (RuntimeError, ValueError) as e:
            raise CelError(kube_error(_first_line(str(e)))) from e
        if result.type() == cel.Type.ERROR:
            raise CelError(kube_error(_first_line(str(result.value()))))
        return result.plain_value()


class Evaluable(Protocol):
    def evaluate(self, data: Mapping[str, Any]) -> Any: ...


def message_text(expression: Evaluable | None, data: Mapping[str, Any]) -> str | None:
    """What a messageExpression gives when it is one non-empty line; None otherwise (an
    error included), where the API server falls back to the static message."""
    if expression is None:
        return None
    try:
        text = expression.evaluate(data)
    except CelError:
        return None
    if isinstance(text, str) and text.strip() and "\n" not in text.strip():
        return text.strip()
    return None


def _env(variables: frozenset[str]) -> Any:
    env = _ENVS.get(variables)
    if env is None:
        env = cel.NewEnv(
            variables={name: cel.Type.DYN for name in variables},
            extensions=[ext_optional.ExtOptional(), ext_bindings.ExtBindings()],
            functions=kubernetes_functions(),
        )
        _ENVS[variables] = env
    return env


def compile_expression(source: str, variables: frozenset[str]) -> Program:
    """The (cached) program of `source`; CelError with the compiler's message."""
    key = (variables, source)
    with _LOCK:
        hit = _PROGRAMS.get(key)
        if hit is not None:
            return hit
        try:
            compiled = _env(variables).compile(source)
        except (RuntimeError, ValueError) as e:
            raise CelError(_compile_message(str(e))) from e
        program = Program(source=source, variables=variables, compiled=compiled)
        if len(_PROGRAMS) >= _PROGRAMS_MAX:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
        _PROGRAMS[key] = program
        return program


_STATUS_PREFIXES = (
    "INVALID_ARGUMENT: ",
    "INTERNAL: ",
    "UNKNOWN: ",
    "UNIMPLEMENTED: ",
    "NOT_FOUND: ",
)


def _first_line(message: str) -> str:
    text = message.strip().splitlines()[0] if message.strip() else message
    for suffix in (" [INVALID_ARGUMENT]", " [INTERNAL]", " [UNKNOWN]", " [UNIMPLEMENTED]"):
        text = text.removesuffix(suffix)
    for prefix in _STATUS_PREFIXES:
        text = text.removeprefix(prefix)
    return text


def _compile_message(message: str) -> str:
    """cel-cpp's `ERROR: <input>:1:5: msg` block, as one line like cel-go's."""
    lines = [ln for ln in message.strip().splitlines() if ln.strip()]
    if lines:
        lines[0] = lines[0].removeprefix("INVALID_ARGUMENT: ")
    lines = [ln.removesuffix(" [INVALID_ARGUMENT]") for ln in lines]
    return "\n".join(lines)


_KEY_NOT_FOUND = re.compile(r'Key not found in map ?: ?"?([^"]*)"?')


def kube_error(message: str) -> str:
    """cel-cpp's wording of the common evaluation errors as cel-go words them."""
    m = _KEY_NOT_FOUND.search(message)
    if m:
        return f"no such key: {m.group(1)}"
    if "division by zero" in message.lower():
        return "division by zero"
    if "Iteration budget exceeded" in message:
        return "operation cancelled: actual cost limit exceeded"
    return message
