"""gitkrm.patch: JSON patch, JSON merge patch, strategic merge patch and three-way diffs.

Pure functions over plain dicts, with Kubernetes semantics (apimachinery's
strategicpatch, jsonmergepatch and evanphx/json-patch). The package knows no kinds: how a
kind's fields merge comes in as a `PatchMeta`, built from its schema by `gitkrm.schema`.
Results share unchanged subtrees with the inputs (no deep copies on the hot path), and
inputs are never changed.
"""

from gitkrm.patch.jsonpatch import apply_json_patch
from gitkrm.patch.mergepatch import (
    apply_merge_patch,
    create_merge_patch,
    create_three_way_json_merge_patch,
)
from gitkrm.patch.meta import FieldMeta, MergeKey, PatchMeta
from gitkrm.patch.semantic import semantically_equal
from gitkrm.patch.strategic import (
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
)

__all__ = [
    "FieldMeta",
    "MergeKey",
    "PatchMeta",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "create_merge_patch",
    "create_three_way_json_merge_patch",
    "create_three_way_merge_patch",
    "create_two_way_merge_patch",
    "semantically_equal",
]
