"""Request metrics: plain counts rendered in Prometheus' text format at scrape time."""

from __future__ import annotations

import re

from gitkrm.server.metrics import Metrics


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(apiserver_\S+) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def test_durations_and_counts() -> None:
    m = Metrics()
    for seconds in (0.0001, 0.0005, 0.002, 0.3, 20.0):
        m.observe(
            verb="POST",
            group="apps",
            resource="deployments",
            subresource="",
            code=201,
            seconds=seconds,
        )
    m.observe(verb="GET", group="", resource="pods", subresource="", code=404, seconds=0.001)
    m.observe(verb="WATCH", group="", resource="pods", subresource="", code=200, seconds=9.0)
    s = _samples(m.render().decode())
    post = 'group="apps",resource="deployments",subresource="",verb="POST"'
    bucket = (
        'apiserver_request_duration_seconds_bucket{group="apps",le="{le}",resource='
        '"deployments",subresource="",verb="POST"}'
    )
    assert s[bucket.replace("{le}", "0.0005")] == 2  # a value on a bound is in its bucket
    assert s[bucket.replace("{le}", "0.0025")] == 3
    assert s[bucket.replace("{le}", "0.5")] == 4
    assert s[bucket.replace("{le}", "10.0")] == 4
    assert s[bucket.replace("{le}", "+Inf")] == 5
    assert s["apiserver_request_duration_seconds_count{" + post + "}"] == 5
    assert abs(s["apiserver_request_duration_seconds_sum{" + post + "}"] - 20.3026) < 1e-9
    assert (
        s['apiserver_request_total{code="201",group="apps",resource="deployments",verb="POST"}']
        == 5
    )
    assert s['apiserver_request_total{code="404",group="",resource="pods",verb="GET"}'] == 1
    assert s['apiserver_request_total{code="200",group="",resource="pods",verb="WATCH"}'] == 1
    assert not any("WATCH" in k for k in s if k.startswith("apiserver_request_duration"))


def test_each_server_counts_its_own() -> None:
    a, b = Metrics(), Metrics()
    a.observe(verb="GET", group="", resource="pods", subresource="", code=200, seconds=0.01)
    assert "apiserver_request_total{" in a.render().decode()
    assert "apiserver_request_total{" not in b.render().decode()
