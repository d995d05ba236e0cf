"""gitkrm.patch.fieldmanager: server-side apply's field management, as pure functions.

A port of the semantics of sigs.k8s.io/structured-merge-diff (field sets, typed merge,
conflicts) and of apimachinery's managedFields bookkeeping. Objects are plain dicts,
schemas come in as data (`SchemaType`), field sets are kept in their FieldsV1 wire shape.
"""

from gitkrm.patch.fieldmanager.entries import ANCIENT_CHANGES, MAX_UPDATE_MANAGERS, STRIP
from gitkrm.patch.fieldmanager.fieldsv1 import parse_fields_v1
from gitkrm.patch.fieldmanager.lastapplied import LAST_APPLIED
from gitkrm.patch.fieldmanager.managed import apply, fields_of, managed_fields_for_update
from gitkrm.patch.fieldmanager.typed import SchemaType

__all__ = [
    "ANCIENT_CHANGES",
    "LAST_APPLIED",
    "MAX_UPDATE_MANAGERS",
    "STRIP",
    "SchemaType",
    "apply",
    "fields_of",
    "managed_fields_for_update",
    "parse_fields_v1",
]
