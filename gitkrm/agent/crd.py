"""The GitSource CustomResourceDefinition (gitkrm.io/v1alpha1), installed into the store at start.

Each source is a GitSource object in `gitkrm-system`, so `kubectl get gitsources` shows sync
state, and a `--config` file is validated against the very schema the store enforces.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from typing import Any

import orjson

from gitkrm.errors import AlreadyExists, Conflict, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store import Store

from .duration import DURATION_PATTERN
from .postbuild_config import SCHEMA as POSTBUILD_SCHEMA
from .tree.model import Peer

_CRD_POLICIES = ["Create", "CreateReplace", "Skip"]
GROUP = "gitkrm.io"
VERSION = "v1alpha1"
KIND = "GitSource"
API_VERSION = f"{GROUP}/{VERSION}"
NAMESPACE = "gitkrm-system"
CRD_NAME = f"gitsources.{GROUP}"
GITSOURCE_GVK = GVK(group=GROUP, version=VERSION, kind=KIND)
CRD_REF = ObjectRef(group="apiextensions.k8s.io", kind="CustomResourceDefinition", name=CRD_NAME)
_HASH_ANNOTATION = "gitkrm.io/definition-hash"
REQUESTED_AT = "gitkrm.io/requestedAt"
"""Set this annotation on a GitSource (any new value, e.g. a timestamp) to sync it now."""

ADOPTION_POLICIES = ("never", "if-unowned", "always")

_STR: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_DURATION: dict[str, Any] = {"type": "string", "pattern": DURATION_PATTERN}

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["url"],
    "properties": {
        "url": {"type": "string", "minLength": 1},
        "ref": {
            "type": "object",
            "maxProperties": 1,
            "properties": {
                "branch": _STR,
                "tag": _STR,
                "commit": _STR,
                "semver": _STR,
                "name": _STR,
            },
        },
        "path": _STR,
        # .sourceignore lines after the repository's root file (Flux's spec.ignore)
        "ignore": {"type": "string", "maxLength": 65536},
        "interval": _DURATION,
        "retryInterval": _DURATION,  # after a failed sync (Flux's)
        "timeout": _DURATION,
        "healthTimeout": _DURATION,
        # Flux's CEL health checks of custom kinds (gitkrm.health.expressions).
        "healthCheckExprs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "current"],
                "properties": {
                    "apiVersion": {"type": "string", "minLength": 1},
                    "kind": {"type": "string", "minLength": 1},
                    "current": {"type": "string", "minLength": 1},
                    "inProgress": _STR,
                    "failed": _STR,
                },
            },
        },
        "defaultNamespace": {"type": "string", "maxLength": 63},
        # A declared (child) GitSource: sources that must be Ready first, and whether
        # Ready waits for its objects' health (gitkrm.agent.tree.gitsource).
        "dependsOn": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1}, "namespace": _STR},
            },
        },
        "wait": _BOOL,
        # Peers whose declaring objects become child sources (gitkrm.agent.tree.registry).
        "interpret": {
            "type": "array",
            "items": {"type": "string", "enum": [p.value for p in Peer]},
        },
        "prune": {"type": "boolean", "default": True},
        "allowEmpty": {"type": "boolean", "default": False},
        # The most a revision may prune without a Gitkrm-Allow-Prune trailer (sync.guards):
        # `count` objects or `percent` % of the inventory, whichever is more.
        "pruneBudget": {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 0, "default": 10},
                "percent": {"type": "integer", "minimum": 0, "maximum": 100, "default": 25},
            },
        },
        "adoption": {"type": "string", "enum": list(ADOPTION_POLICIES), "default": "never"},
        "suspend": {"type": "boolean", "default": False},
        "ignoreDifferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "jsonPointers"],
                "properties": {
                    "group": _STR,
                    "kind": {"type": "string", "minLength": 1},
                    "name": _STR,
                    "namespace": _STR,
                    "jsonPointers": {"type": "array", "minItems": 1, "items": _STR},
                },
            },
        },
        "auth": {
            "type": "object",
            "properties": {
                "username": _STR,
                "passwordFile": _STR,
                "passwordEnv": _STR,
                "bearer": _BOOL,
                "sshKeyFile": _STR,
                "knownHostsFile": _STR,
            },
        },
        "caFile": _STR,
        # A chart release: one chart of the chart repository spec.url (gitkrm.charts.source).
        "chart": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1}, "version": _STR},
        },
        "verify": {
            "type": "object",
            "required": ["keyring"],
            "properties": {"mode": {"type": "string", "enum": ["head"]}, "keyring": _STR},
        },
        **POSTBUILD_SCHEMA,
        # How Helm charts in the source are rendered (gitkrm.charts.spec.HelmSpec).
        "helm": {
            "type": "object",
            "properties": {
                "releaseName": {"type": "string", "maxLength": 253},  # Helm's 53: charts.release
                "namespace": {"type": "string", "maxLength": 63},
                "valueFiles": {"type": "array", "items": _STR},
                "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "set": {"type": "array", "items": _STR},
                "skipCRDs": _BOOL,
                "kubeVersion": _STR,
                "apiVersions": {"type": "array", "items": _STR},
                "installCRDs": {"type": "string", "enum": _CRD_POLICIES},
                "upgradeCRDs": {"type": "string", "enum": _CRD_POLICIES},
                "createNamespace": _BOOL,
                # Argo CD's Helm sources (gitkrm.agent.tree.argocd_helm).
                "templateMode": _BOOL,
                "setString": {"type": "array", "items": _STR},
                "fileParameters": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "path"],
                        "properties": {"name": _STR, "path": _STR},
                    },
                },
                "ignoreMissingValueFiles": _BOOL,
                "repositories": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["url"],
                        "properties": {
                            "url": _STR,
                            "username": _STR,
                            "passwordFile": _STR,
                            "caFile": _STR,
                        },
                    },
                },
            },
        },
    },
}

_CONDITION: dict[str, Any] = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": _STR,
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": _STR,
        "message": _STR,
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
}

STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observedGeneration": {"type": "integer", "format": "int64"},
        "lastSyncedRevision": _STR,
        "lastAttemptedRevision": _STR,
        "lastSyncTime": {"type": "string", "format": "date-time"},
        "lastHandledRequestedAt": _STR,
        "result": {"type": "string", "enum": ["Succeeded", "Failed"]},
        "lastError": _STR,
        "errors": {"type": "array", "items": _STR},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "timingsMs": {"type": "object", "additionalProperties": {"type": "number"}},
        # The aggregate health of the objects of the last sync (gitkrm.health.aggregate).
        "health": {
            "type": "object",
            "properties": {
                "status": _STR,
                "objects": {"type": "integer"},
                "notCurrent": {"type": "integer"},
            },
        },
        # How the source's remote takes the reports written into Git (PushState.to_status).
        "report": {
            "type": "object",
            "properties": {
                "url": _STR,
                "pending": _BOOL,
                "failures": {"type": "integer"},
                "lastPushAttempt": {"type": "string", "format": "date-time"},
                "lastPushTime": {"type": "string", "format": "date-time"},
                "nextPushAttempt": {"type": "string", "format": "date-time"},
                "lastPushError": _STR,
            },
        },
        # The hooks run for a revision (once per revision: see gitkrm.sync.phases).
        "hooks": {
            "type": "object",
            "properties": {
                "revision": _STR,
                "runs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "phase": _STR,
                            "kind": _STR,
                            "name": _STR,
                            "namespace": _STR,
                            "result": _STR,
                            "message": _STR,
                            "deleted": _BOOL,
                        },
                    },
                },
            },
        },
        # A declared GitSource: the child source running it, what it waits for, and
        # the fields gitkrm does not honour (gitkrm.agent.tree).
        "child": _STR,
        "waitingFor": {"type": "array", "items": _STR},
        "unhonoured": {"type": "array", "items": _STR},
        # Annotations of Flux and Argo CD that gitkrm does not honour (once per sync).
        "warnings": {"type": "array", "items": _STR},
        # Compared, not applied (an Application without automated sync): what differs.
        "outOfSync": {"type": "array", "items": _STR},
        "conditions": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": _CONDITION,
        },
    },
}

_READY = '.status.conditions[?(@.type=="Ready")]'
PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "URL", "type": "string", "jsonPath": ".spec.url"},
    {"name": "Revision", "type": "string", "jsonPath": ".status.lastSyncedRevision"},
    {"name": "Ready", "type": "string", "jsonPath": f"{_READY}.status"},
    {"name": "Health", "type": "string", "jsonPath": ".status.health.status"},
    {"name": "Status", "type": "string", "jsonPath": f"{_READY}.message"},
    {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def gitsource_crd() -> Obj:
    """A fresh copy of the CRD object (callers may hand it to the store, which defaults it)."""
    crd: Obj = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": CRD_NAME,
            "labels": {"app.kubernetes.io/managed-by": "gitkrm"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": "gitsources",
                "singular": "gitsource",
                "kind": KIND,
                "listKind": f"{KIND}List",
                "shortNames": ["gs"],
                "categories": ["gitkrm"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS),
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "A Git repository (or a plain directory) that "
                            "gitkrm keeps the store equal to.",
                            "properties": {
                                "apiVersion": _STR,
                                "kind": _STR,
                                "metadata": {"type": "object"},
                                "spec": copy.deepcopy(SPEC_SCHEMA),
                                "status": copy.deepcopy(STATUS_SCHEMA),
                            },
                        }
                    },
                }
            ],
        },
    }
    digest = hashlib.sha256(orjson.dumps(crd["spec"], option=orjson.OPT_SORT_KEYS)).hexdigest()
    crd["metadata"]["annotations"] = {_HASH_ANNOTATION: digest[:16]}
    return crd


def namespace_object() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/managed-by": "gitkrm"}},
    }


async def install(store: Store) -> None:
    """Create `gitkrm-system` and the GitSource CRD, or bring an older definition up to date."""
    with contextlib.suppress(AlreadyExists):
        await store.create(namespace_object())
    desired = gitsource_crd()
    want = desired["metadata"]["annotations"][_HASH_ANNOTATION]
    for _ in range(5):
        try:
            live = await store.get(CRD_REF)
        except NotFound:
            try:
                await store.create(desired)
                return
            except AlreadyExists:
                continue
        annotations = live.get("metadata", {}).get("annotations") or {}
        if annotations.get(_HASH_ANNOTATION) == want:
            return
        desired["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        try:
            await store.update(desired)
            return
        except Conflict:
            desired = gitsource_crd()
    raise Conflict(f"CustomResourceDefinition {CRD_NAME} kept changing while it was installed")
