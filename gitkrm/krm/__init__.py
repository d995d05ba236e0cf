"""The KRM object model: refs, names, selectors, quantities and YAML in and out."""

from gitkrm.krm.fields import FieldSelector, parse_field_selector
from gitkrm.krm.labels import (
    LabelSelector,
    label_selector_from_dict,
    label_selector_from_set,
    parse_label_selector,
)
from gitkrm.krm.manifest import Manifest
from gitkrm.krm.names import NameRule, validate_object_meta
from gitkrm.krm.refs import (
    GVK,
    GVR,
    GroupKind,
    ObjectRef,
    ResourceKey,
    join_api_version,
    split_api_version,
)
from gitkrm.krm.types import FieldValidation, Obj
from gitkrm.krm.yamlio import dump_yaml, load_manifests

__all__ = [
    "GVK",
    "GVR",
    "FieldSelector",
    "FieldValidation",
    "GroupKind",
    "LabelSelector",
    "Manifest",
    "NameRule",
    "Obj",
    "ObjectRef",
    "ResourceKey",
    "dump_yaml",
    "join_api_version",
    "label_selector_from_dict",
    "label_selector_from_set",
    "load_manifests",
    "parse_field_selector",
    "parse_label_selector",
    "split_api_version",
    "validate_object_meta",
]
