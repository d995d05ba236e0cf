"""Prometheus metrics of the API server (`/metrics`): request latency by verb and
resource, open watches, object counts, and sync durations (recorded by the agent)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
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


_LE: Final = [repr(float(b)) for b in _LATENCY_BUCKETS] + ["+Inf"]  # as prometheus_client


class _Requests(Collector):
    """`apiserver_request_duration_seconds` and `apiserver_request_total`, kept as plain
    counts: recording a request is a dict lookup and two additions, where
    prometheus_client's labelled children take locks per bucket (a thirtieth of a
    create). Recorded and scraped on the event loop's thread."""

    def __init__(self) -> None:
        # (verb, group, resource, subresource) -> per-bucket counts (the last: +Inf), sum
        self.durations: dict[tuple[str, str, str, str], tuple[list[int], list[float]]] = {}
        self.counts: dict[tuple[str, str, str, int], int] = {}

    def observe(self, key: tuple[str, str, str, str], seconds: float) -> None:
        entry = self.durations.get(key)
        if entry is None:
            entry = self.durations[key] = ([0] * len(_LE), [0.0])
        entry[0][bisect_left(_LATENCY_BUCKETS, seconds)] += 1
        entry[1][0] += seconds

    def count(self, key: tuple[str, str, str, int]) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def collect(self) -> Iterator[Metric]:
        hist = HistogramMetricFamily(
            "apiserver_request_duration_seconds",
            "Response latency by verb, resource and subresource (watches excluded).",
            labels=["verb", "group", "resource", "subresource"],
        )
        for key, (buckets, total) in list(self.durations.items()):
            cumulative, acc = [], 0
            for le, n in zip(_LE, buckets, strict=True):
                acc += n
                cumulative.append((le, float(acc)))
            hist.add_metric(list(key), cumulative, total[0])
        yield hist
        counter = CounterMetricFamily(
            "apiserver_request",
            "Requests by verb, resource and HTTP code.",
            labels=["verb", "group", "resource", "code"],
        )
        for (verb, group, resource, code), n in list(self.counts.items()):
            counter.add_metric([verb, group, resource, str(code)], n)
        yield counter


class Metrics:
    """One registry per server (tests run several servers in one process)."""

    def __init__(self, object_counts: Callable[[], dict[str, int]] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = _Requests()
        self.registry.register(self._requests)
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
            self._requests.observe((verb, group, resource, subresource), seconds)
        self._requests.count((verb, group, resource, code))

    def render(self) -> bytes:
        return generate_latest(self.registry)
