"""The engine over a Git source whose path holds an overlay of bases elsewhere in the
repository: what is built, what an edit outside the path does, and that a build is redone
only when a file it reads changed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store import Store
from gitkrm.sync import kustomize
from tests.support.tools import require_tool
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, configmap, namespace


@pytest.fixture(autouse=True)
def _kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    kubectl = require_tool("kubectl", candidates=["/usr/lib/google-cloud-sdk/bin/kubectl"])
    monkeypatch.setenv("PATH", f"{kubectl.parent}:/usr/bin:/bin")


async def test_an_overlay_path_syncs_bases_from_elsewhere_and_rebuilds_only_on_their_change(
    remote: Remote,
    make_engine: EngineFactory,
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    builds: list[str] = []
    real_build = kustomize.build

    async def counted(root: str, contents: Mapping[str, bytes], **kw: Any) -> bytes:
        builds.append(root)
        return await real_build(root, contents, **kw)

    monkeypatch.setattr(kustomize, "build", counted)
    remote.write("bases/app/kustomization.yaml", "resources: [cm.yaml, ns.yaml]\n")
    remote.write("bases/app/cm.yaml", configmap("settings", data="color: blue"))
    remote.write("bases/app/ns.yaml", namespace("apps"))
    remote.write(
        "overlays/dev/kustomization.yaml", "resources: [../../bases/app]\nnamePrefix: dev-\n"
    )
    remote.write("docs/readme.yaml", "not: a manifest of this path\n")
    remote.commit("overlay")
    source = GitSource(
        GitSourceSpec(name="src", url=remote.url, path="overlays/dev"), cache_dir=tmp_path / "c"
    )
    engine = make_engine()
    try:
        result = await engine.sync(await source.snapshot())
        assert result.ok, result.problems()
        ref = ObjectRef(group="", kind="ConfigMap", name="dev-settings", namespace="apps")
        assert (await store.get(ref))["data"] == {"color": "blue"}
        assert builds == ["overlays/dev"]
        # A commit outside everything the build reads: the build is not run again.
        remote.write("docs/readme.yaml", "still: not read\n")
        remote.commit("docs")
        assert (await engine.sync(await source.snapshot())).ok
        assert builds == ["overlays/dev"]
        # An edit of the base outside the path: rebuilt and applied.
        remote.write("bases/app/cm.yaml", configmap("settings", data="color: green"))
        remote.commit("base")
        assert (await engine.sync(await source.snapshot())).ok
        assert builds == ["overlays/dev", "overlays/dev"]
        assert (await store.get(ref))["data"] == {"color": "green"}
        # A reference out of the repository: refused whole, nothing written.
        remote.write(
            "overlays/dev/kustomization.yaml", "resources: [../../bases/app, ../../../x]\n"
        )
        remote.commit("escape")
        refused = await engine.sync(await source.snapshot())
        assert not refused.ok
        assert refused.problems() == [
            "kustomization.yaml: resources entry '../../../x' leaves the repository"
        ]
        assert (await store.get(ref))["data"] == {"color": "green"}
    finally:
        await source.close()
