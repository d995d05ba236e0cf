"""Objects as the YAML text a client sends: the input of `kubectl apply -f -`, an
`application/apply-patch+yaml` body. Built from tests.support.builders, so a test states
what differs instead of writing a Deployment out as a template of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


def yaml_text(*objs: Mapping[str, Any]) -> str:
    """The objects as one YAML stream (documents in the given order, keys as built)."""
    return "---\n".join(yaml.safe_dump(dict(o), sort_keys=False) for o in objs)
