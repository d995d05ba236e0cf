"""Helpers shared by the test packages: waiting on conditions, object builders, tools."""

from tests.support.builders import configmap, crd, custom_resource, deployment, namespace
from tests.support.tools import require_tool, running_on_ci
from tests.support.wait import eventually, eventually_async

__all__ = [
    "configmap",
    "crd",
    "custom_resource",
    "deployment",
    "eventually",
    "eventually_async",
    "namespace",
    "require_tool",
    "running_on_ci",
]
