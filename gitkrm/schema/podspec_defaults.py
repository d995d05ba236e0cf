"""Defaults of pod specs and containers (pkg/apis/core/v1/defaults.go), shared by Pods and
every kind with a pod template."""

from __future__ import annotations

from decimal import Decimal

from gitkrm.krm.quantity import QuantityError, parse_quantity
from gitkrm.krm.types import Obj

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
_VOLUME_SOURCES = frozenset(
    {
        "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo",
        "secret", "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume",
        "cinder", "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap",
        "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
        "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
    }
)  # fmt: skip


def image_tag(image: str) -> str:
    """The tag kubelet would pull: `latest` when neither a tag nor a digest is given."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def default_container(c: Obj) -> None:
    if not c.get("imagePullPolicy"):
        image = c.get("image")
        tag = image_tag(image) if isinstance(image, str) else "latest"
        c["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    for port in c.get("ports") or ():
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"
    for probe_key in _PROBES:
        probe = c.get(probe_key)
        if isinstance(probe, dict):
            _default_probe(probe)
    for env in c.get("env") or ():
        if isinstance(env, dict):
            _default_field_ref(env.get("valueFrom"))


def _default_field_ref(source: object) -> None:
    if isinstance(source, dict):
        ref = source.get("fieldRef")
        if isinstance(ref, dict) and not ref.get("apiVersion"):
            ref["apiVersion"] = "v1"


def _default_probe(probe: Obj) -> None:
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    http = probe.get("httpGet")
    if isinstance(http, dict):
        if not http.get("path"):
            http["path"] = "/"
        if not http.get("scheme"):
            http["scheme"] = "HTTP"


def _default_volume(volume: Obj) -> None:
    if not any(key in _VOLUME_SOURCES for key in volume):
        volume["emptyDir"] = {}
    for key in _MODE_SOURCES:
        source = volume.get(key)
        if isinstance(source, dict):
            mode_key = "sources" if key == "projected" else None
            if source.get("defaultMode") is None:
                source["defaultMode"] = 420
            if mode_key:
                for item in source.get(mode_key) or ():
                    if isinstance(item, dict):
                        for sub in (item.get("downwardAPI") or {}).get("items") or ():
                            if isinstance(sub, dict):
                                _default_field_ref(sub)
    for item in (volume.get("downwardAPI") or {}).get("items") or ():
        if isinstance(item, dict):
            _default_field_ref(item)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""


def default_pod_spec(spec: Obj, *, pod: bool = False) -> None:
    """Pod-spec defaults; `pod=True` adds those only Pods get (not templates)."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    host_network = spec.get("hostNetwork") is True
    for key in _CONTAINER_LISTS:
        for c in spec.get(key) or ():
            if isinstance(c, dict):
                default_container(c)
                if host_network:
                    for port in c.get("ports") or ():
                        if isinstance(port, dict) and not port.get("hostPort"):
                            port["hostPort"] = port.get("containerPort")
                if pod:
                    _requests_from_limits(c)
    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            _default_volume(volume)
    if pod and spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True


def _requests_from_limits(c: Obj) -> None:
    """A Pod's container without requests for a resource requests its limit."""
    resources = c.get("resources")
    if not isinstance(resources, dict):
        return
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    if isinstance(requests, dict):
        for name, value in limits.items():
            requests.setdefault(name, value)


def default_pod_template(template: Obj) -> None:
    spec = template.get("spec")
    if isinstance(spec, dict):
        default_pod_spec(spec)


_QOS_RESOURCES = ("cpu", "memory")


def _sum_quantities(values: object, into: dict[str, Decimal], seen: set[str] | None = None) -> None:
    if not isinstance(values, dict):
        return
    for name in _QOS_RESOURCES:
        raw = values.get(name)
        if raw is None:
            continue
        try:
            q = parse_quantity(raw)
        except (QuantityError, TypeError):
            continue
        if q != 0:
            into[name] = into.get(name, 0) + q
            if seen is not None:
                seen.add(name)


def pod_qos_class(spec: Obj) -> str:
    """The QoS class the API server records in a new Pod's status (qos.GetPodQOS)."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            resources = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(resources, dict):
                guaranteed = False
                continue
            _sum_quantities(resources.get("requests"), requests)
            found: set[str] = set()
            _sum_quantities(resources.get("limits"), limits, found)
            if found != set(_QOS_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"
