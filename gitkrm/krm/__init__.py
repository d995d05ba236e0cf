"""The KRM object model: refs, names, selectors, quantities and YAML in and out."""

from gitkrm.krm.refs import GVK, GVR, GroupKind, ObjectRef, join_api_version, split_api_version
from gitkrm.krm.types import FieldValidation, Obj

__all__ = [
    "GVK",
    "GVR",
    "FieldValidation",
    "GroupKind",
    "Obj",
    "ObjectRef",
    "join_api_version",
    "split_api_version",
]
