"""Prometheus metrics of the API server (`/metrics`): request latency by verb and
resource, open watches, object counts, and sync durations (recorded by the agent)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class _ObjectCounts(Collector):
    """`gitkrm_objects{group,kind}`, read from the store at scrape time."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        fam = GaugeMetricFamily(
            "gitkrm_objects", "Objects in the store by group and kind.", labels=["group", "kind"]
        )
        for gk, n in sorted(self._counts().items()):
            group, _, kind = gk.partition("/")
            fam.add_metric([group, kind], n)
        yield fam


class Metrics:
    """One registry per server (tests run several servers in one process)."""

    def __init__(self, object_counts: Callable[[], dict[str, int]] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency by verb, resource and subresource (watches excluded).",
            ["verb", "group", "resource", "subresource"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "apiserver_request",
            "Requests by verb, resource and HTTP code.",
            ["verb", "group", "resource", "code"],
            registry=self.registry,
        )
        self.open_watches = Gauge(
            "gitkrm_open_watches", "Watch streams being served.", registry=self.registry
        )
        self.sync_duration = Histogram(
            "gitkrm_sync_duration_seconds",
            "Duration of syncs of a source, by source and result.",
            ["source", "result"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        if object_counts is not None:
            self.registry.register(_ObjectCounts(object_counts))
        # Labelled children, looked up once: `.labels()` takes a lock and checks its
        # arguments on every call (a thirtieth of a create). Label sets are few (verbs x
        # resources x codes), as in kube-apiserver's own metrics.
        self._durations: dict[tuple[str, str, str, str], Histogram] = {}
        self._counts: dict[tuple[str, str, str, int], Counter] = {}

    def observe(
        self,
        *,
        verb: str,
        group: str,
        resource: str,
        subresource: str,
        code: int,
        seconds: float,
    ) -> None:
        if verb != "WATCH":
            key = (verb, group, resource, subresource)
            duration = self._durations.get(key)
            if duration is None:
                duration = self._durations[key] = self.request_duration.labels(*key)
            duration.observe(seconds)
        ckey = (verb, group, resource, code)
        count = self._counts.get(ckey)
        if count is None:
            count = self._counts[ckey] = self.requests.labels(verb, group, resource, str(code))
        count.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
