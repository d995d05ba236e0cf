"""`kubectl get` tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the
columns kube-apiserver prints for the common kinds, a CRD's additionalPrinterColumns for
custom resources, and Name/Created At for everything else. Every column (priority 1
included) is sent; kubectl shows the priority-1 ones with `-o wide`."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypedDict

from gitkrm.errors import GitkrmError
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp
from gitkrm.krm.types import JSONScalar
from gitkrm.schema import ResourceInfo
from gitkrm.server import printers_cluster as cluster
from gitkrm.server import printers_core as core
from gitkrm.server import printers_more as more
from gitkrm.server import printers_workloads as wl
from gitkrm.server.crds import crd_version
from gitkrm.server.humanize import human_duration
from gitkrm.server.jsonpath import find, go_text
from gitkrm.server.printing import NAME, Column, ColumnDefinition, Printer, m, name_of
from gitkrm.store.sqlite import SqliteStore

BUILTIN: Final[dict[tuple[str, str], Printer]] = {
    ("", "Pod"): wl.POD,
    ("apps", "Deployment"): wl.DEPLOYMENT,
    ("apps", "ReplicaSet"): wl.REPLICA_SET,
    ("", "ReplicationController"): wl.REPLICA_SET,
    ("apps", "StatefulSet"): wl.STATEFUL_SET,
    ("apps", "DaemonSet"): wl.DAEMON_SET,
    ("batch", "Job"): wl.JOB,
    ("batch", "CronJob"): wl.CRON_JOB,
    ("", "Service"): core.SERVICE,
    ("", "ConfigMap"): core.CONFIG_MAP,
    ("", "Secret"): core.SECRET,
    ("", "Namespace"): core.NAMESPACE,
    ("", "ServiceAccount"): core.SERVICE_ACCOUNT,
    ("", "Node"): core.NODE,
    ("", "Event"): core.EVENT,
    ("", "Endpoints"): core.ENDPOINTS,
    ("", "PersistentVolumeClaim"): core.PVC,
    ("networking.k8s.io", "Ingress"): core.INGRESS,
    ("autoscaling", "HorizontalPodAutoscaler"): core.HPA,
    ("", "ResourceQuota"): more.QUOTA,
    ("policy", "PodDisruptionBudget"): more.PDB,
    ("rbac.authorization.k8s.io", "RoleBinding"): more.BINDING,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): more.BINDING,
    ("scheduling.k8s.io", "PriorityClass"): more.PRIORITY_CLASS,
    ("storage.k8s.io", "StorageClass"): more.STORAGE_CLASS,
    ("networking.k8s.io", "NetworkPolicy"): more.NETWORK_POLICY,
    ("coordination.k8s.io", "Lease"): more.LEASE,
    ("apiregistration.k8s.io", "APIService"): cluster.API_SERVICE,
    ("certificates.k8s.io", "CertificateSigningRequest"): cluster.CSR,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): cluster.FLOW_SCHEMA,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): cluster.PRIORITY_LEVEL,
    ("node.k8s.io", "RuntimeClass"): cluster.RUNTIME_CLASS,
}

_CREATED_AT: Final = Column(
    "Created At",
    "date",
    description="CreationTimestamp is a timestamp representing the server time when this "
    "object was created.",
)
DEFAULT: Final = Printer(
    (NAME, _CREATED_AT),
    lambda obj, now: [name_of(obj), m(obj, "metadata", "creationTimestamp")],
)
_DEFAULT_CR_COLUMNS: Final = (
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def _cell(ctype: str, value: object, now: float) -> JSONScalar:
    """`cellForJSONValue` of the apiextensions table convertor."""
    if value is None:
        return None
    if ctype == "integer":
        if isinstance(value, bool):
            return None
        return int(value) if isinstance(value, int | float) else None
    if ctype == "number":
        if isinstance(value, bool):
            return None
        return float(value) if isinstance(value, int | float) else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if ctype == "string":
        return go_text(value)
    if ctype == "date":
        if not isinstance(value, str):
            return None
        t = parse_timestamp(value)
        return "<invalid>" if t is None else human_duration(now - t)
    return None


def custom_printer(columns: Iterable[Mapping[str, Any]]) -> Printer:
    """Name plus a CRD version's additionalPrinterColumns (Age when it lists none)."""
    cols = [c for c in columns if isinstance(c, Mapping) and c.get("name")]
    if not cols:
        cols = list(_DEFAULT_CR_COLUMNS)
    defs = [NAME] + [
        Column(
            str(c["name"]),
            str(c.get("type") or "string"),
            str(c.get("format") or ""),
            int(c.get("priority") or 0),
            str(c.get("description") or ""),
        )
        for c in cols
    ]
    specs = [(str(c.get("jsonPath") or ""), str(c.get("type") or "string")) for c in cols]

    def cells(obj: Obj, now: float) -> list[object]:
        out: list[object] = [name_of(obj)]
        for path, ctype in specs:
            try:
                found = find(obj, path)
            except GitkrmError:
                found = []
            out.append(_cell(ctype, found[0], now) if found else None)
        return out

    return Printer(tuple(defs), cells)


class Tables:
    """Builds Tables; custom printers are cached per CRD resourceVersion."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self._custom: dict[str, tuple[str, Printer]] = {}

    async def printer(self, info: ResourceInfo) -> Printer:
        if not info.custom:
            return BUILTIN.get((info.group, info.kind), DEFAULT)
        crd, version = await crd_version(self._store, info)
        key = f"{info.plural}.{info.group}/{info.version}"
        rv = str(crd["metadata"].get("resourceVersion"))
        hit = self._custom.get(key)
        if hit is not None and hit[0] == rv:
            return hit[1]
        printer = custom_printer(version.get("additionalPrinterColumns") or ())
        self._custom[key] = (rv, printer)
        return printer


def _row_object(obj: Obj, include: str, table_version: str) -> Obj | None:
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{table_version}",
        "metadata": obj.get("metadata") or {},
    }


class TableRow(TypedDict):
    """A row of a Table (metav1.TableRow)."""

    cells: list[object]
    object: Obj | None


class Table(TypedDict):
    """A meta.k8s.io Table (metav1.Table)."""

    kind: str
    apiVersion: str
    metadata: dict[str, object]
    columnDefinitions: list[ColumnDefinition]
    rows: list[TableRow]


def table(
    printer: Printer,
    objs: Iterable[Obj],
    *,
    list_metadata: Mapping[str, object] | None = None,
    include_object: str = "Metadata",
    table_version: str = "v1",
    now: float | None = None,
) -> Table:
    """A meta.k8s.io Table of `objs` (one row each, in order)."""
    now = time.time() if now is None else now
    rows: list[TableRow] = [
        {
            "cells": printer.cells(obj, now),
            "object": _row_object(obj, include_object, table_version),
        }
        for obj in objs
    ]
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{table_version}",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": [c.definition() for c in printer.columns],
        "rows": rows,
    }
