"""gitkrm.schema: the resource table, built-in schemas, CRDs and admission of writes."""

from gitkrm.schema.openapi import RELEASE
from gitkrm.schema.patchmeta import patch_meta_for
from gitkrm.schema.registry import Registry, ResourceInfo
from gitkrm.schema.ssatype import ssa_type_for

__all__ = ["RELEASE", "Registry", "ResourceInfo", "patch_meta_for", "ssa_type_for"]
