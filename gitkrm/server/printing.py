"""Table columns and the helpers the per-kind printers share (kube's printers.go)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypedDict

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj, label_selector_from_dict
from gitkrm.krm.fields import field_value
from gitkrm.server.humanize import since

NONE: Final = "<none>"


class ColumnDefinition(TypedDict):
    """An entry of a Table's `columnDefinitions` (metav1.TableColumnDefinition)."""

    name: str
    type: str
    format: str
    description: str
    priority: int


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str = "string"
    format: str = ""
    priority: int = 0
    description: str = ""

    def definition(self) -> ColumnDefinition:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


Cells = Callable[[Obj, float], list[object]]


@dataclass(frozen=True, slots=True)
class Printer:
    """The columns of a kind, and the cells of one object at a time `now`."""

    columns: tuple[Column, ...]
    cells: Cells


NAME: Final = Column("Name", format="name", description="Name must be unique within a namespace.")
AGE: Final = Column(
    "Age",
    description="CreationTimestamp is a timestamp representing the server time when this "
    "object was created.",
)
CONTAINERS: Final = Column(
    "Containers", priority=1, description="Names of each container in the template."
)
IMAGES: Final = Column(
    "Images", priority=1, description="Images referenced by each container in the template."
)
SELECTOR: Final = Column("Selector", priority=1, description="The label selector.")

m: Final = field_value
"""`m(obj, "spec", "replicas")`: the printers' short name for krm's tolerant field reader."""


def age(obj: Obj, now: float) -> str:
    """The Age cell: how long ago the object was created."""
    return since(m(obj, "metadata", "creationTimestamp"), now)


def name_of(obj: Obj) -> str:
    return str(m(obj, "metadata", "name") or "")


def num(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def containers_images(pod_spec: object) -> tuple[str, str]:
    """`layoutContainerCells`: container names and images, comma-separated."""
    cs = m(pod_spec, "containers") if isinstance(pod_spec, Mapping) else None
    if not isinstance(cs, list):
        return "", ""
    names = [str(c.get("name") or "") for c in cs if isinstance(c, Mapping)]
    images = [str(c.get("image") or "") for c in cs if isinstance(c, Mapping)]
    return ",".join(names), ",".join(images)


def selector_string(sel: Mapping[str, object] | None) -> str:
    """`metav1.LabelSelectorAsSelector(...).String()` ("" selects everything)."""
    if sel is None:
        return NONE
    try:
        return str(label_selector_from_dict(sel))
    except BadRequest:
        return "<invalid>"


def format_label_selector(sel: Mapping[str, object] | None) -> str:
    """`metav1.FormatLabelSelector`: `<none>` for an empty or missing selector."""
    if not sel:
        return NONE
    text = selector_string(sel)
    return text or NONE


def format_labels(labels: object) -> str:
    """`labels.FormatLabels`: `k=v,k2=v2` sorted by key, `<none>` when empty."""
    if not isinstance(labels, Mapping) or not labels:
        return NONE
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def has_condition(obj: Obj, ctype: str, status: str = "True") -> bool:
    conds = m(obj, "status", "conditions")
    if not isinstance(conds, list):
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") == ctype and c.get("status") == status
        for c in conds
    )
