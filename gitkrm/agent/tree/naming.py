"""The names of child sources: a DNS-1123 label per declaring object, unique and stable.

A child's name is the name of its inventory, its Git cache, its GitSource object in
`gitkrm-system` and its notes, so it must never change while the declaring object stays
and never be shared by two declaring objects (of any kind, in any namespace). It is the
declaring object's namespace and name (readable) and a short hash of its whole reference
(unique): `flux-system-apps-3f2a1c`. Pure.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from gitkrm.krm import ObjectRef

MAX_NAME: Final = 63
HASH_CHARS: Final = 6
_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


def child_name(declared_by: ObjectRef) -> str:
    """The child source's name (see the module docstring)."""
    whole = (
        f"{declared_by.group}/{declared_by.kind}/{declared_by.namespace or ''}/{declared_by.name}"
    )
    digest = hashlib.sha256(whole.encode()).hexdigest()[:HASH_CHARS]
    readable = "-".join(p for p in (declared_by.namespace, declared_by.name) if p)
    label = _NOT_LABEL.sub("-", readable.lower()).strip("-")
    label = re.sub(r"-{2,}", "-", label)
    room = MAX_NAME - HASH_CHARS - 1
    label = label[:room].rstrip("-")
    return f"{label}-{digest}" if label else f"child-{digest}"


def describe(ref: ObjectRef) -> str:
    """`Kind namespace/name` as the log and the status name a declaring object."""
    where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
    return f"{ref.kind} {where}"


def ref_text(ref: ObjectRef) -> str:
    """The reference in one annotation value: `group/Kind/namespace/name`."""
    return f"{ref.group}/{ref.kind}/{ref.namespace or ''}/{ref.name}"


def parse_ref_text(text: str) -> ObjectRef | None:
    """The reference of `ref_text` (None when it is not one)."""
    parts = text.split("/")
    if len(parts) != 4 or not parts[1] or not parts[3]:
        return None
    return ObjectRef(group=parts[0], kind=parts[1], namespace=parts[2] or None, name=parts[3])
