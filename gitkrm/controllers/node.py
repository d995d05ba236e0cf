"""The node simulator's nodes (kwok-style): Node objects and their heartbeat Leases.

Nodes come from Git or, when the store has none at start, a default set
(`options.node_count`). Every Node gets a kubelet-like status (capacity, allocatable,
conditions, addresses, node info) and a Lease in kube-node-lease renewed every
`options.lease_interval` seconds. A Node annotated `gitkrm.io/simulate: not-ready` reports
Ready=False. When a Node goes away, the pods bound to it are deleted (as the pod garbage
collector does), so their controllers replace them elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
from collections.abc import Mapping

from gitkrm.cache.informer import Key
from gitkrm.controllers.kinds import CAPACITY, LEASE, NODE, POD, SIMULATE
from gitkrm.controllers.objects import (
    NODE_INDEX,
    annotations_of,
    node_index,
    owner_ref,
    with_status,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import AlreadyExists, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp, stamp, stamp_micro
from gitkrm.krm.types import Condition
from gitkrm.store.protocol import Preconditions

LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.33.0"
ORPHAN_POD = "\0pod"  # queue keys (ORPHAN_POD, "ns/name"): a pod whose node is gone


def parse_capacity(text: str) -> dict[str, str]:
    """`cpu=4,memory=16Gi,pods=110` as a ResourceList (malformed entries are skipped)."""
    out = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        if sep and name.strip() and value.strip():
            out[name.strip()] = value.strip()
    return out


def default_node(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "gitkrm-simulated",
                "gitkrm.io/simulated": "true",
            },
        },
        "spec": {},
    }


def _conditions(ready: bool, old: list[object], stamp: str) -> list[Condition]:
    wanted = [
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        (
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status")
            if ready
            else (
                "Ready",
                "False",
                "KubeletNotReady",
                "node is marked gitkrm.io/simulate: not-ready",
            )
        ),
    ]
    before = {c.get("type"): c for c in old if isinstance(c, dict)}
    out: list[Condition] = []
    for kind, status, reason, message in wanted:
        prev = before.get(kind)
        same = prev is not None and prev.get("status") == status
        out.append(
            {
                "type": kind,
                "status": status,
                "lastHeartbeatTime": prev.get("lastHeartbeatTime", stamp)
                if same and prev
                else stamp,
                "lastTransitionTime": prev.get("lastTransitionTime", stamp)
                if same and prev
                else stamp,
                "reason": reason,
                "message": message,
            }
        )
    return out


def _comparable(status: Mapping[str, object]) -> dict[str, object]:
    """A node status without its times (what decides whether to write)."""
    out = dict(status)
    conditions = status.get("conditions")
    out["conditions"] = [
        {k: v for k, v in c.items() if k not in ("lastHeartbeatTime", "lastTransitionTime")}
        for c in (conditions if isinstance(conditions, list) else ())
        if isinstance(c, dict)
    ]
    return out


class NodeController(Controller):
    """Keeps every Node's status and Lease as a running kubelet would."""

    name = "node"
    workers = 2

    def setup(self) -> None:
        self.nodes = self.watch(NODE, primary=True)
        self.leases = self.watch(LEASE)
        self.pods = self.watch(POD)
        self.pods.add_index(NODE_INDEX, node_index)
        self.nodes.add_handler(self._on_node)
        base = ipaddress.ip_address(self.options.node_ip_base)
        self._ip_base = int(base)
        self._assigned: dict[str, str] = {}  # node name -> InternalIP handed out

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if new is None and old is not None:
            # The pods of a node that is gone: the pod GC deletes them.
            name = old["metadata"]["name"]
            for pod in self.pods.by_index(NODE_INDEX, name):
                md = pod["metadata"]
                self.enqueue((ORPHAN_POD, f"{md['namespace']}/{md['name']}"))

    async def started(self) -> None:
        if len(self.nodes) == 0:
            for i in range(self.options.node_count):
                with contextlib.suppress(AlreadyExists):
                    await self.writer.create(default_node(f"{self.options.node_name_prefix}{i}"))

    async def reconcile(self, key: Key) -> float | None:
        if key[0] == ORPHAN_POD:
            await self._delete_orphan(key[1])
            return None
        node = self.nodes.get(None, key[1])
        if node is None:
            await self._drop_lease(key[1])
            return None
        await self._sync_status(node)
        return await self._renew_lease(node)

    async def _delete_orphan(self, ref: str) -> None:
        ns, _, name = ref.partition("/")
        pod = self.pods.get(ns, name)
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or self.nodes.get(None, node_name) is not None:
            return
        with contextlib.suppress(NotFound):
            await self.writer.delete(
                ref_of(pod), preconditions=Preconditions(uid=pod["metadata"].get("uid"))
            )

    def _node_ip(self, node: Obj) -> str:
        name = node["metadata"]["name"]
        for a in (node.get("status") or {}).get("addresses") or ():
            if isinstance(a, dict) and a.get("type") == "InternalIP" and a.get("address"):
                return str(a["address"])
        if name in self._assigned:
            return self._assigned[name]
        used = set(self._assigned.values())
        for other in self.nodes.items():
            for a in (other.get("status") or {}).get("addresses") or ():
                if isinstance(a, dict) and a.get("type") == "InternalIP":
                    used.add(str(a.get("address")))
        i = 0
        while str(ipaddress.ip_address(self._ip_base + i)) in used:
            i += 1
        ip = self._assigned[name] = str(ipaddress.ip_address(self._ip_base + i))
        return ip

    async def _sync_status(self, node: Obj) -> None:
        md = node["metadata"]
        name = md["name"]
        capacity = dict(self.options.node_capacity)
        declared = annotations_of(node).get(CAPACITY)
        if isinstance(declared, str):
            capacity.update(parse_capacity(declared))
        ready = annotations_of(node).get(SIMULATE) != "not-ready"
        old = node.get("status") or {}
        now_stamp = stamp(self.clock)
        seed = hashlib.sha256(f"{md.get('uid')}".encode()).hexdigest()
        node_uuid = f"{seed[:8]}-{seed[8:12]}-{seed[12:16]}-{seed[16:20]}-{seed[20:32]}"
        status: dict[str, object] = dict(old)
        status.update(
            {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": _conditions(ready, list(old.get("conditions") or ()), now_stamp),
                "addresses": [
                    {"type": "InternalIP", "address": self._node_ip(node)},
                    {"type": "Hostname", "address": name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": (md.get("labels") or {}).get("kubernetes.io/arch", "amd64"),
                    "bootID": node_uuid,
                    "containerRuntimeVersion": "gitkrm://simulated",
                    "kernelVersion": "simulated",
                    "kubeProxyVersion": KUBELET_VERSION,
                    "kubeletVersion": KUBELET_VERSION,
                    "machineID": seed[32:64],
                    "operatingSystem": "linux",
                    "osImage": "gitkrm simulated node",
                    "systemUUID": node_uuid,
                },
            }
        )
        if _comparable(status) != _comparable(old):
            await self.writer.update_status(with_status(node, status))

    async def _renew_lease(self, node: Obj) -> float:
        name = node["metadata"]["name"]
        interval = self.options.lease_interval
        lease = self.leases.get(LEASE_NAMESPACE, name)
        if lease is None:
            try:
                await self.writer.create(
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {
                            "name": name,
                            "namespace": LEASE_NAMESPACE,
                            "ownerReferences": [owner_ref(node, controller=False, block=False)],
                        },
                        "spec": {
                            "holderIdentity": name,
                            "leaseDurationSeconds": self.options.lease_duration_seconds,
                            "renewTime": stamp_micro(self.clock),
                        },
                    }
                )
            except AlreadyExists:
                return 0.05  # the cache is behind: pick it up from the watch
            return interval
        renewed = parse_timestamp((lease.get("spec") or {}).get("renewTime"))
        due = (renewed or 0.0) + interval - self.clock.time()
        if due > 0.05 * interval:
            return due
        spec = dict(lease.get("spec") or {})
        spec["renewTime"] = stamp_micro(self.clock)
        spec["holderIdentity"] = name
        spec["leaseDurationSeconds"] = self.options.lease_duration_seconds
        await self.writer.update({**lease, "spec": spec})
        return interval

    async def _drop_lease(self, name: str) -> None:
        lease = self.leases.get(LEASE_NAMESPACE, name)
        if lease is not None:
            with contextlib.suppress(NotFound):
                await self.writer.delete(ref_of(lease))
