"""Table rows of services, config, namespaces, nodes, events and networking kinds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitkrm.krm import Obj
from gitkrm.server.humanize import since
from gitkrm.server.printing import (
    AGE,
    NAME,
    NONE,
    Column,
    Printer,
    age,
    format_labels,
    m,
    name_of,
    num,
)


def _lb_ingress(obj: Obj) -> list[str]:
    out = []
    for i in m(obj, "status", "loadBalancer", "ingress") or ():
        if isinstance(i, Mapping):
            if i.get("ip"):
                out.append(str(i["ip"]))
            elif i.get("hostname"):
                out.append(str(i["hostname"]))
    return out


def _external_ip(svc: Obj) -> str:
    typ = m(svc, "spec", "type") or "ClusterIP"
    external = [str(x) for x in m(svc, "spec", "externalIPs") or ()]
    if typ in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else NONE
    if typ == "LoadBalancer":
        ips = _lb_ingress(svc) + external
        if ips:
            return ",".join(ips)
        return "<pending>"
    if typ == "ExternalName":
        return str(m(svc, "spec", "externalName") or "")
    return "<unknown>"


def _ports(ports: Any) -> str:
    out = []
    for p in ports or ():
        if not isinstance(p, Mapping):
            continue
        proto = p.get("protocol") or "TCP"
        if p.get("nodePort"):
            out.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            out.append(f"{p.get('port')}/{proto}")
    return ",".join(out) if out else NONE


def _service(svc: Obj, now: float) -> list[object]:
    ips = m(svc, "spec", "clusterIPs")
    cluster_ip = (ips[0] if isinstance(ips, list) and ips else m(svc, "spec", "clusterIP")) or NONE
    return [
        name_of(svc),
        m(svc, "spec", "type") or "ClusterIP",
        cluster_ip,
        _external_ip(svc),
        _ports(m(svc, "spec", "ports")),
        age(svc, now),
        format_labels(m(svc, "spec", "selector")),
    ]


SERVICE = Printer(
    (
        NAME,
        Column("Type", description="The type of the service."),
        Column("Cluster-IP", description="The cluster IP of the service."),
        Column("External-IP", description="External addresses of the service."),
        Column("Port(s)", description="The ports the service exposes."),
        AGE,
        Column("Selector", priority=1, description="The pods the service routes to."),
    ),
    _service,
)


def _count(obj: Obj, *fields: str) -> int:
    return sum(len(v) for f in fields if isinstance(v := obj.get(f), Mapping))


CONFIG_MAP = Printer(
    (NAME, Column("Data", "integer", description="Number of data entries."), AGE),
    lambda cm, now: [name_of(cm), _count(cm, "data", "binaryData"), age(cm, now)],
)
SECRET = Printer(
    (
        NAME,
        Column("Type", description="The type of the secret."),
        Column("Data", "integer", description="Number of data entries."),
        AGE,
    ),
    lambda s, now: [name_of(s), s.get("type") or "Opaque", _count(s, "data"), age(s, now)],
)
NAMESPACE = Printer(
    (NAME, Column("Status", description="The status of the namespace."), AGE),
    lambda ns, now: [name_of(ns), m(ns, "status", "phase") or "", age(ns, now)],
)
SERVICE_ACCOUNT = Printer(
    (NAME, Column("Secrets", "integer", description="Number of secrets."), AGE),
    lambda sa, now: [name_of(sa), len(sa.get("secrets") or ()), age(sa, now)],
)


def _node_status(node: Obj) -> str:
    out = []
    for c in m(node, "status", "conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            out.append({"True": "Ready"}.get(str(c.get("status")), "NotReady"))
            if c.get("status") not in ("True", "False"):
                out[-1] = "Unknown"
    if not out:
        out.append("Unknown")
    if m(node, "spec", "unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def _node_roles(node: Obj) -> str:
    roles = set()
    for k, v in (m(node, "metadata", "labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k.removeprefix("node-role.kubernetes.io/")
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    return ",".join(sorted(roles)) if roles else NONE


def _address(node: Obj, typ: str) -> str:
    for a in m(node, "status", "addresses") or ():
        if isinstance(a, Mapping) and a.get("type") == typ:
            return str(a.get("address") or NONE)
    return NONE


def _node(node: Obj, now: float) -> list[object]:
    info = m(node, "status", "nodeInfo") or {}
    return [
        name_of(node),
        _node_status(node),
        _node_roles(node),
        age(node, now),
        info.get("kubeletVersion") or "",
        _address(node, "InternalIP"),
        _address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


NODE = Printer(
    (
        NAME,
        Column("Status", description="The status of the node."),
        Column("Roles", description="The roles of the node."),
        AGE,
        Column("Version", description="Kubelet version."),
        Column("Internal-IP", priority=1, description="The node's internal address."),
        Column("External-IP", priority=1, description="The node's external address."),
        Column("OS-Image", priority=1, description="OS image of the node."),
        Column("Kernel-Version", priority=1, description="Kernel version of the node."),
        Column("Container-Runtime", priority=1, description="Container runtime of the node."),
    ),
    _node,
)


def _event_source(ev: Obj) -> str:
    comp = m(ev, "source", "component") or ev.get("reportingController") or ""
    host = m(ev, "source", "host") or ev.get("reportingInstance") or ""
    return f"{comp}, {host}" if host else str(comp)


def _event(ev: Obj, now: float) -> list[object]:
    first = since(ev.get("firstTimestamp"), now)
    if not ev.get("firstTimestamp"):
        first = since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now) if ev.get("lastTimestamp") else first
    count = num(ev.get("count"))
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = num(series.get("count"))
    elif count == 0:
        count = 1
    raw = ev.get("involvedObject")
    io: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
    kind = str(io.get("kind") or "").lower()
    target = f"{kind}/{io['name']}" if io.get("name") else kind
    return [
        last,
        ev.get("type") or "",
        ev.get("reason") or "",
        target,
        io.get("fieldPath") or "",
        _event_source(ev),
        str(ev.get("message") or "").strip(),
        first,
        count,
        name_of(ev),
    ]


EVENT = Printer(
    (
        Column("Last Seen", description="When the event was last seen."),
        Column("Type", description="Type of the event (Normal, Warning)."),
        Column("Reason", description="Why the event happened."),
        Column("Object", description="The object the event is about."),
        Column("Subobject", priority=1, description="The part of the object."),
        Column("Source", priority=1, description="The component reporting the event."),
        Column("Message", description="A description of the event."),
        Column("First Seen", priority=1, description="When the event was first seen."),
        Column("Count", "integer", priority=1, description="How often the event happened."),
        Column("Name", format="name", priority=1, description="The name of the event."),
    ),
    _event,
)


def _ingress(ing: Obj, now: float) -> list[object]:
    hosts = [
        str(r.get("host"))
        for r in m(ing, "spec", "rules") or ()
        if isinstance(r, Mapping) and r.get("host")
    ]
    if not hosts:
        hosts_s = "*"
    elif len(hosts) > 3:
        hosts_s = ",".join(hosts[:3]) + f" + {len(hosts) - 3} more..."
    else:
        hosts_s = ",".join(hosts)
    ports = "80, 443" if m(ing, "spec", "tls") else "80"
    return [
        name_of(ing),
        m(ing, "spec", "ingressClassName") or NONE,
        hosts_s,
        ",".join(_lb_ingress(ing)),
        ports,
        age(ing, now),
    ]


INGRESS = Printer(
    (
        NAME,
        Column("Class", description="The IngressClass of the ingress."),
        Column("Hosts", description="Hosts the rules match."),
        Column("Address", description="Addresses of the load balancer."),
        Column("Ports", description="Ports the ingress opens."),
        AGE,
    ),
    _ingress,
)


def _endpoints(ep: Obj, now: float) -> list[object]:
    out = []
    for s in ep.get("subsets") or ():
        if not isinstance(s, Mapping):
            continue
        for a in s.get("addresses") or ():
            for p in s.get("ports") or [{}]:
                port = p.get("port") if isinstance(p, Mapping) else None
                ip = a.get("ip") if isinstance(a, Mapping) else ""
                out.append(f"{ip}:{port}" if port else str(ip))
    shown = ",".join(out[:3]) + (f" + {len(out) - 3} more..." if len(out) > 3 else "")
    return [name_of(ep), shown or NONE, age(ep, now)]


ENDPOINTS = Printer((NAME, Column("Endpoints", description="The endpoints."), AGE), _endpoints)


def _pvc(pvc: Obj, now: float) -> list[object]:
    modes = m(pvc, "status", "accessModes") or []
    short = {
        "ReadWriteOnce": "RWO",
        "ReadOnlyMany": "ROX",
        "ReadWriteMany": "RWX",
        "ReadWriteOncePod": "RWOP",
    }
    capacity = m(pvc, "status", "capacity", "storage") or ""
    return [
        name_of(pvc),
        m(pvc, "status", "phase") or "",
        m(pvc, "spec", "volumeName") or "",
        capacity,
        ",".join(short.get(x, x) for x in modes),
        m(pvc, "spec", "storageClassName") or NONE,
        m(pvc, "spec", "volumeAttributesClassName") or NONE,
        age(pvc, now),
        m(pvc, "spec", "volumeMode") or "Filesystem",
    ]


PVC = Printer(
    (
        NAME,
        Column("Status", description="The phase of the claim."),
        Column("Volume", description="The bound volume."),
        Column("Capacity", description="The capacity of the bound volume."),
        Column("Access Modes", description="The access modes."),
        Column("StorageClass", description="The storage class."),
        Column("VolumeAttributesClass", description="The volume attributes class."),
        AGE,
        Column("VolumeMode", priority=1, description="The volume mode."),
    ),
    _pvc,
)


def _hpa(hpa: Obj, now: float) -> list[object]:
    ref = m(hpa, "spec", "scaleTargetRef") or {}
    reference = f"{ref.get('kind', '')}/{ref.get('name', '')}"
    return [
        name_of(hpa),
        reference,
        NONE if not m(hpa, "spec", "metrics") else "<unknown>",
        m(hpa, "spec", "minReplicas") or 1,
        num(m(hpa, "spec", "maxReplicas")),
        num(m(hpa, "status", "currentReplicas")),
        age(hpa, now),
    ]


HPA = Printer(
    (
        NAME,
        Column("Reference", description="The scaled resource."),
        Column("Targets", description="The current and target metrics."),
        Column("MinPods", "integer", description="Minimum replicas."),
        Column("MaxPods", "integer", description="Maximum replicas."),
        Column("Replicas", "integer", description="Current replicas."),
        AGE,
    ),
    _hpa,
)
