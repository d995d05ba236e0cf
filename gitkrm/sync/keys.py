"""The labels and annotations gitkrm writes and reads on managed objects (docs/reference.md).

Written: the source label (gitkrm's own key: label-selectable ownership), the
last-applied configuration (the "original" of the three-way diff, as kubectl and Argo CD
keep it) and the revision that last rewrote the object. Never written: any other label or
annotation, so a manifest's own (`app.kubernetes.io/managed-by: Helm`) stays as it is.
Read from manifests: wave, depends-on, prune, reconcile and force settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

MANAGED_BY: Final = "app.kubernetes.io/managed-by"
"""Read only, never written on synced objects: another tool's claim on an unowned object
(adoption), and what older gitkrm wrote on every object it managed (`owner_of`)."""
MANAGER: Final = "gitkrm"
SOURCE: Final = "gitkrm.io/source"

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
REVISION: Final = "gitkrm.io/revision"

PRUNE: Final = "gitkrm.io/prune"
RECONCILE: Final = "gitkrm.io/reconcile"
FORCE: Final = "gitkrm.io/force"
WAVE: Final = "gitkrm.io/wave"
DEPENDS_ON: Final = "config.kubernetes.io/depends-on"

STAND_IN: Final = "gitkrm.io/stand-in"
"""On an object the agent wrote in a repository's stead (a peer's CRD registered under
`--interpret`): any source that applies the same object from Git takes it over, whatever its
adoption policy (`ownership.decide`)."""

DISABLED: Final = "disabled"
ENABLED: Final = "enabled"

INVENTORY_NAMESPACE: Final = "gitkrm-system"
INVENTORY_PREFIX: Final = "gitkrm-inventory-"
INVENTORY_ID: Final = "cli-utils.sigs.k8s.io/inventory-id"
LABEL_VALUE_MAX: Final = 63

# Metadata the server owns: never part of a desired object (an exported manifest may carry it).
SERVER_METADATA: Final = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    v = metadata(obj).get("labels")
    return v if isinstance(v, dict) else {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    v = metadata(obj).get("annotations")
    return v if isinstance(v, dict) else {}


def source_of(obj: Mapping[str, Any]) -> str | None:
    """The gitkrm source named by a live object's source label, or None."""
    v = labels_of(obj).get(SOURCE)
    return v if isinstance(v, str) and v else None


def owner_of(obj: Mapping[str, Any], *, listed_by: str | None = None) -> str | None:
    """The gitkrm source that owns a live object: its source label; else, for an object
    labelled only `app.kubernetes.io/managed-by: gitkrm` (as older gitkrm labelled what it
    managed), the source whose inventory lists it (`listed_by`), or None."""
    owner = source_of(obj)
    if owner is None and listed_by is not None and labels_of(obj).get(MANAGED_BY) == MANAGER:
        return listed_by
    return owner


def flag(obj: Mapping[str, Any], key: str, value: str) -> bool:
    """Whether annotation `key` is set to `value` (case-insensitive, as Flux reads it)."""
    v = annotations_of(obj).get(key)
    return isinstance(v, str) and v.strip().lower() == value


def inventory_id(*, agent: str, source: str) -> str:
    """The cli-utils inventory id `<agent>.<source>`, a label value: one longer than 63
    characters (a long host name, a child source named after a long Application) is cut
    and ends in a hash of the whole, so it stays unique and stable."""
    whole = f"{agent}.{source}"
    if len(whole) <= LABEL_VALUE_MAX:
        return whole
    digest = hashlib.sha256(whole.encode()).hexdigest()[:8]
    return f"{whole[: LABEL_VALUE_MAX - 9].rstrip('-.')}-{digest}"


def source_selector(source: str) -> str:
    """The label selector of every object a source owns."""
    return f"{SOURCE}={source}"
