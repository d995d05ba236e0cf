"""The engine and Flux's post-build inputs: a value changed in a `substituteFrom`
ConfigMap makes the same revision render again (the agent syncs fully when
`inputs_changed`), and only then."""

from __future__ import annotations

from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.postbuild_spec import PostBuildSpec, RefKind, SubstituteRef
from gitkrm.sync.results import Action
from tests.support.builders import namespace
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote

VARS = ObjectRef(group="", kind="ConfigMap", name="vars", namespace="gitkrm-system")
SPEC = PostBuildSpec(substitute_from=(SubstituteRef(RefKind.CONFIG_MAP, "vars", "gitkrm-system"),))


async def test_a_changed_variable_renders_the_same_revision_again(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    await store.create(namespace("gitkrm-system"))
    await store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vars", "namespace":
         "gitkrm-system"}, "data": {"env": "prod"}}
    )  # fmt: skip
    remote.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n")
    remote.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\n"
        "data: {env: '${env}'}\n",
    )
    remote.commit("seed")
    engine = make_engine(postbuild=SPEC)
    snap = await source.snapshot()
    first = await engine.sync(snap)
    assert first.ok, first.problems()
    assert not await engine.inputs_changed()
    cm_ref = ObjectRef(group="", kind="ConfigMap", name="c", namespace="apps")
    assert (await store.get(cm_ref))["data"] == {"env": "prod"}
    # Drift checks re-apply what was rendered: the new value needs a full sync.
    vars_cm = await store.get(VARS)
    vars_cm["data"] = {"env": "staging"}
    await store.update(vars_cm)
    assert await engine.inputs_changed()
    again = await engine.sync(snap)
    assert {o.ref.name: o.action for o in again.objects}["c"] is Action.CONFIGURED
    assert (await store.get(cm_ref))["data"] == {"env": "staging"}
    assert not await engine.inputs_changed()
