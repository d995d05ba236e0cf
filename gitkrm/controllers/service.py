"""The Service controller: what the API server allocates and a cloud provider assigns.

Services get a cluster IP from `options.service_cidr` (kept when set; none for headless and
ExternalName services), NodePort and LoadBalancer services get node ports from
`options.node_port_range`, and LoadBalancer services get an ingress IP from
`options.load_balancer_pool` in status.loadBalancer.
"""

from __future__ import annotations

from typing import Any

from gitkrm.cache.informer import Key
from gitkrm.controllers.ipam import Pool, ip_pool, ip_text, ip_value
from gitkrm.controllers.kinds import SERVICE
from gitkrm.controllers.objects import being_deleted, with_status
from gitkrm.controllers.runtime import Controller
from gitkrm.krm import Obj


def _cluster_ips(svc: Obj) -> list[str]:
    spec = svc.get("spec") or {}
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips:
        return [str(i) for i in ips]
    ip = spec.get("clusterIP")
    return [str(ip)] if ip else []


def _node_ports(svc: Obj) -> list[int]:
    return [
        int(p["nodePort"])
        for p in (svc.get("spec") or {}).get("ports") or ()
        if isinstance(p, dict) and isinstance(p.get("nodePort"), int)
    ]


def _ingress_ips(svc: Obj) -> list[str]:
    lb = (svc.get("status") or {}).get("loadBalancer") or {}
    return [str(i["ip"]) for i in lb.get("ingress") or () if isinstance(i, dict) and i.get("ip")]


class ServiceController(Controller):
    name = "service"
    batch = 100

    def setup(self) -> None:
        self.services = self.watch(SERVICE, primary=True)
        opts = self.options
        # The first addresses of the range are kept for the `kubernetes` and DNS services.
        self.cluster_ips = ip_pool(opts.service_cidr, name="service cluster IP range", skip=9)
        self.lb_ips = ip_pool(opts.load_balancer_pool, name="load-balancer IP pool")
        low, high = opts.node_port_range
        self.node_ports = Pool(low, high, name="node port range")
        self.services.add_listener(self._track)

    def _track(self, old: Obj | None, new: Obj | None) -> None:
        for obj, fn in ((old, "release"), (new, "use")):
            if obj is None:
                continue
            for ip in _cluster_ips(obj):
                v = ip_value(ip)
                if v is not None:
                    getattr(self.cluster_ips, fn)(v)
            for port in _node_ports(obj):
                getattr(self.node_ports, fn)(port)
            for ip in _ingress_ips(obj):
                v = ip_value(ip)
                if v is not None:
                    getattr(self.lb_ips, fn)(v)

    async def reconcile(self, key: Key) -> float | None:
        svc = self.services.get_key(key)
        if svc is None or being_deleted(svc):
            return None
        spec = svc.get("spec") or {}
        kind = spec.get("type") or "ClusterIP"
        new_spec = self._allocate(spec, kind)
        if new_spec is not None:
            svc = await self.writer.update({**svc, "spec": new_spec})
        await self._load_balancer(svc, kind)
        return None

    def _allocate(self, spec: dict[str, Any], kind: str) -> dict[str, Any] | None:
        """The spec with what the API server would have allocated, or None if complete."""
        out: dict[str, Any] | None = None
        if kind != "ExternalName" and not spec.get("clusterIP"):
            ip = ip_text(self.cluster_ips.allocate())
            out = dict(spec)
            out["clusterIP"] = ip
            out["clusterIPs"] = [ip]
        wants_ports = kind == "NodePort" or (
            kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True)
        )
        if wants_ports:
            ports = []
            changed = False
            for p in spec.get("ports") or ():
                if isinstance(p, dict) and not p.get("nodePort"):
                    p = {**p, "nodePort": self.node_ports.allocate()}
                    changed = True
                ports.append(p)
            if changed:
                out = dict(out or spec)
                out["ports"] = ports
        return out

    async def _load_balancer(self, svc: Obj, kind: str) -> None:
        status = svc.get("status") or {}
        have = _ingress_ips(svc)
        if kind == "LoadBalancer":
            if have:
                return
            ip = ip_text(self.lb_ips.allocate())
            new = dict(status)
            new["loadBalancer"] = {"ingress": [{"ip": ip, "ipMode": "VIP"}]}
        elif have:
            new = dict(status)
            new["loadBalancer"] = {}
        else:
            return
        await self.writer.update_status(with_status(svc, new))
