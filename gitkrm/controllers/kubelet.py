"""The node simulator's kubelet: pods bound to a simulated node start after a short delay.

A bound pod turns Running and Ready, with container statuses, `options.pod_start_delay`
seconds after the simulator first sees it bound. Pods whose restartPolicy is Never or
OnFailure run `options.pod_run_duration` seconds, then Succeed. The annotation
`gitkrm.io/simulate` (set on a pod template, it reaches the pods) makes pods misbehave:

- `crashloop`: the containers exit with code 1 and are restarted with kubelet's backoff
  (CrashLoopBackOff, restartCount growing; with restartPolicy Never the pod Fails);
- `fail`: the pod Fails (exit code 1);
- `pending`: the pod is never scheduled (see scheduler.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Mapping

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.ipam import ip_pool, ip_text, ip_value
from gitkrm.controllers.kinds import NODE, POD, SIMULATE
from gitkrm.controllers.objects import (
    NODE_INDEX,
    annotations_of,
    being_deleted,
    node_index,
    pod_phase,
    uid,
    with_status,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp
from gitkrm.krm.types import Condition
from gitkrm.store.protocol import Preconditions

# A pod bound to a node that does not exist is deleted after this long (pod GC quarantine).
ORPHAN_QUARANTINE = 40.0


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def image_ref(image: str) -> str:
    """The fully qualified image name a container runtime reports."""
    name = image
    if "@" not in name and ":" not in name.rpartition("/")[2]:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        return "docker.io/library/" + name
    if "." not in first and ":" not in first and first != "localhost":
        return "docker.io/" + name
    return name


def crash_backoff(restarts: int, *, base: float, most: float) -> float:
    """The kubelet's delay before restarting a container that crashed `restarts` times:
    doubled from `base` at each restart, at most `most` (the exponent is capped, or a
    thousand restarts would overflow a float)."""
    return min(most, base * 2.0 ** min(max(0, restarts - 1), 64))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _condition(kind: str, status: str, when: str, reason: str = "", message: str = "") -> Condition:
    c: Condition = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": when,
    }
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


class KubeletSimulator(Controller):
    name = "kubelet"
    component = "kubelet"
    batch = 200  # pods started together share one commit

    def setup(self) -> None:
        self.pods = self.watch(POD)
        self.pods.add_index(NODE_INDEX, node_index)
        self.nodes = self.watch(NODE)
        self.pods.add_handler(self._on_pod)
        self.pods.add_listener(self._track_ip)
        self.nodes.add_handler(self._on_node)
        self._ips = ip_pool(self.options.pod_cidr, name="pod network")
        self._bound_at: dict[str, float] = {}  # pod uid -> when first seen bound
        self._orphaned: dict[str, float] = {}

    # -- events ----------------------------------------------------------------------------

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is not None:
                self._bound_at.pop(uid(old), None)
                self._orphaned.pop(uid(old), None)
            return
        if self._needs_work(new):
            self.queue.add(key_of(new))

    def _needs_work(self, pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        if not spec.get("nodeName") or being_deleted(pod):
            return False
        phase = pod_phase(pod)
        if phase in ("Succeeded", "Failed"):
            return False
        if phase != "Running" or not (pod.get("status") or {}).get("containerStatuses"):
            return True
        return annotations_of(pod).get(SIMULATE) == "crashloop" or spec.get("restartPolicy") in (
            "Never",
            "OnFailure",
        )

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and old is None:
            for pod in self.pods.by_index(NODE_INDEX, new["metadata"]["name"]):
                if self._needs_work(pod):
                    self.queue.add(key_of(pod))

    def _track_ip(self, old: Obj | None, new: Obj | None) -> None:
        a = (old.get("status") or {}).get("podIP") if old is not None else None
        b = (new.get("status") or {}).get("podIP") if new is not None else None
        if a == b:
            return
        for ip, fn in ((a, self._ips.release), (b, self._ips.use)):
            v = ip_value(ip) if ip else None
            if v is not None:
                fn(v)

    def _allocate_ip(self) -> str:
        return ip_text(self._ips.allocate())

    # -- reconcile -------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> float | None:
        pod = self.pods.get_key(key)
        if pod is None or not self._needs_work(pod):
            return None
        node_name = pod["spec"]["nodeName"]
        node = self.nodes.get(None, node_name)
        now = self.clock.time()
        if node is None:
            first = self._orphaned.setdefault(uid(pod), now)
            if now - first < ORPHAN_QUARANTINE:
                return first + ORPHAN_QUARANTINE - now
            with contextlib.suppress(NotFound):
                await self.writer.delete(ref_of(pod), preconditions=Preconditions(uid=uid(pod)))
            return None
        self._orphaned.pop(uid(pod), None)
        status = pod.get("status") or {}
        mode = annotations_of(pod).get(SIMULATE)
        if mode == "pending":
            return None
        restart = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        if pod_phase(pod) != "Running" or not status.get("containerStatuses"):
            started = parse_timestamp(status.get("startTime"))
            bound = self._bound_at.setdefault(uid(pod), now)
            wait = bound + self.options.pod_start_delay - now
            if started is None and wait > 0:
                return wait
            return await self._start(pod, node, mode, restart, now)
        if mode == "crashloop":
            return await self._crash_again(pod, now)
        if restart in ("Never", "OnFailure"):
            started = parse_timestamp(status.get("startTime")) or now
            wait = started + self.options.pod_run_duration - now
            if wait > 0:
                return wait
            await self._finish(pod, now, succeeded=True)
        return None

    def _node_ip(self, node: Obj) -> str:
        for a in (node.get("status") or {}).get("addresses") or ():
            if isinstance(a, dict) and a.get("type") == "InternalIP":
                return str(a.get("address") or "")
        return ""

    def _base_status(self, pod: Obj, node: Obj, now: float) -> dict[str, object]:
        status = dict(pod.get("status") or {})
        host_ip = self._node_ip(node)
        if (pod.get("spec") or {}).get("hostNetwork"):
            ip = host_ip
        else:
            ip = status.get("podIP") or self._allocate_ip()
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}] if host_ip else []
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
        status.setdefault("startTime", _stamp(now))
        return status

    def _containers(self, pod: Obj) -> list[dict[str, object]]:
        return [c for c in (pod.get("spec") or {}).get("containers") or () if isinstance(c, dict)]

    def _container_status(
        self,
        pod: Obj,
        c: dict[str, object],
        *,
        state: Mapping[str, object],
        ready: bool,
        restarts: int = 0,
        last: Mapping[str, object] | None = None,
    ) -> dict[str, object]:
        image = str(c.get("image") or "")
        ref = image_ref(image)
        cs: dict[str, object] = {
            "name": c.get("name"),
            "state": state,
            "lastState": last or {},
            "ready": ready,
            "restartCount": restarts,
            "image": ref,
            "imageID": ref.split("@")[0].rpartition(":")[0] + "@sha256:" + _digest(ref),
            "started": "running" in state,
        }
        if "waiting" not in state:
            cs["containerID"] = "containerd://" + _digest(f"{uid(pod)}/{c.get('name')}/{restarts}")
        return cs

    def _init_statuses(self, pod: Obj, when: str) -> list[dict[str, object]]:
        out = []
        for c in (pod.get("spec") or {}).get("initContainers") or ():
            if not isinstance(c, dict):
                continue
            state: Mapping[str, object]
            if c.get("restartPolicy") == "Always":
                state = {"running": {"startedAt": when}}
                out.append(self._container_status(pod, c, state=state, ready=True))
            else:
                state = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": when,
                        "finishedAt": when,
                    }
                }
                out.append(self._container_status(pod, c, state=state, ready=False))
        return out

    async def _start(
        self, pod: Obj, node: Obj, mode: str | None, restart: str, now: float
    ) -> float | None:
        when = _stamp(now)
        status = self._base_status(pod, node, now)
        containers = self._containers(pod)
        names = ", ".join(str(c.get("name")) for c in containers)
        inits = self._init_statuses(pod, when)
        if inits:
            status["initContainerStatuses"] = inits
        scheduled = _condition("PodScheduled", "True", when)
        if mode == "fail" or (mode == "crashloop" and restart == "Never"):
            term = {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": when,
                    "finishedAt": when,
                }
            }
            status["phase"] = "Failed"
            status["containerStatuses"] = [
                self._container_status(pod, c, state=term, ready=False) for c in containers
            ]
            status["conditions"] = [
                _condition("PodReadyToStartContainers", "False", when),
                _condition("Initialized", "True", when),
                _condition("Ready", "False", when, "PodFailed"),
                _condition("ContainersReady", "False", when, "PodFailed"),
                scheduled,
            ]
            await self.writer.update_status(with_status(pod, status))
            return None
        status["phase"] = "Running"
        if mode == "crashloop":
            status["containerStatuses"] = [self._crashing(pod, c, 1, when) for c in containers]
            msg = f"containers with unready status: [{names}]"
            status["conditions"] = [
                _condition("PodReadyToStartContainers", "True", when),
                _condition("Initialized", "True", when),
                _condition("Ready", "False", when, "ContainersNotReady", msg),
                _condition("ContainersReady", "False", when, "ContainersNotReady", msg),
                scheduled,
            ]
            await self.writer.update_status(with_status(pod, status))
            return self._backoff(1)
        running = {"running": {"startedAt": when}}
        status["containerStatuses"] = [
            self._container_status(pod, c, state=running, ready=True) for c in containers
        ]
        status["conditions"] = [
            _condition("PodReadyToStartContainers", "True", when),
            _condition("Initialized", "True", when),
            _condition("Ready", "True", when),
            _condition("ContainersReady", "True", when),
            scheduled,
        ]
        await self.writer.update_status(with_status(pod, status))
        if restart in ("Never", "OnFailure"):
            return self.options.pod_run_duration
        return None

    def _backoff(self, restarts: int) -> float:
        return crash_backoff(
            restarts, base=self.options.crashloop_backoff, most=self.options.crashloop_backoff_max
        )

    def _crashing(
        self, pod: Obj, c: dict[str, object], restarts: int, when: str
    ) -> dict[str, object]:
        delay = self._backoff(restarts)
        name = c.get("name")
        md = pod["metadata"]
        waiting = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {delay:g}s restarting failed container={name} "
                f"pod={md['name']}_{md.get('namespace')}({md.get('uid')})",
            }
        }
        last = {
            "terminated": {"exitCode": 1, "reason": "Error", "startedAt": when, "finishedAt": when}
        }
        return self._container_status(
            pod, c, state=waiting, ready=False, restarts=restarts, last=last
        )

    async def _crash_again(self, pod: Obj, now: float) -> float | None:
        """One more restart once the backoff of the last crash has passed."""
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarts = max(
            (int(cs.get("restartCount") or 0) for cs in statuses if isinstance(cs, dict)), default=0
        )
        last = 0.0
        for cs in statuses:
            if isinstance(cs, dict):
                t = parse_timestamp(
                    ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
                )
                last = max(last, t or 0.0)
        wait = last + self._backoff(restarts) - now
        if wait > 0:
            return wait
        when = _stamp(now)
        status = dict(pod.get("status") or {})
        status["containerStatuses"] = [
            self._crashing(pod, c, restarts + 1, when) for c in self._containers(pod)
        ]
        md = pod["metadata"]
        for c in self._containers(pod):
            self.events.warning(
                pod, "BackOff",
                f"Back-off restarting failed container {c.get('name')} in pod "
                f"{md['name']}_{md.get('namespace')}({md.get('uid')})",
                field_path=f"spec.containers{{{c.get('name')}}}",
                host=str((pod.get("spec") or {}).get("nodeName") or ""),
            )  # fmt: skip
        await self.writer.update_status(with_status(pod, status))
        return self._backoff(restarts + 1)

    async def _finish(self, pod: Obj, now: float, *, succeeded: bool) -> None:
        when = _stamp(now)
        status = dict(pod.get("status") or {})
        code, reason = (0, "Completed") if succeeded else (1, "Error")
        out = []
        for c in self._containers(pod):
            started = when
            for cs in status.get("containerStatuses") or ():
                if isinstance(cs, dict) and cs.get("name") == c.get("name"):
                    started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", when)
            term = {
                "terminated": {
                    "exitCode": code,
                    "reason": reason,
                    "startedAt": started,
                    "finishedAt": when,
                }
            }
            out.append(self._container_status(pod, c, state=term, ready=False))
        status["containerStatuses"] = out
        status["phase"] = "Succeeded" if succeeded else "Failed"
        why = "PodCompleted" if succeeded else "PodFailed"
        conds = []
        for cond in status.get("conditions") or ():
            if isinstance(cond, dict) and cond.get("type") in (
                "Ready",
                "ContainersReady",
                "PodReadyToStartContainers",
            ):
                conds.append(
                    _condition(
                        str(cond["type"]),
                        "False",
                        when,
                        why if cond["type"] != "PodReadyToStartContainers" else "",
                    )
                )
            else:
                conds.append(cond)
        status["conditions"] = conds
        await self.writer.update_status(with_status(pod, status))
