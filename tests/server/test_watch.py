"""Watch streams over HTTP: order, bookmarks, timeouts, 410, Table rows, selectors, and
clients that go away or stop reading."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.context import Limits
from gitkrm.store.sqlite import SqliteStore
from tests.server.conftest import wait_for
from tests.support.builders import configmap


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """Bookmarks every 0.2 s and stuck clients cut after 1 s, to keep the tests short."""
    state = tmp_path_factory.mktemp("watch")
    server = ServerThread(
        store_path=str(state / "store.db"),
        options=ServeOptions(
            port=0, state_dir=state, limits=Limits(stuck_watch_timeout=1.0, body_timeout=3.0)
        ),
        store_options={"bookmark_interval": 0.2},
    )
    server.start()
    yield server
    server.stop()


def merge_patch(http: httpx.Client, url: str, body: bytes) -> httpx.Response:
    return http.patch(url, content=body, headers={"content-type": "application/merge-patch+json"})


async def _watchers(store: SqliteStore) -> int:
    return store.watcher_count


class Stream:
    """A watch read on a thread: its events as they arrive."""

    def __init__(self, api: ServerThread, path: str, **params: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.headers: httpx.Headers | None = None
        self.done = threading.Event()
        self._response: httpx.Response | None = None
        self._client = httpx.Client(base_url=api.url, timeout=30)
        self._thread = threading.Thread(target=self._run, args=(path, params), daemon=True)
        self._thread.start()

    def _run(self, path: str, params: dict[str, str]) -> None:
        try:
            with self._client.stream("GET", path, params={"watch": "1", **params}) as r:
                self._response = r
                self.headers = r.headers
                for line in r.iter_lines():
                    if line:
                        self.events.append(orjson.loads(line))
        except (httpx.HTTPError, httpx.StreamError, OSError):
            pass  # closed by `close`, or the server ended the stream
        finally:
            self.done.set()

    def types(self) -> list[tuple[str, str]]:
        return [
            (e["type"], e["object"].get("metadata", {}).get("name", ""))
            for e in self.events
            if e["type"] != "BOOKMARK"
        ]

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the stream (its socket closed under the reader) and the reading thread."""
        if self._response is not None:  # a read blocked in recv() wakes up at a shutdown
            sock = self._response.extensions["network_stream"].get_extra_info("socket")
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._client.close()
        self._thread.join(10)
        assert not self._thread.is_alive(), "the watch thread did not end"


def test_events_in_order_from_a_list(api: ServerThread, http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    http.post(base, json=configmap("before", ns))
    rv = http.get(base).json()["metadata"]["resourceVersion"]
    with Stream(api, base, resourceVersion=rv) as s:
        http.post(base, json=configmap("a", ns))
        merge_patch(http, f"{base}/a", b'{"data":{"x":"1"}}')
        http.delete(f"{base}/a")
        wait_for(lambda: len(s.types()) >= 3)
        assert s.types() == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
        assert s.headers is not None
        assert s.headers["content-type"] == "application/json"


def test_bookmarks_and_timeout(api: ServerThread, http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    with Stream(
        api, base, allowWatchBookmarks="true", timeoutSeconds="1", resourceVersion="0"
    ) as s:
        assert s.done.wait(10)  # the server ended the stream
        bookmarks = [e for e in s.events if e["type"] == "BOOKMARK"]
        assert bookmarks, s.events
        assert bookmarks[0]["object"]["kind"] == "ConfigMap"
        assert int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) > 0


def test_compacted_revision_gives_an_error_event(
    api: ServerThread, http: httpx.Client, ns: str
) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    rv = http.post(base, json=configmap("old", ns)).json()["metadata"]["resourceVersion"]
    merge_patch(http, f"{base}/old", b'{"data":{"a":"b"}}')

    async def compact(store: SqliteStore) -> None:
        store.compact(store.resource_version)

    api.run(compact)
    r = http.get(base, params={"watch": "1", "resourceVersion": rv})
    assert r.status_code == 200
    lines = [orjson.loads(x) for x in r.content.splitlines() if x]
    assert len(lines) == 1
    assert lines[0]["type"] == "ERROR"
    status = lines[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_table_watch_sends_columns_once(api: ServerThread, http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    http.post(base, json=configmap("t1", ns, a="1"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    client = httpx.Client(base_url=api.url, timeout=10)
    events: list[dict[str, Any]] = []
    try:
        with client.stream("GET", base, params={"watch": "1"}, headers={"accept": accept}) as r:
            lines = r.iter_lines()
            events.append(orjson.loads(next(lines)))
            http.post(base, json=configmap("t2", ns))
            events.append(orjson.loads(next(lines)))
    finally:
        client.close()
    first, second = (e["object"] for e in events)
    assert first["kind"] == second["kind"] == "Table"
    assert [c["name"] for c in first["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert second["columnDefinitions"] == []
    assert first["rows"][0]["cells"][:2] == ["t1", 1]
    assert second["rows"][0]["cells"][:2] == ["t2", 0]


def test_selector_watch_sees_objects_leave(api: ServerThread, http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    http.post(base, json=configmap("sel", ns, labels={"keep": "yes"}))
    with Stream(api, base, labelSelector="keep=yes") as s:
        wait_for(lambda: s.types() == [("ADDED", "sel")])
        merge_patch(http, f"{base}/sel", b'{"metadata":{"labels":{"keep":"no"}}}')
        wait_for(lambda: len(s.types()) == 2)
        assert s.types()[1] == ("DELETED", "sel")


def test_disconnected_and_stuck_clients_are_let_go(
    api: ServerThread, http: httpx.Client, ns: str
) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    before = api.run(_watchers)
    gone = socket.create_connection(("127.0.0.1", api.port))
    gone.sendall(f"GET {base}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    wait_for(lambda: api.run(_watchers) == before + 1)
    gone.close()
    wait_for(lambda: api.run(_watchers) == before)

    # A client that opens a watch and never reads: once the socket buffers are full the
    # server waits on it only as long as stuck_watch_timeout, and serves others meanwhile.
    sock = socket.create_connection(("127.0.0.1", api.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(f"GET {base}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    try:
        wait_for(lambda: api.run(_watchers) == before + 1)
        big = "x" * 500_000
        for i in range(12):  # each within the client's timeout: nothing waits on `sock`
            assert http.post(base, json=configmap(f"big{i}", ns, v=big)).status_code == 201
        wait_for(lambda: api.run(_watchers) == before, timeout=15)
        assert http.get("/healthz").status_code == 200
    finally:
        sock.close()


def test_slow_body_times_out_without_blocking_others(
    api: ServerThread, http: httpx.Client, ns: str
) -> None:
    sock = socket.create_connection(("127.0.0.1", api.port))
    try:
        sock.sendall(
            f"POST /api/v1/namespaces/{ns}/configmaps HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        assert http.get("/healthz").status_code == 200
        sock.setblocking(False)
        with pytest.raises(BlockingIOError):  # served before the slow request timed out
            sock.recv(1)
        sock.settimeout(10)
        reply = sock.recv(65536).decode()
        assert reply.startswith("HTTP/1.1 504")
        assert '"reason":"Timeout"' in reply
    finally:
        sock.close()


def test_bodies_over_3_mib_are_refused(http: httpx.Client, ns: str) -> None:
    r = http.post(
        f"/api/v1/namespaces/{ns}/configmaps",
        content=b"{" + b" " * (3 * 1024 * 1024) + b"}",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 413
    assert r.json()["reason"] == "RequestEntityTooLarge"
    assert r.headers["content-type"] == "application/json"
