"""gitkrm in server-side mode and the real kubectl on the same objects, as field managers.

gitkrm applies as manager `gitkrm`; a person using `kubectl apply --server-side` is another
manager. kubectl is refused a field gitkrm owns (a conflict naming gitkrm), takes it with
`--force-conflicts`, and the next sync takes it back (Git wins), while a field only kubectl
applied stays: server-side apply removes only what gitkrm itself stopped applying.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.e2e_support import api_of, gitkrm
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo


def owned(cm: dict[str, Any], manager: str) -> set[str]:
    """The data keys `manager` owns through an Apply entry."""
    out: set[str] = set()
    for e in cm["metadata"].get("managedFields") or ():
        if e["manager"] == manager and e["operation"] == "Apply":
            out |= {k[2:] for k in e["fieldsV1"].get("f:data", {}) if k.startswith("f:")}
    return out


def test_kubectl_and_gitkrm_share_an_object_as_field_managers(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    flags = ("--repo", repo.url, "--state", str(state), "--agent-name", "e2e")
    ss = ("run", "--once", *flags, "--apply-mode", "server-side")
    repo.write("app.yaml", configmap("app", {"a": "1", "b": "2"}))
    repo.commit("a and b")
    repo.push()
    res = gitkrm(*ss, cwd=tmp_path)
    assert res.returncode == 0, res.stderr

    ops = ("apply", "--server-side", "--field-manager", "ops", "-f", "-")
    forced = ("apply", "--server-side", "--force-conflicts", "--field-manager", "ops", "-f", "-")
    get = ("get", "cm", "app", "-o", "json", "--show-managed-fields")
    with api_of(state, tmp_path) as kubectl:  # the API over the store, between syncs
        refused = kubectl.run(*ops, input=configmap("app", {"a": "9"}), check=False)
        assert refused.returncode == 1
        assert 'conflict with "gitkrm"' in refused.stderr
        assert ".data.a" in refused.stderr
        kubectl(*forced, input=configmap("app", {"a": "9", "extra": "x"}))
        cm = json.loads(kubectl(*get))
    assert cm["data"] == {"a": "9", "b": "2", "extra": "x"}
    assert owned(cm, "ops") == {"a", "extra"}
    assert owned(cm, "gitkrm") == {"b"}

    # Drift: the next sync takes `a` back; `extra` is only ops's, so it stays.
    res = gitkrm(*ss, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "1 configured" in res.stdout
    with api_of(state, tmp_path) as kubectl:
        cm = json.loads(kubectl(*get))
    assert cm["data"] == {"a": "1", "b": "2", "extra": "x"}
    assert owned(cm, "gitkrm") == {"a", "b"}
    assert owned(cm, "ops") == {"extra"}

    # b leaves Git: gitkrm stops applying it and it goes; ops's field is untouched.
    repo.write("app.yaml", configmap("app", {"a": "1"}))
    repo.commit("no b")
    repo.push()
    res = gitkrm(*ss, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    with api_of(state, tmp_path) as kubectl:
        cm = json.loads(kubectl(*get))
    assert cm["data"] == {"a": "1", "extra": "x"}
