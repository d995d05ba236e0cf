"""An ApplicationSet's `goTemplate: true` rendering: every string of a template (map keys
too) is a Go template over one parameter set, as Argo CD renders it
(applicationset/utils `Render.Replace`), executed by Helm's engine (Go's text/template with
sprig): `{{ .path.basename }}`, `{{ index .path.segments 1 }}`, `{{ .name | upper }}`,
`{{ if eq .env "prod" }}...{{ end }}`. One Helm render serves every string of every
parameter set. `goTemplateOptions: ["missingkey=error"]` makes a missing key an error, as
in Argo CD. Differences from Argo CD, documented: without that option a missing key renders
empty (Helm's engine; Argo CD writes `<no value>`), and Argo CD's own `normalize` and
`slugify` functions are unknown.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.errors import BadRequest


class TemplateError(BadRequest):
    """A template string that does not render: the field and the engine's message."""


_MISSINGKEY: Final = ("default", "invalid", "zero", "error")


@dataclass(frozen=True, slots=True)
class GoTemplate:
    """`goTemplate: true` and its `goTemplateOptions` (text/template's `Option`s)."""

    strict: bool = False  # missingkey=error


def go_template(spec: Mapping[str, Any], *, at: str = "spec") -> GoTemplate | None:
    """An ApplicationSet spec's Go templating (None: fasttemplate). Its options are
    text/template's, which knows `missingkey=` default, invalid, zero and error; any other
    option is an error, as Go panics on it."""
    if not spec.get("goTemplate"):
        return None
    options = spec.get("goTemplateOptions") or []
    if not isinstance(options, list):
        raise TemplateError(f"{at}.goTemplateOptions: must be a list of strings")
    strict = False
    for i, option in enumerate(options):
        key, _, value = str(option).partition("=")
        if key != "missingkey" or value not in _MISSINGKEY:
            raise TemplateError(
                f"{at}.goTemplateOptions[{i}]: unrecognized option {option!r} "
                f"(text/template knows missingkey={'|'.join(_MISSINGKEY)})"
            )
        strict = value == "error"  # the last one holds
    return GoTemplate(strict=strict)


def strings_of(value: Any, at: str = "") -> list[tuple[str, str]]:
    """The (field, text) of every string in `value` (map keys and values, list items), in
    the order `with_strings` replaces them."""
    out: list[tuple[str, str]] = []
    if isinstance(value, str):
        out.append((at, value))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            field = f"{at}.{k}" if at else str(k)
            out.append((f"{field} (key)", str(k)))
            out.extend(strings_of(v, field))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(strings_of(v, f"{at}[{i}]"))
    return out


def with_strings(value: Any, rendered: Sequence[str]) -> Any:
    """`value` with its strings (in `strings_of` order) replaced by `rendered`."""
    it = iter(rendered)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return next(it)
        if isinstance(v, Mapping):
            out = {}
            for x in v.values():
                key = next(it)  # the key's rendering comes before its value's
                out[key] = walk(x)
            return out
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def render_go(
    value: Any, params: Sequence[Mapping[str, Any]], *, at: str, go: GoTemplate = GoTemplate()
) -> list[Any]:
    """`value` rendered once per parameter set; a TemplateError names the field (under
    `at`) that does not render."""
    fields = strings_of(value)
    texts = [t for _, t in fields]
    if not params:
        return []
    if not any("{{" in t for t in texts):
        return [value for _ in params]
    done = _all(texts, params, fields=[f for f, _ in fields], at=at, go=go)
    return [with_strings(value, r) for r in done]


def _all(
    texts: Sequence[str],
    params: Sequence[Mapping[str, Any]],
    *,
    fields: Sequence[str],
    at: str,
    go: GoTemplate,
) -> list[list[str]]:
    """Every text with every parameter set, in one Helm render; on an error each text
    alone, to name the one that fails."""
    nonce = secrets.token_hex(6)
    start, end = f"\u27e6{nonce}", f"{nonce}\u27e7"
    body = [
        "{{- range .Values.params }}",  # `.` is each parameter set (an empty one too)
        *(f"{start}{t}{end}" for t in texts),
        "{{- end }}",
    ]
    try:
        out = _helm("".join(body), params, go=go)
    except TemplateError:
        for field, text in zip(fields, texts, strict=True):
            for p in params:
                try:
                    _helm("{{ range .Values.params }}" + text + "{{ end }}", [p], go=go)
                except TemplateError as e:
                    name = f"{at}.{field}" if field else at
                    raise TemplateError(f"{name}: {e.message}") from None
        raise
    values = [part.split(end, 1)[0] for part in out.split(start)[1:]]
    n = len(texts)
    if len(values) != n * len(params):
        raise TemplateError(f"{at}: a template wrote the markers gitkrm renders with")
    return [values[i * n : (i + 1) * n] for i in range(len(params))]


def _helm(template: str, params: Sequence[Mapping[str, Any]], *, go: GoTemplate) -> str:
    from gitkrm.charts import archive, library

    files = {
        "Chart.yaml": b"apiVersion: v2\nname: applicationset\nversion: 0.0.0\n",
        "templates/render.txt": template.encode(),
    }
    options = library.RenderOptions(
        name="applicationset",
        namespace="argocd",
        is_install=True,
        kube_version="v1.33.0",
        strict=go.strict,
    )
    try:
        loaded = library.load_archive(archive.pack("applicationset", files), chart="goTemplate")
        out = library.render(loaded, {"params": list(params)}, options, chart="goTemplate")
    except library.ChartError as e:
        raise TemplateError(_clean(e.message)) from None
    return next(iter(out.values()), "")


def _clean(message: str) -> str:
    """Helm's message without the stand-in chart's name and file."""
    text = re.sub(r"[\w./-]*applicationset/templates/render\.txt:\d+:\d+: ", "", message)
    return text.replace("template: ", "", 1)


__all__ = ["GoTemplate", "TemplateError", "go_template", "render_go", "strings_of", "with_strings"]
