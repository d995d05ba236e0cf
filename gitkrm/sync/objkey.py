"""The string that names an object in an inventory: cli-utils' ObjMetadata format.

`<namespace>_<name>_<group>_<kind>`, empty namespace and group left empty, colons of RBAC
names written as `__` (ConfigMap keys can't hold colons). gitkrm also uses it as the
object's key inside the engine: a str hashes once, where a ref dataclass hashes per use.
"""

from __future__ import annotations

from typing import Final

from gitkrm.errors import BadRequest
from gitkrm.krm import ObjectRef

_RBAC: Final = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
_RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def key_of(*, group: str, kind: str, name: str, namespace: str | None) -> str:
    """cli-utils' `ObjMetadata.String()`."""
    if group == _RBAC_GROUP and kind in _RBAC:
        name = name.replace(":", "__")
    return f"{namespace or ''}_{name}_{group}_{kind}"


def object_key(ref: ObjectRef) -> str:
    return key_of(group=ref.group, kind=ref.kind, name=ref.name, namespace=ref.namespace)


def parse_key(key: str) -> ObjectRef:
    """cli-utils' `ParseObjMetadata`: namespace first, then kind and group from the end."""
    namespace, sep, rest = key.partition("_")
    rest, sep2, kind = rest.rpartition("_")
    name, sep3, group = rest.rpartition("_")
    if not (sep and sep2 and sep3) or not name or not kind:
        raise BadRequest(f"malformed inventory key {key!r}")
    name = name.replace("__", ":")
    if "_" in name:
        raise BadRequest(f"malformed inventory key {key!r}: too many fields")
    return ObjectRef(group=group, kind=kind, name=name, namespace=namespace or None)
