"""The built-in resource table: REST facts (plural, scope, verbs, ...) the schemas lack.

The facts live in `resources.yaml` (data, matching `kubectl api-resources` of a 1.33
cluster); every entry must name a kind that the pinned schemas define, so the table and
the schemas cannot drift apart silently.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml

from gitkrm.krm.names import NameRule
from gitkrm.krm.refs import GVK, GVR, GroupKind
from gitkrm.schema.openapi import definition_name

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml is a declared requirement
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served kind at one version, as API discovery describes it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    list_kind: str
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    generation: bool = True
    custom: bool = False
    storage_version: str = ""
    selectable_fields: tuple[str, ...] = ()
    name_rule: NameRule = NameRule.DNS1123_SUBDOMAIN

    @property
    def gvk(self) -> GVK:
        return GVK(group=self.group, version=self.version, kind=self.kind)

    @property
    def gvr(self) -> GVR:
        return GVR(group=self.group, version=self.version, resource=self.plural)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(group=self.group, kind=self.kind)


def _entry(raw: dict[str, Any], standard_verbs: tuple[str, ...]) -> ResourceInfo:
    kind = raw["kind"]
    return ResourceInfo(
        group=raw.get("group", ""),
        version=raw["version"],
        kind=kind,
        plural=raw["plural"],
        singular=raw.get("singular", kind.lower()),
        namespaced=raw.get("namespaced", True),
        list_kind=raw.get("list_kind", kind + "List"),
        verbs=tuple(raw.get("verbs", standard_verbs)),
        short_names=tuple(raw.get("short_names", ())),
        categories=tuple(raw.get("categories", ())),
        subresources=frozenset(raw.get("subresources", ())),
        generation=raw.get("generation", True),
        storage_version=raw.get("storage_version", ""),
        name_rule=NameRule[raw.get("name_rule", "DNS1123_SUBDOMAIN")],
    )


@cache
def builtin_resources() -> tuple[ResourceInfo, ...]:
    """Every built-in kind of the pinned release that gitkrm serves (shared, immutable)."""
    text = (importlib.resources.files("gitkrm.schema") / "resources.yaml").read_text()
    doc = yaml.load(text, Loader=_Loader)
    standard = tuple(doc["standard_verbs"])
    out = tuple(_entry(raw, standard) for raw in doc["resources"])
    for info in out:
        if definition_name(info.gvk) is None:
            raise RuntimeError(f"resources.yaml names {info.gvk}, which has no schema")
    return out
