"""What a validating admission policy reads besides the request: namespaces and params.

`Lookup` is the caller's side (the store's transaction, or a revision's objects); a policy
asks it for a binding's params with one `ParamQuery`, and `ParamQuery.choose` is the
binding's paramRef choice (a name, else a label selector) every lookup applies the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gitkrm.krm.labels import label_selector_from_dict


@dataclass(frozen=True, slots=True)
class ParamQuery:
    """A binding's paramRef resolved against the policy's paramKind and the request."""

    api_version: str
    kind: str
    namespace: str
    name: str | None
    selector: Mapping[str, Any] | None

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    def choose(self, candidates: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The candidate params (of the kind, in the namespace) the ref names."""
        if self.name:
            return [o for o in candidates if _metadata(o).get("name") == self.name]
        sel = label_selector_from_dict(self.selector or {})
        return [o for o in candidates if sel.matches(_metadata(o).get("labels") or {})]


class Lookup(Protocol):
    """The reads a policy needs from the store."""

    def namespace(self, name: str) -> Mapping[str, Any] | None: ...

    def params(self, query: ParamQuery, /) -> list[Mapping[str, Any]]: ...


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}
