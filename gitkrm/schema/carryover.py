"""Values the API server keeps from the stored object when an update leaves them out.

A Service's allocated clusterIP(s), node ports, health-check node port and IP families
are assigned by the server; `kubectl apply` and Git manifests never carry them, so an
update without them keeps the stored ones (the service REST storage's
patchAllocatedValues), instead of failing the immutability check. A
CertificateSigningRequest's spec is kept whole: requests are immutable after creation (its
registry strategy's PrepareForUpdate), and an update that changes it changes nothing there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

from gitkrm.krm.types import Obj

Carry = Callable[[Obj, Obj], None]


def _needs_cluster_ip(spec: Mapping[str, object]) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _needs_node_port(spec: Mapping[str, object]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _service(new: Obj, old: Obj) -> None:
    spec, old_spec = new.get("spec"), old.get("spec")
    if not isinstance(spec, dict) or not isinstance(old_spec, dict):
        return
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
        if not spec.get("ipFamilies") and old_spec.get("ipFamilies"):
            spec["ipFamilies"] = list(old_spec["ipFamilies"])
        if not spec.get("ipFamilyPolicy") and old_spec.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
    if _needs_node_port(old_spec) and _needs_node_port(spec):
        _node_ports(spec, old_spec)
        if not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def _ports(spec: Mapping[str, object]) -> list[dict[str, object]]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _node_ports(spec: Mapping[str, object], old_spec: Mapping[str, object]) -> None:
    old_ports, new_ports = _ports(old_spec), _ports(spec)
    used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
    by_name = {p.get("name", ""): p.get("nodePort") for p in old_ports}
    for port in new_ports:
        if not port.get("nodePort"):
            previous = by_name.get(port.get("name", ""))
            if previous and previous not in used:
                port["nodePort"] = previous


def _csr(new: Obj, old: Obj) -> None:
    if isinstance(old.get("spec"), dict):
        new["spec"] = copy.deepcopy(old["spec"])


CARRY: dict[tuple[str, str], Carry] = {
    ("", "Service"): _service,
    ("certificates.k8s.io", "CertificateSigningRequest"): _csr,
}


def carry_over(new: Obj, old: Obj, *, group: str, kind: str) -> None:
    """Fill in `new` what the server keeps from `old` when an update omits it."""
    carry = CARRY.get((group, kind))
    if carry is not None:
        carry(new, old)
