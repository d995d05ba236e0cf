"""Address pools: service cluster IPs, load-balancer IPs and node ports.

A pool hands out the lowest free address after a cursor and learns what is in use from the
objects the informers report, so addresses survive restarts without being stored twice.
"""

from __future__ import annotations

import ipaddress

from gitkrm.errors import BadRequest, ServiceUnavailable


class Pool:
    """A range of integers (addresses as numbers, or ports) with reservations."""

    def __init__(self, first: int, last: int, *, name: str) -> None:
        if last < first:
            raise BadRequest(f"{name}: empty range")
        self.first = first
        self.size = last - first + 1
        self.name = name
        self._used: dict[int, int] = {}  # value -> objects reported using it
        self._reserved: set[int] = set()  # handed out, not reported yet
        self._cursor = 0

    def use(self, value: int) -> None:
        self._reserved.discard(value)
        self._used[value] = self._used.get(value, 0) + 1

    def release(self, value: int) -> None:
        n = self._used.get(value, 0) - 1
        if n > 0:
            self._used[value] = n
        else:
            self._used.pop(value, None)

    def in_use(self, value: int) -> bool:
        return value in self._used or value in self._reserved

    def allocate(self) -> int:
        for _ in range(self.size):
            value = self.first + self._cursor
            self._cursor = (self._cursor + 1) % self.size
            if value not in self._used and value not in self._reserved:
                self._reserved.add(value)
                return value
        raise ServiceUnavailable(f"{self.name} is exhausted")


def ip_pool(spec: str, *, name: str, skip: int = 0) -> Pool:
    """A pool from a CIDR (network and broadcast addresses excluded, then `skip` more) or
    from `first-last`."""
    if "-" in spec:
        a, _, b = spec.partition("-")
        first, last = int(ipaddress.ip_address(a.strip())), int(ipaddress.ip_address(b.strip()))
        return Pool(first, last, name=name)
    net = ipaddress.ip_network(spec, strict=False)
    first = int(net.network_address) + 1 + skip
    last = int(net.broadcast_address) - 1
    return Pool(first, last, name=name)


def ip_text(value: int) -> str:
    return str(ipaddress.ip_address(value))


def ip_value(text: str) -> int | None:
    """An address as a number (None: not one). A dotted IPv4 quad is read by hand:
    `ipaddress` takes 70 us an address, 1.4 s of CPU for the kubelets' first look at
    W10k's 15,000 pods (what `ipaddress` refuses, leading zeros, is left to it)."""
    parts = text.split(".")
    if len(parts) == 4:
        value = 0
        for p in parts:
            if not (p.isascii() and p.isdigit()) or len(p) > 3 or (p[0] == "0" and len(p) > 1):
                break
            n = int(p)
            if n > 255:
                break
            value = value << 8 | n
        else:
            return value
    try:
        return int(ipaddress.ip_address(text))
    except ValueError:
        return None
