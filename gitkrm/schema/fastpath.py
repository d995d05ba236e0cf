"""Schema-encoded API rules: the admission fast path.

Many API-server rules are simple per-field constraints (ports in 1-65535, DNS-label
names, enums, required non-empty strings, well-formed quantities, label syntax). Adding
them to the strict schemas as JSON Schema keywords lets jsonschema-rs check them in one
native `is_valid` call, so that the Python rules (rules.py, rules_pod.py) only run the
checks that need more than one field (uniqueness, selector matching, requests <= limits)
on valid objects. Messages never come from here: when this schema rejects an object,
admission falls back to the plain schema plus every Python rule, which word each cause as
the API server does. So a constraint here may be stricter than Kubernetes (that only costs
speed), never looser than the Python check it lets `fast=True` skip.
"""

from __future__ import annotations

from typing import Any

from gitkrm.krm.types import JSONObject

_DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Patterns avoid look-around so that they compile to plain (fast, linear) regexes.
# IANA_SVC_NAME: 1-15 characters of [-a-z0-9] with a letter, no "--", no hyphen at an end.
_PORT_NAME: JSONObject = {
    "type": "string",
    "maxLength": 15,
    "pattern": r"^[a-z0-9]+(-[a-z0-9]+)*$",
    "allOf": [{"pattern": "[a-z]"}],
}
# A label key: [DNS-1123 subdomain prefix "/"] name of at most 63 characters. Keeping the
# whole key within 253 characters bounds the prefix (stricter than Kubernetes: fine here).
_QUALIFIED_NAME: JSONObject = {
    "maxLength": 253,
    "pattern": (
        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
    ),
}
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
_QUANTITY = r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$"
_CONTAINER_RESOURCE = r"^(cpu|memory|ephemeral-storage|hugepages-.*|.*/.*)$"

_PORT: JSONObject = {"type": "integer", "minimum": 1, "maximum": 65535}
_OPTIONAL_PORT: JSONObject = {"type": ["integer", "null"], "minimum": 0, "maximum": 65535}
_NON_NEGATIVE: JSONObject = {"type": ["integer", "null"], "minimum": 0}
_DNS_LABEL_NAME: JSONObject = {"type": "string", "pattern": _DNS1123_LABEL, "maxLength": 63}
_NON_EMPTY: JSONObject = {"type": "string", "minLength": 1}
_PROTOCOL: JSONObject = {"enum": ["SCTP", "TCP", "UDP", None]}
_LABELS: JSONObject = {
    "type": ["object", "null"],
    "propertyNames": _QUALIFIED_NAME,
    "additionalProperties": {"type": "string", "pattern": _LABEL_VALUE, "maxLength": 63},
}
_QUANTITIES: JSONObject = {
    "type": ["object", "null"],
    "propertyNames": {"pattern": _CONTAINER_RESOURCE},
    "additionalProperties": {"type": ["string", "number"], "pattern": _QUANTITY, "minimum": 0},
}

_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."

# definition -> property -> the schema that replaces it (the field's meaning is unchanged,
# only narrowed); "+required" lists properties that must be present.
OVERLAYS: dict[str, dict[str, Any]] = {
    _CORE + "Container": {
        "name": _DNS_LABEL_NAME,
        "image": _NON_EMPTY,
        "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never", None]},
        "terminationMessagePolicy": {"enum": ["FallbackToLogsOnError", "File", None]},
        "+required": ["name", "image"],
    },
    _CORE + "ContainerPort": {
        "containerPort": _PORT,
        "hostPort": _OPTIONAL_PORT,
        "name": _PORT_NAME,
        "protocol": _PROTOCOL,
    },
    _CORE + "EnvVar": {"name": _NON_EMPTY},
    _CORE + "VolumeMount": {"name": _NON_EMPTY, "mountPath": _NON_EMPTY},
    _CORE + "Volume": {"name": _DNS_LABEL_NAME},
    _CORE + "ResourceRequirements": {"limits": _QUANTITIES, "requests": _QUANTITIES},
    _CORE + "PodSpec": {
        "containers": {"minItems": 1},
        "restartPolicy": {"enum": ["Always", "OnFailure", "Never", None]},
        "dnsPolicy": {"enum": ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None", None]},
        "terminationGracePeriodSeconds": _NON_NEGATIVE,
    },
    _CORE + "ServiceSpec": {
        "type": {"enum": ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort", None]},
        "sessionAffinity": {"enum": ["ClientIP", "None", None]},
    },
    _CORE + "ServicePort": {
        "name": {"type": ["string", "null"], "pattern": _DNS1123_LABEL, "maxLength": 63},
        "port": _PORT,
        "protocol": _PROTOCOL,
        "nodePort": _OPTIONAL_PORT,
        "targetPort": {
            "type": ["integer", "string", "null"],
            "minimum": 1,
            "maximum": 65535,
            "maxLength": 15,
            "pattern": _PORT_NAME["pattern"],
            "allOf": _PORT_NAME["allOf"],
        },
    },
    _META + "ObjectMeta": {"labels": _LABELS},
    _META + "LabelSelector": {"matchLabels": _LABELS},
    _APPS + "DeploymentSpec": {
        "replicas": _NON_NEGATIVE,
        "minReadySeconds": _NON_NEGATIVE,
        "revisionHistoryLimit": _NON_NEGATIVE,
        "progressDeadlineSeconds": _NON_NEGATIVE,
    },
    _APPS + "ReplicaSetSpec": {"replicas": _NON_NEGATIVE, "minReadySeconds": _NON_NEGATIVE},
    _APPS + "StatefulSetSpec": {
        "replicas": _NON_NEGATIVE,
        "minReadySeconds": _NON_NEGATIVE,
        "revisionHistoryLimit": _NON_NEGATIVE,
    },
    _APPS + "DaemonSetSpec": {
        "minReadySeconds": _NON_NEGATIVE,
        "revisionHistoryLimit": _NON_NEGATIVE,
    },
}


def with_overlays(defs: dict[str, Any]) -> dict[str, Any]:
    """A copy of `defs` (sharing everything untouched) with the fast-path constraints."""
    out = dict(defs)
    for name, props in OVERLAYS.items():
        definition = dict(out[name])
        properties = dict(definition["properties"])
        for prop, constraint in props.items():
            if prop == "+required":
                definition["required"] = sorted({*definition.get("required", ()), *constraint})
                continue
            merged = {k: v for k, v in properties[prop].items() if k != "type"}
            merged.update(constraint)
            if "type" not in constraint and "type" in properties[prop]:
                merged["type"] = properties[prop]["type"]
            properties[prop] = merged
        definition["properties"] = properties
        out[name] = definition
    return out
