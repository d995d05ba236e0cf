"""Problems of a revision, located by file, line and object; the checks across objects.

Per-object problems come from parsing and admission; these checks need the whole
revision: the same object twice (both places named), and namespaces that exist neither
in the revision nor in the store.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from gitkrm.krm import GVK, ObjectRef
from gitkrm.sync.desired import Desired


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a revision is refused, located by file, line and object."""

    path: str
    line: int | None
    object: str | None
    message: str

    def __str__(self) -> str:
        loc = f"{self.path}:{self.line}" if self.line else self.path
        # No file: a source's setting (a substituteFrom ConfigMap, a decryption Secret).
        return ": ".join(part for part in (loc, self.object, self.message) if part)


def describe_ref(ref: ObjectRef) -> str:
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


def cross_checks(
    desired: Sequence[Desired], namespaces: Collection[str] | None, problems: list[Problem]
) -> tuple[dict[tuple[str, str], GVK], frozenset[str]]:
    """Duplicates, and namespaces that exist neither in the revision nor in the store;
    returns the kinds used and the object keys."""
    first: dict[str, Desired] = {}
    kinds: dict[tuple[str, str], GVK] = {}
    revision_namespaces = {
        d.ref.name for d in desired if d.ref.kind == "Namespace" and d.ref.group == ""
    }
    for d in desired:
        seen = first.get(d.key)
        if seen is not None:
            problems.append(
                Problem(
                    d.path,
                    d.line or None,
                    describe_ref(d.ref),
                    f"duplicate object: {describe_ref(d.ref)} is also defined at {seen.location}",
                )
            )
            continue
        first[d.key] = d
        ref = d.ref
        gk = (ref.group, ref.kind)
        if gk not in kinds:
            kinds[gk] = d.gvk
        ns = ref.namespace
        if (
            namespaces is not None
            and ns is not None
            and ns not in revision_namespaces
            and ns not in namespaces
        ):
            problems.append(
                Problem(
                    d.path,
                    d.line or None,
                    describe_ref(ref),
                    f'namespace "{ns}" does not exist: it is neither in this revision nor '
                    "in the store",
                )
            )
    return kinds, frozenset(first)
