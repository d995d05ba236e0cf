"""Endpoints and EndpointSlices: the addresses of the pods a Service selects.

For every Service with a selector, an Endpoints object of the same name lists the ready pods'
addresses (not-ready ones under notReadyAddresses; terminating pods are left out), and
EndpointSlices named `<service>-<suffix>` (at most 100 endpoints each, owned by the
Service) list every pod with a ready / serving / terminating condition. Target ports given
by name are resolved against each pod's container ports. Services without a selector are
left to whoever writes their endpoints.

The objects of a new Service are created once its pods have addresses, or empty after a
grace period of 10 seconds (of `options.endpoint_batch_period` when it selects no pod at
all): this spares a write of an empty Endpoints and EndpointSlice for every Service applied
together with its workload.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.kinds import ENDPOINT_SLICE, ENDPOINTS, POD, SERVICE
from gitkrm.controllers.objects import being_deleted, labels, owner_ref, pod_phase, pod_ready, uid
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp

SERVICE_NAME = "kubernetes.io/service-name"
SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
EP_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
EP_CONTROLLER = "endpoint-controller"
MAX_PER_SLICE = 100
STARTUP_GRACE = 10.0
LABEL_INDEX = "label"
SELECTOR_INDEX = "selector"
SLICE_INDEX = "service"


def _pairs(ns: str, mapping: Mapping[str, str]) -> list[str]:
    return [f"{ns}\0{k}={v}" for k, v in mapping.items()]


def _selector(svc: Obj) -> dict[str, str]:
    sel = (svc.get("spec") or {}).get("selector")
    return dict(sel) if isinstance(sel, dict) else {}


def _label_index(obj: Obj) -> list[str]:
    return _pairs(obj["metadata"].get("namespace") or "", labels(obj))


def _selector_index(svc: Obj) -> list[str]:
    return _pairs(svc["metadata"].get("namespace") or "", _selector(svc))


def _slice_index(obj: Obj) -> list[str]:
    name = labels(obj).get(SERVICE_NAME)
    return [f"{obj['metadata'].get('namespace') or ''}/{name}"] if name else []


def _ep_state(pod: Obj) -> tuple[object, ...]:
    status = pod.get("status") or {}
    return (
        status.get("podIP"),
        pod_ready(pod),
        being_deleted(pod),
        pod_phase(pod) in ("Succeeded", "Failed"),
        (pod.get("spec") or {}).get("nodeName"),
    )


def _target_port(pod: Obj, target: object) -> int | None:
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in (c or {}).get("ports") or () if isinstance(c, dict) else ():
            if isinstance(p, dict) and p.get("name") == target:
                port = p.get("containerPort")
                return port if isinstance(port, int) else None
    return None


def _ports(svc: Obj, pod: Obj) -> tuple[tuple[str, int, str], ...]:
    out = []
    for p in (svc.get("spec") or {}).get("ports") or ():
        if not isinstance(p, dict):
            continue
        port = _target_port(pod, p.get("targetPort", p.get("port")))
        if port is not None:
            out.append((str(p.get("name") or ""), port, str(p.get("protocol") or "TCP")))
    return tuple(out)


def _target_ref(pod: Obj) -> dict[str, object]:
    md = pod["metadata"]
    return {
        "kind": "Pod",
        "namespace": md.get("namespace"),
        "name": md["name"],
        "uid": md.get("uid"),
    }


class EndpointsController(Controller):
    name = "endpoints"
    batch = 100

    def setup(self) -> None:
        self.services = self.watch(SERVICE)
        self.primary = self.services
        self.services.add_handler(self._on_service)
        self.services.add_index(SELECTOR_INDEX, _selector_index)
        self.pods = self.watch(POD)
        self.pods.add_index(LABEL_INDEX, _label_index)
        self.pods.add_handler(self._on_pod)
        self.endpoints = self.watch(ENDPOINTS)
        self.endpoints.add_handler(self._on_endpoints)
        self.slices = self.watch(ENDPOINT_SLICE)
        self.slices.add_index(SLICE_INDEX, _slice_index)
        self.slices.add_handler(self._on_slice)

    # -- events ----------------------------------------------------------------------------

    def _services_for(self, pod: Obj) -> Iterable[Key]:
        ns = pod["metadata"].get("namespace") or ""
        pl = labels(pod)
        for pair in _pairs(ns, pl):
            for svc in self.services.by_index(SELECTOR_INDEX, pair):
                if all(pl.get(k) == v for k, v in _selector(svc).items()):
                    yield (ns, svc["metadata"]["name"])

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if old is not None and new is not None:
            if _ep_state(old) == _ep_state(new) and labels(old) == labels(new):
                return
        elif new is not None and not (new.get("status") or {}).get("podIP"):
            return  # a new pod has no address yet
        for obj in (old, new):
            if obj is not None:
                for key in self._services_for(obj):
                    self.queue.add(key)

    def _on_service(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        if old is None:
            self.queue.add_after(key_of(obj), self.options.endpoint_batch_period)
        else:
            self.queue.add(key_of(obj))

    def _on_endpoints(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is not None:
            self.queue.add((obj["metadata"].get("namespace") or "", obj["metadata"]["name"]))

    def _on_slice(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        name = labels(obj).get(SERVICE_NAME) if obj is not None else None
        if obj is not None and name:
            self.queue.add((obj["metadata"].get("namespace") or "", name))

    # -- reconcile -------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> float | None:
        svc = self.services.get_key(key)
        if svc is None:
            ep = self.endpoints.get_key(key)
            if ep is not None and labels(ep).get(EP_MANAGED_BY) == EP_CONTROLLER:
                with contextlib.suppress(NotFound):
                    await self.writer.delete(ref_of(ep))
            return None
        selector = _selector(svc)
        if not selector or being_deleted(svc):
            return None
        ns = key[0]
        first = next(iter(_pairs(ns, selector)))
        selected = [
            p
            for p in self.pods.by_index(LABEL_INDEX, first)
            if all(labels(p).get(k) == v for k, v in selector.items())
            and pod_phase(p) not in ("Succeeded", "Failed")
        ]
        pods = [p for p in selected if (p.get("status") or {}).get("podIP")]
        if not pods and self.endpoints.get_key(key) is None:
            # A new Service whose pods are still to come or starting: their addresses bring
            # the first write (after a grace period an empty one is written anyway).
            age = self.clock.time() - (
                parse_timestamp(svc["metadata"].get("creationTimestamp")) or 0.0
            )
            grace = STARTUP_GRACE if selected else self.options.endpoint_batch_period
            if age < grace:
                return grace - age
        pods.sort(key=lambda p: (str((p.get("status") or {}).get("podIP")), uid(p)))
        await asyncio.gather(self._sync_endpoints(svc, pods), self._sync_slices(svc, pods))
        return None

    async def _sync_endpoints(self, svc: Obj, pods: list[Obj]) -> None:
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, object]]]] = {}
        for pod in pods:
            if being_deleted(pod) and not publish:
                continue
            ports = _ports(svc, pod)
            if not ports and (svc.get("spec") or {}).get("ports"):
                continue
            addr: dict[str, object] = {"ip": pod["status"]["podIP"]}
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                addr["nodeName"] = node
            addr["targetRef"] = _target_ref(pod)
            group = groups.setdefault(ports, {"addresses": [], "notReadyAddresses": []})
            group["addresses" if publish or pod_ready(pod) else "notReadyAddresses"].append(addr)
        subsets = []
        for ports, group in groups.items():
            subset: dict[str, object] = {k: v for k, v in group.items() if v}
            if ports:
                subset["ports"] = [
                    {**({"name": n} if n else {}), "port": p, "protocol": proto}
                    for n, p, proto in ports
                ]
            subsets.append(subset)
        md = svc["metadata"]
        want_labels = {**labels(svc), EP_MANAGED_BY: EP_CONTROLLER}
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            want_labels["service.kubernetes.io/headless"] = ""
        current = self.endpoints.get(md.get("namespace"), md["name"])
        if current is None:
            obj: Obj = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": md["name"],
                    "namespace": md.get("namespace"),
                    "labels": want_labels,
                },
            }
            if subsets:
                obj["subsets"] = subsets
            await self.writer.create(obj)
            return
        if (current.get("subsets") or []) == subsets and labels(current) == want_labels:
            return
        new = {k: v for k, v in current.items() if k != "subsets"}
        new["metadata"] = {**current["metadata"], "labels": want_labels}
        if subsets:
            new["subsets"] = subsets
        await self.writer.update(new)

    async def _sync_slices(self, svc: Obj, pods: list[Obj]) -> None:
        md = svc["metadata"]
        ns = md.get("namespace") or ""
        by_ports: dict[tuple[tuple[str, int, str], ...], list[dict[str, object]]] = {}
        for pod in pods:
            ports = _ports(svc, pod)
            if not ports and (svc.get("spec") or {}).get("ports"):
                continue
            ready = pod_ready(pod)
            ending = being_deleted(pod)
            ep: dict[str, object] = {
                "addresses": [pod["status"]["podIP"]],
                "conditions": {
                    "ready": ready and not ending,
                    "serving": ready,
                    "terminating": ending,
                },
            }
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                ep["nodeName"] = node
            ep["targetRef"] = _target_ref(pod)
            by_ports.setdefault(ports, []).append(ep)
        if not by_ports:
            by_ports[()] = []
        wanted: list[tuple[list[dict[str, object]], list[dict[str, object]]]] = []
        for ports, eps in by_ports.items():
            port_list = [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]
            for start in range(0, max(1, len(eps)), MAX_PER_SLICE):
                wanted.append((eps[start : start + MAX_PER_SLICE], port_list))
        want_labels = {**labels(svc), SERVICE_NAME: md["name"], SLICE_MANAGED_BY: SLICE_CONTROLLER}
        existing = sorted(
            (
                s
                for s in self.slices.by_index(SLICE_INDEX, f"{ns}/{md['name']}")
                if labels(s).get(SLICE_MANAGED_BY) == SLICE_CONTROLLER
            ),
            key=lambda s: str(s["metadata"]["name"]),
        )
        writes = []
        for i, (eps, port_list) in enumerate(wanted):
            if i < len(existing):
                cur = existing[i]
                if (
                    (cur.get("endpoints") or []) == eps
                    and (cur.get("ports") or []) == port_list
                    and labels(cur) == want_labels
                ):
                    continue
                new = dict(cur)
                new["metadata"] = {**cur["metadata"], "labels": want_labels}
                new["endpoints"] = eps
                new["ports"] = port_list
                writes.append(self.writer.update(new))
            else:
                writes.append(
                    self.writer.create(
                        {
                            "apiVersion": "discovery.k8s.io/v1",
                            "kind": "EndpointSlice",
                            "metadata": {
                                "generateName": f"{md['name']}-",
                                "namespace": ns,
                                "labels": want_labels,
                                "ownerReferences": [owner_ref(svc)],
                            },
                            "addressType": "IPv4",
                            "endpoints": eps,
                            "ports": port_list,
                        }
                    )
                )
        for extra in existing[len(wanted) :]:
            writes.append(self.writer.delete(ref_of(extra)))
        results = await asyncio.gather(*writes, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, NotFound):
                raise r
