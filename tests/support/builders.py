"""Builders of the objects tests write: ConfigMaps, Deployments, Namespaces, CRDs and their
custom resources, managedFields entries. Each returns a fresh plain dict, ready for a store
or an HTTP body.

`namespace=None` leaves `metadata.namespace` out (the URL's namespace or the store's
default then applies). Keyword arguments of `configmap` are data entries; those of
`deployment` are extra `spec` fields (`strategy=...`, `progressDeadlineSeconds=...`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from gitkrm.krm import Obj


def _metadata(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace is not None:
        md["namespace"] = namespace
    if labels:
        md["labels"] = dict(labels)
    if annotations:
        md["annotations"] = dict(annotations)
    return md


def namespace(name: str, *, labels: Mapping[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(name, None, labels)}


def configmap(
    name: str,
    namespace: str | None = "default",
    *,
    data: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    immutable: bool | None = None,
    **entries: str,
) -> Obj:
    """A ConfigMap; `data` (or the keyword entries) only when given, so `configmap("a")` has
    no `data` field at all."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(name, namespace, labels, annotations),
    }
    if data is not None or entries:
        obj["data"] = {**(data or {}), **entries}
    if immutable is not None:
        obj["immutable"] = immutable
    return obj


def claim(name: str = "data", namespace: str = "default", *, storage: str = "1Gi",
          **spec: Any) -> Obj:  # fmt: skip
    """A ReadWriteOnce PersistentVolumeClaim requesting `storage`; keyword arguments are
    more `spec` fields."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _metadata(name, namespace),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": storage}},
            **spec,
        },
    }


def deployment(
    name: str,
    namespace: str | None = "default",
    *,
    replicas: int = 1,
    image: str = "nginx",
    container: str = "c",
    port: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    template_annotations: Mapping[str, str] | None = None,
    pod_spec: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Obj:
    """A Deployment of one container selecting `app: <name>` (also its own label, with
    `labels` added); `pod_spec` holds more fields of the pod template's spec
    (`nodeSelector`, ...)."""
    app = {"app": name}
    c: dict[str, Any] = {"name": container, "image": image}
    if port is not None:
        c["ports"] = [{"containerPort": port}]
    template_md: dict[str, Any] = {"labels": dict(app)}
    if template_annotations:
        template_md["annotations"] = dict(template_annotations)
    body: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(app)},
        "template": {"metadata": template_md, "spec": {**(pod_spec or {}), "containers": [c]}},
    }
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, namespace, {**app, **(labels or {})}, annotations),
        "spec": body,
    }


_DEFAULT_SPEC: Mapping[str, Any] = {"size": {"type": "integer"}, "color": {"type": "string"}}


def crd(
    kind: str = "Widget",
    group: str = "example.com",
    *,
    plural: str | None = None,
    singular: str | None = None,
    scope: str = "Namespaced",
    versions: Iterable[str] = ("v1",),
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
    schema: Mapping[str, Any] | None = None,
    status_subresource: bool = True,
    categories: Iterable[str] = (),
    short_names: Iterable[str] = (),
) -> Obj:
    """A CustomResourceDefinition of `kind` in `group`, served in `versions` (the first is the
    storage version), with a structural schema: `spec` and `status` are the properties of
    those two fields (spec defaults to `size: integer, color: string`), or `schema` is the
    whole openAPIV3Schema."""
    plural = plural or kind.lower() + "s"
    names: dict[str, Any] = {"plural": plural, "singular": singular or kind.lower(), "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    if schema is None:
        props: dict[str, Any] = {
            "spec": {"type": "object", "properties": dict(_DEFAULT_SPEC if spec is None else spec)},
        }
        if status is not None:
            props["status"] = {"type": "object", "properties": dict(status)}
        schema = {"type": "object", "properties": props}
    served = []
    for i, v in enumerate(versions):
        entry: dict[str, Any] = {"name": v, "served": True, "storage": i == 0}
        if status_subresource:
            entry["subresources"] = {"status": {}}
        entry["schema"] = {"openAPIV3Schema": copy.deepcopy(dict(schema))}
        served.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope, "names": names, "versions": served},
    }


def custom_resource(
    kind: str,
    name: str,
    namespace: str | None = "default",
    *,
    group: str = "example.com",
    version: str = "v1",
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """An object of a `crd(...)` kind; keyword arguments are its spec."""
    obj: Obj = {
        "apiVersion": f"{group}/{version}",
        "kind": kind,
        "metadata": _metadata(name, namespace, labels),
    }
    if spec:
        obj["spec"] = dict(spec)
    return obj


def managed_fields_entry(
    manager: str,
    operation: str,
    fields: Mapping[str, Any],
    *,
    api_version: str = "v1",
    time: str = "2024-01-01T00:00:00Z",
) -> dict[str, Any]:
    """One `metadata.managedFields` entry: `manager`'s `operation` (Apply, Update) owning
    `fields` (FieldsV1, as `{"f:data": {"f:a": {}}}`)."""
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": dict(fields),
    }
