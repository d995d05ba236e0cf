"""The one internal error of the patch engine, turned into a gitkrm error at the API edge.

The engine raises `PatchFailure` deep inside recursive merges; each level it passes
through prepends its field name, so the public error names the field
(`spec.template.spec.containers: map: ... does not contain declared merge key: name`)
without the hot path ever building paths for the common, error-free case.
"""

from __future__ import annotations

from gitkrm.errors import BadRequest, GitkrmError, Invalid


class PatchFailure(Exception):
    """A malformed patch or document; `unprocessable` marks Kubernetes' 422 cases."""

    def __init__(self, message: str, *, unprocessable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.unprocessable = unprocessable
        self.path: list[str] = []

    def at(self, segment: str) -> PatchFailure:
        """Record that the failure happened under `segment` (called while unwinding)."""
        self.path.append(segment)
        return self

    def field(self) -> str:
        out = ""
        for seg in reversed(self.path):
            out += seg if seg.startswith("[") or not out else "." + seg
        return out

    def public(self) -> GitkrmError:
        where = self.field()
        text = f"{where}: {self.message}" if where else self.message
        return Invalid(text) if self.unprocessable else BadRequest(text)


# apimachinery's sentinel error texts (mergepatch/errors.go), kept verbatim because
# clients match on them.
BAD_JSON_DOC = "invalid JSON document"
NO_LIST_OF_LISTS = "lists of lists are not supported"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ORDER = "invalid patch format of setElementOrder list"


def go_type(value: object) -> str:
    """The Go type name apimachinery prints for a decoded JSON value."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "<nil>"


def bad_arg_type(expected: str, actual: object) -> PatchFailure:
    return PatchFailure(f"expected a {expected}, but received a {go_type(actual)}")
