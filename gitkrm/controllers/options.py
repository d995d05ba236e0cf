"""ControllerOptions: the knobs of the bundled controllers and the node simulator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Generous defaults: the embedded target is a simulator that should run what a manifest
# repository declares (W10k's 15,000 pods fit on three nodes); declare Node objects in Git
# (with the gitkrm.io/capacity annotation) to model real capacity.
DEFAULT_NODE_CAPACITY: Mapping[str, str] = {
    "cpu": "1000",
    "memory": "4Ti",
    "pods": "10000",
    "ephemeral-storage": "10Ti",
}


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    """Timings are in seconds. Tests set the delays near zero."""

    node_count: int = 3
    node_capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NODE_CAPACITY))
    node_name_prefix: str = "gitkrm-node-"
    pod_start_delay: float = 0.5  # bound -> Running and Ready
    pod_run_duration: float = 1.0  # restartPolicy Never/OnFailure pods run this long
    crashloop_backoff: float = 10.0  # first restart delay of a crash-looping container
    crashloop_backoff_max: float = 300.0
    failure_backoff: float = 10.0  # Job / ReplicaSet delay before replacing a failed pod
    failure_backoff_max: float = 360.0
    lease_interval: float = 10.0  # node heartbeat Lease renewal
    lease_duration_seconds: int = 40
    service_cidr: str = "10.96.0.0/12"
    pod_cidr: str = "10.244.0.0/14"
    node_ip_base: str = "172.18.0.2"
    load_balancer_pool: str = "172.18.255.200-172.18.255.250"
    endpoint_batch_period: float = 1.0  # a Service selecting no pod gets endpoints after this
    node_port_range: tuple[int, int] = (30000, 32767)
    default_storage_class: str = "standard"
    resync_period: float = 1800.0
    # Events (controllers/events.py): kept this long after they were last seen (the API
    # server's --event-ttl; 0: never), at most this many in the store; `record_events=False`
    # records none.
    event_ttl: float = 3600.0
    event_limit: int = 50_000
    record_events: bool = True
    # The PEM the `kube-root-ca.crt` ConfigMaps publish: the API's TLS certificate when it
    # serves TLS (None: a fixed self-made one).
    root_ca_pem: str | None = None
    workers: int = 4
    # Names of the controllers to run (None: all of them); see ControllerManager.
    enabled: frozenset[str] | None = None
