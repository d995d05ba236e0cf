"""Field numbers of the Kubernetes protobuf messages gitkrm reads: the objects kubectl's
`create` and `run` generators build (k8s.io/api generated.proto numbering; numbers never
change between releases). Kinds outside this table must be sent as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class F:
    """One field: its JSON name and kind (str, bytes, int, bool, double, msg, inline,
    time, microtime, duration, quantity, ios = IntOrString, raw = embedded JSON).
    `map` is the value kind of a map<string, V>; `keep` keeps zero values (pointers,
    required fields)."""

    name: str
    kind: str = "str"
    msg: str = ""
    rep: bool = False
    map: str = ""
    keep: bool = False


def _obj(spec: str = "", status: str = "") -> dict[int, F]:
    out = {1: F("metadata", "msg", "ObjectMeta")}
    if spec:
        out[2] = F("spec", "msg", spec)
    if status:
        out[3] = F("status", "msg", status)
    return out


_S = F  # short alias for the tables below
_LIST = True

MESSAGES: Final[dict[str, dict[int, F]]] = {
    # -- meta/v1 ---------------------------------------------------------------------------
    "ObjectMeta": {
        1: _S("name"),
        2: _S("generateName"),
        3: _S("namespace"),
        4: _S("selfLink"),
        5: _S("uid"),
        6: _S("resourceVersion"),
        7: _S("generation", "int"),
        8: _S("creationTimestamp", "time"),
        9: _S("deletionTimestamp", "time"),
        10: _S("deletionGracePeriodSeconds", "int", keep=True),
        11: _S("labels", map="str"),
        12: _S("annotations", map="str"),
        13: _S("ownerReferences", "msg", "OwnerReference", rep=_LIST),
        14: _S("finalizers", rep=_LIST),
        17: _S("managedFields", "msg", "ManagedFieldsEntry", rep=_LIST),
    },
    "DeleteOptions": {
        1: _S("gracePeriodSeconds", "int", keep=True),
        2: _S("preconditions", "msg", "Preconditions"),
        3: _S("orphanDependents", "bool", keep=True),
        4: _S("propagationPolicy"),
        5: _S("dryRun", rep=_LIST),
        6: _S("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", keep=True),
    },
    "Preconditions": {1: _S("uid"), 2: _S("resourceVersion")},
    "OwnerReference": {
        1: _S("kind", keep=True),
        3: _S("name", keep=True),
        4: _S("uid", keep=True),
        5: _S("apiVersion", keep=True),
        6: _S("controller", "bool", keep=True),
        7: _S("blockOwnerDeletion", "bool", keep=True),
    },
    "ManagedFieldsEntry": {
        1: _S("manager"),
        2: _S("operation"),
        3: _S("apiVersion"),
        4: _S("time", "time"),
        6: _S("fieldsType"),
        7: _S("fieldsV1", "raw"),
        8: _S("subresource"),
    },
    "LabelSelector": {
        1: _S("matchLabels", map="str"),
        2: _S("matchExpressions", "msg", "LabelSelectorRequirement", rep=_LIST),
    },
    "LabelSelectorRequirement": {
        1: _S("key", keep=True),
        2: _S("operator", keep=True),
        3: _S("values", rep=_LIST),
    },
    "Empty": {},
    # -- core/v1 ---------------------------------------------------------------------------
    "Namespace": _obj("NamespaceSpec", "NamespaceStatus"),
    "NamespaceSpec": {1: _S("finalizers", rep=_LIST)},
    "NamespaceStatus": {1: _S("phase")},
    "ConfigMap": {
        **_obj(),
        2: _S("data", map="str"),
        3: _S("binaryData", map="bytes"),
        4: _S("immutable", "bool", keep=True),
    },
    "Secret": {
        **_obj(),
        2: _S("data", map="bytes"),
        3: _S("type"),
        4: _S("stringData", map="str"),
        5: _S("immutable", "bool", keep=True),
    },
    "ServiceAccount": {
        **_obj(),
        2: _S("secrets", "msg", "ObjectReference", rep=_LIST),
        3: _S("imagePullSecrets", "msg", "LocalObjectReference", rep=_LIST),
        4: _S("automountServiceAccountToken", "bool", keep=True),
    },
    "ObjectReference": {
        1: _S("kind"),
        2: _S("namespace"),
        3: _S("name"),
        4: _S("uid"),
        5: _S("apiVersion"),
        6: _S("resourceVersion"),
        7: _S("fieldPath"),
    },
    "LocalObjectReference": {1: _S("name")},
    "Service": _obj("ServiceSpec", "Empty"),
    "ServiceSpec": {
        1: _S("ports", "msg", "ServicePort", rep=_LIST),
        2: _S("selector", map="str"),
        3: _S("clusterIP"),
        4: _S("type"),
        5: _S("externalIPs", rep=_LIST),
        7: _S("sessionAffinity"),
        8: _S("loadBalancerIP"),
        9: _S("loadBalancerSourceRanges", rep=_LIST),
        10: _S("externalName"),
        11: _S("externalTrafficPolicy"),
        12: _S("healthCheckNodePort", "int"),
        13: _S("publishNotReadyAddresses", "bool"),
        17: _S("ipFamilyPolicy", keep=True),
        18: _S("clusterIPs", rep=_LIST),
        19: _S("ipFamilies", rep=_LIST),
        20: _S("allocateLoadBalancerNodePorts", "bool", keep=True),
        21: _S("loadBalancerClass", keep=True),
        22: _S("internalTrafficPolicy", keep=True),
        23: _S("trafficDistribution", keep=True),
    },
    "ServicePort": {
        1: _S("name"),
        2: _S("protocol"),
        3: _S("port", "int", keep=True),
        4: _S("targetPort", "ios"),
        5: _S("nodePort", "int"),
        6: _S("appProtocol", keep=True),
    },
    "Pod": _obj("PodSpec", "Empty"),
    "PodTemplateSpec": {1: _S("metadata", "msg", "ObjectMeta"), 2: _S("spec", "msg", "PodSpec")},
    "PodSpec": {
        2: _S("containers", "msg", "Container", rep=_LIST),
        3: _S("restartPolicy"),
        4: _S("terminationGracePeriodSeconds", "int", keep=True),
        5: _S("activeDeadlineSeconds", "int", keep=True),
        6: _S("dnsPolicy"),
        7: _S("nodeSelector", map="str"),
        8: _S("serviceAccountName"),
        10: _S("nodeName"),
        11: _S("hostNetwork", "bool"),
        12: _S("hostPID", "bool"),
        13: _S("hostIPC", "bool"),
        15: _S("imagePullSecrets", "msg", "LocalObjectReference", rep=_LIST),
        16: _S("hostname"),
        17: _S("subdomain"),
        19: _S("schedulerName"),
        20: _S("initContainers", "msg", "Container", rep=_LIST),
        21: _S("automountServiceAccountToken", "bool", keep=True),
        24: _S("priorityClassName"),
        25: _S("priority", "int", keep=True),
        29: _S("runtimeClassName", keep=True),
        30: _S("enableServiceLinks", "bool", keep=True),
        31: _S("preemptionPolicy", keep=True),
        35: _S("setHostnameAsFQDN", "bool", keep=True),
        37: _S("hostUsers", "bool", keep=True),
    },
    "Container": {
        1: _S("name", keep=True),
        2: _S("image"),
        3: _S("command", rep=_LIST),
        4: _S("args", rep=_LIST),
        5: _S("workingDir"),
        6: _S("ports", "msg", "ContainerPort", rep=_LIST),
        7: _S("env", "msg", "EnvVar", rep=_LIST),
        8: _S("resources", "msg", "ResourceRequirements"),
        13: _S("terminationMessagePath"),
        14: _S("imagePullPolicy"),
        16: _S("stdin", "bool"),
        17: _S("stdinOnce", "bool"),
        18: _S("tty", "bool"),
        20: _S("terminationMessagePolicy"),
        24: _S("restartPolicy", keep=True),
    },
    "ContainerPort": {
        1: _S("name"),
        2: _S("hostPort", "int"),
        3: _S("containerPort", "int", keep=True),
        4: _S("protocol"),
        5: _S("hostIP"),
    },
    "EnvVar": {1: _S("name", keep=True), 2: _S("value")},
    "ResourceRequirements": {
        1: _S("limits", map="quantity"),
        2: _S("requests", map="quantity"),
    },
    "ResourceQuota": _obj("ResourceQuotaSpec", "Empty"),
    "ResourceQuotaSpec": {
        1: _S("hard", map="quantity"),
        2: _S("scopes", rep=_LIST),
    },
    # -- apps/v1 ---------------------------------------------------------------------------
    "Deployment": _obj("DeploymentSpec", "Empty"),
    "DeploymentSpec": {
        1: _S("replicas", "int", keep=True),
        2: _S("selector", "msg", "LabelSelector"),
        3: _S("template", "msg", "PodTemplateSpec", keep=True),
        4: _S("strategy", "msg", "DeploymentStrategy"),
        5: _S("minReadySeconds", "int"),
        6: _S("revisionHistoryLimit", "int", keep=True),
        7: _S("paused", "bool"),
        9: _S("progressDeadlineSeconds", "int", keep=True),
    },
    "DeploymentStrategy": {
        1: _S("type"),
        2: _S("rollingUpdate", "msg", "RollingUpdateDeployment"),
    },
    "RollingUpdateDeployment": {
        1: _S("maxUnavailable", "ios", keep=True),
        2: _S("maxSurge", "ios", keep=True),
    },
    # -- batch/v1 --------------------------------------------------------------------------
    "Job": _obj("JobSpec", "Empty"),
    "JobSpec": {
        1: _S("parallelism", "int", keep=True),
        2: _S("completions", "int", keep=True),
        3: _S("activeDeadlineSeconds", "int", keep=True),
        4: _S("selector", "msg", "LabelSelector"),
        5: _S("manualSelector", "bool", keep=True),
        6: _S("template", "msg", "PodTemplateSpec", keep=True),
        7: _S("backoffLimit", "int", keep=True),
        8: _S("ttlSecondsAfterFinished", "int", keep=True),
        9: _S("completionMode", keep=True),
        10: _S("suspend", "bool", keep=True),
    },
    "CronJob": _obj("CronJobSpec", "Empty"),
    "CronJobSpec": {
        1: _S("schedule", keep=True),
        2: _S("startingDeadlineSeconds", "int", keep=True),
        3: _S("concurrencyPolicy"),
        4: _S("suspend", "bool", keep=True),
        5: _S("jobTemplate", "msg", "JobTemplateSpec", keep=True),
        6: _S("successfulJobsHistoryLimit", "int", keep=True),
        7: _S("failedJobsHistoryLimit", "int", keep=True),
        8: _S("timeZone", keep=True),
    },
    "JobTemplateSpec": {1: _S("metadata", "msg", "ObjectMeta"), 2: _S("spec", "msg", "JobSpec")},
    # -- policy/v1, scheduling.k8s.io/v1 -----------------------------------------------------
    "PodDisruptionBudget": _obj("PodDisruptionBudgetSpec", "Empty"),
    "PodDisruptionBudgetSpec": {
        1: _S("minAvailable", "ios", keep=True),
        2: _S("selector", "msg", "LabelSelector", keep=True),
        3: _S("maxUnavailable", "ios", keep=True),
        4: _S("unhealthyPodEvictionPolicy", keep=True),
    },
    "PriorityClass": {
        **_obj(),
        2: _S("value", "int", keep=True),
        3: _S("globalDefault", "bool"),
        4: _S("description"),
        5: _S("preemptionPolicy", keep=True),
    },
    # -- rbac.authorization.k8s.io/v1 --------------------------------------------------------
    "Role": {**_obj(), 2: _S("rules", "msg", "PolicyRule", rep=_LIST)},
    "ClusterRole": {
        **_obj(),
        2: _S("rules", "msg", "PolicyRule", rep=_LIST),
        3: _S("aggregationRule", "msg", "AggregationRule"),
    },
    "PolicyRule": {
        1: _S("verbs", rep=_LIST),
        2: _S("apiGroups", rep=_LIST),
        3: _S("resources", rep=_LIST),
        4: _S("resourceNames", rep=_LIST),
        5: _S("nonResourceURLs", rep=_LIST),
    },
    "AggregationRule": {1: _S("clusterRoleSelectors", "msg", "LabelSelector", rep=_LIST)},
    "RoleBinding": {
        **_obj(),
        2: _S("subjects", "msg", "Subject", rep=_LIST),
        3: _S("roleRef", "msg", "RoleRef", keep=True),
    },
    "Subject": {
        1: _S("kind", keep=True),
        2: _S("apiGroup"),
        3: _S("name", keep=True),
        4: _S("namespace"),
    },
    "RoleRef": {1: _S("apiGroup", keep=True), 2: _S("kind", keep=True), 3: _S("name", keep=True)},
    # -- networking.k8s.io/v1 ----------------------------------------------------------------
    "Ingress": _obj("IngressSpec", "Empty"),
    "IngressSpec": {
        1: _S("defaultBackend", "msg", "IngressBackend"),
        2: _S("tls", "msg", "IngressTLS", rep=_LIST),
        3: _S("rules", "msg", "IngressRule", rep=_LIST),
        4: _S("ingressClassName", keep=True),
    },
    "IngressTLS": {1: _S("hosts", rep=_LIST), 2: _S("secretName")},
    "IngressRule": {1: _S("host"), 2: _S("", "inline", "IngressRuleValue")},
    "IngressRuleValue": {1: _S("http", "msg", "HTTPIngressRuleValue")},
    "HTTPIngressRuleValue": {1: _S("paths", "msg", "HTTPIngressPath", rep=_LIST)},
    "HTTPIngressPath": {
        1: _S("path"),
        2: _S("backend", "msg", "IngressBackend", keep=True),
        3: _S("pathType", keep=True),
    },
    "IngressBackend": {4: _S("service", "msg", "IngressServiceBackend")},
    "IngressServiceBackend": {1: _S("name", keep=True), 2: _S("port", "msg", "ServiceBackendPort")},
    "ServiceBackendPort": {1: _S("name"), 2: _S("number", "int")},
    # -- authorization.k8s.io/v1, authentication.k8s.io/v1 (kubectl auth can-i, whoami) ----
    "SelfSubjectAccessReview": _obj("SelfSubjectAccessReviewSpec", "SubjectAccessReviewStatus"),
    "SelfSubjectAccessReviewSpec": {
        1: _S("resourceAttributes", "msg", "ResourceAttributes"),
        2: _S("nonResourceAttributes", "msg", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: _S("namespace"),
        2: _S("verb"),
        3: _S("group"),
        4: _S("version"),
        5: _S("resource"),
        6: _S("subresource"),
        7: _S("name"),
        8: _S("fieldSelector", "msg", "SelectorAttributes"),
        9: _S("labelSelector", "msg", "SelectorAttributes"),
    },
    "SelectorAttributes": {
        1: _S("rawSelector"),
        2: _S("requirements", "msg", "SelectorRequirement", rep=_LIST),
    },
    "SelectorRequirement": {
        1: _S("key", keep=True),
        2: _S("operator", keep=True),
        3: _S("values", rep=_LIST),
    },
    "NonResourceAttributes": {1: _S("path"), 2: _S("verb")},
    "SubjectAccessReviewStatus": {
        1: _S("allowed", "bool", keep=True),
        2: _S("reason"),
        3: _S("evaluationError"),
        4: _S("denied", "bool"),
    },
    "SelfSubjectRulesReview": _obj("SelfSubjectRulesReviewSpec", "SubjectRulesReviewStatus"),
    "SelfSubjectRulesReviewSpec": {1: _S("namespace")},
    "SubjectRulesReviewStatus": {
        1: _S("resourceRules", "msg", "ResourceRule", rep=_LIST),
        2: _S("nonResourceRules", "msg", "NonResourceRule", rep=_LIST),
        3: _S("incomplete", "bool", keep=True),
        4: _S("evaluationError"),
    },
    "ResourceRule": {
        1: _S("verbs", rep=_LIST),
        2: _S("apiGroups", rep=_LIST),
        3: _S("resources", rep=_LIST),
        4: _S("resourceNames", rep=_LIST),
    },
    "NonResourceRule": {1: _S("verbs", rep=_LIST), 2: _S("nonResourceURLs", rep=_LIST)},
    "SelfSubjectReview": {
        1: _S("metadata", "msg", "ObjectMeta"),
        2: _S("status", "msg", "SelfSubjectReviewStatus"),
    },
    "SelfSubjectReviewStatus": {1: _S("userInfo", "msg", "UserInfo")},
    "UserInfo": {1: _S("username"), 2: _S("uid"), 3: _S("groups", rep=_LIST)},
}

_ROLE_KINDS: Final = ("Role", "ClusterRole", "RoleBinding")

KINDS: Final[dict[tuple[str, str], str]] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("v1", "Pod"): "Pod",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "RoleBinding",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
}
