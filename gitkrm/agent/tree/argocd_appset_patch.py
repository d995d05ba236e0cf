"""An ApplicationSet's `templatePatch`: one template string, rendered with each
Application's parameters as the template is (Go templates or fasttemplate), read as YAML
and merged into the rendered Application as Argo CD does (`applyTemplatePatch`:
apimachinery's `StrategicMergePatch` over the Application type, whose fields carry no
patch strategy but `metadata.finalizers`): maps merge, lists are replaced, `null` removes a
field, and finalizers are merged as a set. It is how Argo CD users set what a string
template cannot: a boolean (`automated` on or off per environment), a list, a whole source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import yaml

from gitkrm.patch.mergepatch import apply_merge_patch

from .argocd_appset_go import GoTemplate, TemplateError, render_go

FIELD: Final = "spec.templatePatch"
_MAX_BYTES: Final = 1 << 20  # a rendered patch larger than this is refused


def patch_texts(
    text: str,
    params: Sequence[dict[str, Any]],
    *,
    go: GoTemplate | None,
    render: Callable[[str, dict[str, Any]], str],
    fail: Callable[[str, str], Exception],
) -> list[str]:
    """The patch rendered once per parameter set (Go templates: one render for all);
    `render` is the fasttemplate renderer."""
    if go is None:
        return [render(text, p) for p in params]
    try:
        return [str(out) for out in render_go(text, params, at=FIELD, go=go)]
    except TemplateError as e:
        _, _, message = e.message.partition(": ")
        raise fail(FIELD, message) from None


def patched(
    app: Mapping[str, Any], text: str, *, fail: Callable[[str, str], Exception]
) -> dict[str, Any]:
    """`app` with the rendered patch `text` merged in (see the module docstring)."""
    if len(text) > _MAX_BYTES:
        raise fail(FIELD, f"renders {len(text)} bytes, more than {_MAX_BYTES}")
    try:
        patch = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise fail(FIELD, f"does not render YAML: {' '.join(str(e).split())}") from None
    if patch is None:
        return dict(app)
    if not isinstance(patch, Mapping):
        raise fail(FIELD, f"must render a YAML object, not {type(patch).__name__}")
    out: dict[str, Any] = dict(apply_merge_patch(app, patch))
    patch_md = patch.get("metadata")
    added = patch_md.get("finalizers") if isinstance(patch_md, Mapping) else None
    if isinstance(added, list):
        before = list((app.get("metadata") or {}).get("finalizers") or [])
        md = dict(out.get("metadata") or {})
        md["finalizers"] = before + [f for f in added if f not in before]
        out["metadata"] = md
    return out


__all__ = ["patch_texts", "patched"]
