"""The kinds the bundled controllers read and write."""

from __future__ import annotations

from gitkrm.krm import GVK

POD = GVK(group="", version="v1", kind="Pod")
NODE = GVK(group="", version="v1", kind="Node")
NAMESPACE = GVK(group="", version="v1", kind="Namespace")
SERVICE = GVK(group="", version="v1", kind="Service")
ENDPOINTS = GVK(group="", version="v1", kind="Endpoints")
CONFIG_MAP = GVK(group="", version="v1", kind="ConfigMap")
SERVICE_ACCOUNT = GVK(group="", version="v1", kind="ServiceAccount")
SECRET = GVK(group="", version="v1", kind="Secret")
RESOURCE_QUOTA = GVK(group="", version="v1", kind="ResourceQuota")
REPLICATION_CONTROLLER = GVK(group="", version="v1", kind="ReplicationController")
PVC = GVK(group="", version="v1", kind="PersistentVolumeClaim")
PV = GVK(group="", version="v1", kind="PersistentVolume")
DEPLOYMENT = GVK(group="apps", version="v1", kind="Deployment")
REPLICASET = GVK(group="apps", version="v1", kind="ReplicaSet")
STATEFULSET = GVK(group="apps", version="v1", kind="StatefulSet")
DAEMONSET = GVK(group="apps", version="v1", kind="DaemonSet")
CONTROLLER_REVISION = GVK(group="apps", version="v1", kind="ControllerRevision")
JOB = GVK(group="batch", version="v1", kind="Job")
CRONJOB = GVK(group="batch", version="v1", kind="CronJob")
LEASE = GVK(group="coordination.k8s.io", version="v1", kind="Lease")
ENDPOINT_SLICE = GVK(group="discovery.k8s.io", version="v1", kind="EndpointSlice")
STORAGE_CLASS = GVK(group="storage.k8s.io", version="v1", kind="StorageClass")
CRD = GVK(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition")

# The annotation that makes simulated pods misbehave (on a pod or its template).
SIMULATE = "gitkrm.io/simulate"
# Capacity of a Node declared in Git: "cpu=4,memory=16Gi,pods=110".
CAPACITY = "gitkrm.io/capacity"
