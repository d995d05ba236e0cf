"""The shared test helpers: waiting, tools (and the CI guard of tests/conftest.py), builders."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests import conftest
from tests.support import (
    configmap,
    crd,
    custom_resource,
    deployment,
    eventually,
    eventually_async,
    namespace,
    require_tool,
)
from tests.support.closing import Closable, Made
from tests.support.tools import ToolMissing
from tests.support.validate_run import Problem, assert_same_problems, problem

# ---- eventually ----


def test_eventually_returns_the_first_truthy_value() -> None:
    counter = itertools.count()
    assert eventually(lambda: next(counter) >= 3 and "done", timeout=5, interval=0) == "done"


def test_eventually_names_what_it_waited_for_and_what_it_saw() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the answer; last value: \[\]"):
        eventually(list, timeout=0.05, interval=0.01, message="the answer")


def test_asserting_predicates_count_as_not_yet() -> None:
    seen: list[int] = []

    def check() -> bool:
        seen.append(1)
        assert len(seen) == 0, "the list is not empty"
        return True

    with pytest.raises(
        AssertionError, match="last call raised AssertionError: the list is not empty"
    ):
        eventually(check, timeout=0.05, interval=0.01)


def test_eventually_refuses_async_predicates() -> None:
    async def pred() -> bool:
        return True

    with pytest.raises(TypeError, match="eventually_async"):
        eventually(pred, timeout=0.05)  # type: ignore[unused-coroutine]


async def test_eventually_async_takes_plain_and_async_predicates() -> None:
    ready = asyncio.Event()
    asyncio.get_running_loop().call_later(0.02, ready.set)

    async def is_ready() -> bool:
        return ready.is_set()

    assert await eventually_async(is_ready, timeout=5) is True
    assert await eventually_async(lambda: 7, timeout=5) == 7
    with pytest.raises(AssertionError, match="waiting for never; last value: 0"):
        await eventually_async(lambda: 0, timeout=0.05, interval=0.01, message="never")


# ---- tools ----


def test_require_tool_finds_tools_on_path_and_candidates() -> None:
    assert require_tool("sh").name == "sh"
    assert str(require_tool("no-such-tool-here", candidates=["/bin/sh"])) == "/bin/sh"


def test_a_missing_tool_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(ToolMissing, match="no-such-tool-here is not installed"):
        require_tool("no-such-tool-here")


def test_a_missing_tool_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_tool("no-such-tool-here", candidates=["/nonexistent/tool"], search_path=False)


@pytest.mark.parametrize(
    ("ci", "reason", "outcome"),
    [
        ("true", "kubectl is not installed", "failed"),
        ("true", "gpg (gnupg) is not installed", "failed"),
        ("true", "render workers run only on machines with two cores or more", "skipped"),
        ("", "kubectl is not installed", "skipped"),
    ],
)
def test_the_ci_guard_fails_missing_tool_skips(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    ci: str,
    reason: str,
    outcome: str,
) -> None:
    monkeypatch.setenv("CI", ci)
    call = pytest.CallInfo.from_call(lambda: pytest.skip(reason), when="setup")
    report = pytest.TestReport.from_item_and_call(request.node, call)
    assert report.skipped
    hook = conftest.pytest_runtest_makereport(request.node, call)
    next(hook)
    with pytest.raises(StopIteration) as done:
        hook.send(report)
    assert done.value.value.outcome == outcome


# ---- builders ----


def test_builders() -> None:
    assert configmap("a") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default"},
    }
    assert configmap("a", None, k="v", labels={"x": "y"})["data"] == {"k": "v"}
    assert "namespace" not in configmap("a", None)["metadata"]
    d = deployment("web", "ns", replicas=3, port=80, strategy={"type": "Recreate"})
    assert d["metadata"] == {"name": "web", "namespace": "ns", "labels": {"app": "web"}}
    assert d["spec"]["replicas"] == 3
    assert d["spec"]["strategy"] == {"type": "Recreate"}
    assert d["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}
    ]
    assert namespace("n") == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    c = crd("Gadget", "x.example", versions=("v1", "v2"), status={"ready": {"type": "boolean"}})
    assert c["metadata"]["name"] == "gadgets.x.example"
    assert [(v["name"], v["storage"]) for v in c["spec"]["versions"]] == [
        ("v1", True),
        ("v2", False),
    ]
    v1, v2 = (v["schema"]["openAPIV3Schema"] for v in c["spec"]["versions"])
    assert v1 == v2
    assert v1 is not v2
    assert set(v1["properties"]) == {"spec", "status"}
    assert custom_resource("Gadget", "g", group="x.example", size=2) == {
        "apiVersion": "x.example/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"size": 2},
    }


# ---- validate_run ----


def test_problems_are_compared_by_place_and_object() -> None:
    said_by_validate = problem(
        "/w/deploy/secure/frontend/certificate.yaml:1: Certificate secure/podinfo-frontend: "
        'unknown kind "Certificate"',
        relative_to="/w/deploy/secure",
    )
    said_by_run = problem(
        "frontend/certificate.yaml:1: Certificate secure/podinfo-frontend: unknown kind"
    )
    assert (
        said_by_validate
        == said_by_run
        == Problem("frontend/certificate.yaml", 1, "Certificate secure/podinfo-frontend")
    )
    assert problem("kustomization.yaml: resources entry '../b' leaves the source root") == (
        Problem("kustomization.yaml", None, None)
    )
    assert problem("13 object(s) in 11 file(s): 2 problem(s)") is None
    assert problem("warning: a.yaml:3: something") is None


def test_different_problems_are_named_on_both_sides() -> None:
    one = frozenset({Problem("a.yaml", 1, "ConfigMap x")})
    other = frozenset({Problem("a.yaml", 1, "ConfigMap y")})
    assert_same_problems(one, frozenset(one))
    with pytest.raises(AssertionError, match=r"only validate:\n    a.yaml:1: ConfigMap x"):
        assert_same_problems(one, other)
    with pytest.raises(AssertionError, match="validate named no problem"):
        assert_same_problems(frozenset(), frozenset())


async def test_made_closes_what_it_kept_in_order_sync_or_async() -> None:
    closed: list[str] = []

    class Plain:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    class Async:
        async def close(self) -> None:
            await asyncio.sleep(0)
            closed.append("async")

    async with Made[Closable]() as made:
        first = Plain("a")
        assert made.keep(first) is first  # keep() hands back what it kept
        made.keep(Async())
        made.keep(Plain("c"))
        assert closed == []
    assert closed == ["a", "async", "c"]
