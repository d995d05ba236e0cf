"""YAML out, as `kubectl get -o yaml` writes it, readable back by `load_manifests`.

Block style, sequences not indented under their key, map keys in go-yaml's order, and
strings that a plain scalar would turn into something else (`yes`, `1`, `2024-01-01`)
double-quoted, as go-yaml quotes them.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from yaml.nodes import Node, ScalarNode, SequenceNode

from gitkrm.krm.goyaml import STR, TAG, go_key, json_float, needs_quotes, resolve_plain_scalar
from gitkrm.krm.types import Obj


def _dump_tag(text: str) -> str:
    """The tag a plain `text` would be read back with; "ambiguous" strings must be quoted."""
    value = resolve_plain_scalar(text)
    if isinstance(value, str):
        return TAG + "ambiguous" if needs_quotes(text) else STR
    if value is None:
        return TAG + "null"
    return TAG + {bool: "bool", int: "int"}.get(type(value), "float")


class KubectlDumper(yaml.CSafeDumper):
    """Block style, keys in go-yaml's order, ambiguous strings double-quoted (as kubectl)."""

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _dump_tag(value) if implicit[0] else STR
        return TAG + ("seq" if kind is SequenceNode else "map")


def _represent_str(dumper: KubectlDumper, data: str) -> Node:
    style = "|" if "\n" in data else ('"' if needs_quotes(data) else None)
    node: Node = dumper.represent_scalar(STR, data, style=style)
    return node


def _represent_float(dumper: KubectlDumper, data: float) -> Node:
    if not math.isfinite(data):
        raise ValueError(f"cannot write {data} as YAML for Kubernetes: JSON has no NaN or Inf")
    value = json_float(data)
    if isinstance(value, int):
        node: Node = dumper.represent_int(value)
    else:
        node = dumper.represent_scalar(TAG + "float", repr(value))
    return node


def _represent_dict(dumper: KubectlDumper, data: dict[object, object]) -> Node:
    items = sorted(data.items(), key=lambda kv: go_key(str(kv[0])))
    node: Node = dumper.represent_mapping(TAG + "map", items)
    return node


KubectlDumper.add_representer(str, _represent_str)
KubectlDumper.add_representer(float, _represent_float)
KubectlDumper.add_representer(dict, _represent_dict)


def dump_yaml(obj_or_list: Obj | list[Obj]) -> str:
    """YAML as `kubectl get -o yaml` writes it; a list gives documents joined by `---`.

    Output read back with `load_manifests` gives the same values.
    """
    docs = obj_or_list if isinstance(obj_or_list, list) else [obj_or_list]
    return "---\n".join(
        yaml.dump(
            doc,
            Dumper=KubectlDumper,
            default_flow_style=False,
            allow_unicode=True,
            sort_keys=False,
            width=-1,
        )
        for doc in docs
    )
