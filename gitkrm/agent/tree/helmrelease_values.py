"""A Flux HelmRelease's values: `valuesFrom` (ConfigMaps and Secrets of the release's
namespace, in order), then `spec.values` over them, merged as helm-controller merges them.

- Without `targetPath` the key (`valuesKey`, default `values.yaml`) holds YAML values,
  merged over what came before (maps key by key, anything else replaced).
- With `targetPath` the key's raw text is set at that path (Helm's `--set-string` path
  syntax: dots, `\\.` for a literal dot, `[n]` list indexes).
- `optional: true`: a missing object or key is skipped; otherwise it is an error naming
  the HelmRelease's field.

Every value read from a Secret is remembered by `gitkrm.krm.masking` before it reaches a
values document, so it is masked in every log line, status, note and diff.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Final

import yaml

from gitkrm.charts.spec import merge_values, set_path
from gitkrm.krm import Obj, ObjectRef, masking

from .fields import Fail

DEFAULT_KEY: Final = "values.yaml"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


async def release_values(
    spec: Mapping[str, Any],
    *,
    namespace: str,
    get: Callable[[ObjectRef], Awaitable[Obj | None]],
    fail: Fail,
) -> dict[str, Any]:
    """The values of a HelmRelease's `spec` (see the module docstring)."""
    values: dict[str, Any] = {}
    for i, ref in enumerate(spec.get("valuesFrom") or ()):
        at = f"spec.valuesFrom[{i}]"
        if not isinstance(ref, Mapping):
            raise fail(at, "must be a mapping")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        if kind not in ("ConfigMap", "Secret") or not name:
            raise fail(at, "needs kind (ConfigMap or Secret) and name")
        key = str(ref.get("valuesKey") or DEFAULT_KEY)
        optional = bool(ref.get("optional"))
        obj = await get(ObjectRef(group="", kind=kind, name=name, namespace=namespace))
        if obj is None:
            if optional:
                continue
            raise fail(at, f"{kind} {namespace}/{name} not found")
        text = _value(obj, key, at=at, fail=fail)
        if text is None:
            if optional:
                continue
            raise fail(at, f"{kind} {namespace}/{name} has no key {key!r}")
        if kind == "Secret":
            masking.remember([text, *_leaves(text)])
        target = ref.get("targetPath")
        if target:
            try:
                values = set_path(values, str(target), text)
            except ValueError as e:
                raise fail(f"{at}.targetPath", str(e)) from None
            continue
        try:
            loaded = yaml.load(text, Loader=_Loader) or {}
        except yaml.YAMLError:
            # The parser's message may quote the value: never show it.
            raise fail(at, f"{kind} {namespace}/{name} key {key!r} is not valid YAML") from None
        if not isinstance(loaded, dict):
            raise fail(at, f"{kind} {namespace}/{name} key {key!r} is not a mapping of values")
        values = merge_values(values, loaded)
    inline = spec.get("values") or {}
    if not isinstance(inline, dict):
        raise fail("spec.values", "must be a mapping")
    return merge_values(values, inline)


def _value(obj: Obj, key: str, *, at: str, fail: Fail) -> str | None:
    if obj.get("kind") == "Secret":
        data = obj.get("data") or {}
        if key in data:
            try:
                return base64.b64decode(str(data[key]), validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise fail(at, f"Secret key {key!r} is not base64 of UTF-8 text") from None
        string = obj.get("stringData") or {}
        return str(string[key]) if key in string else None
    data = obj.get("data") or {}
    return str(data[key]) if key in data else None


def _leaves(text: str) -> Iterator[str]:
    """The scalar values of a YAML document (each masked on its own too)."""
    try:
        doc = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif node is not None and not isinstance(node, bool):
            yield str(node)
