"""The GitSource CRD: installed into a store, served, schema-checked, status subresource."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gitkrm.agent import crd
from gitkrm.errors import BadRequest, Invalid
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import Store, open_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await open_store("sqlite:///" + str(tmp_path / "store.db"))
    yield s
    await s.close()


def _source(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "GitSource",
        "metadata": {"name": "apps", "namespace": crd.NAMESPACE},
        "spec": spec,
    }


async def test_install_creates_namespace_and_serves_gitsources(store: Store) -> None:
    await crd.install(store)
    ns = await store.get(ObjectRef(group="", kind="Namespace", name=crd.NAMESPACE))
    assert ns["metadata"]["name"] == "gitkrm-system"
    created = await store.create(_source(url="https://example.com/x.git"))
    assert created["spec"]["prune"] is True  # defaulted by the schema
    assert created["spec"]["adoption"] == "never"
    with pytest.raises(BadRequest, match=r'unknown field "spec.bogus"'):
        await store.create(
            {**_source(url="x", bogus=1), "metadata": {"name": "b", "namespace": crd.NAMESPACE}}
        )
    with pytest.raises(Invalid, match=r"spec\.interval"):
        await store.create(
            {
                **_source(url="x", interval="30"),
                "metadata": {"name": "c", "namespace": crd.NAMESPACE},
            }
        )


async def test_status_is_a_subresource(store: Store) -> None:
    await crd.install(store)
    obj = await store.create(_source(url="x"))
    obj["status"] = {"result": "Succeeded", "counts": {"created": 2}}
    written = await store.update_status(obj)
    assert written["status"]["counts"] == {"created": 2}
    assert written["metadata"]["generation"] == 1  # status writes don't bump generation
    obj = {**written, "spec": {**written["spec"], "suspend": True}, "status": {}}
    updated = await store.update(obj)
    assert updated["metadata"]["generation"] == 2
    assert updated["status"]["counts"] == {"created": 2}  # spec writes don't touch status


async def test_install_is_idempotent_and_upgrades(store: Store) -> None:
    await crd.install(store)
    first = await store.get(crd.CRD_REF)
    await crd.install(store)
    again = await store.get(crd.CRD_REF)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    stale = {**again, "metadata": {**again["metadata"], "annotations": {}}}
    stale["spec"] = {**again["spec"], "names": {**again["spec"]["names"], "shortNames": []}}
    await store.update(stale)
    await crd.install(store)
    fixed = await store.get(crd.CRD_REF)
    assert fixed["spec"]["names"]["shortNames"] == ["gs"]


def test_printer_columns_name_the_sync_state() -> None:
    version = crd.gitsource_crd()["spec"]["versions"][0]
    names = [c["name"] for c in version["additionalPrinterColumns"]]
    assert names[:5] == ["URL", "Revision", "Ready", "Health", "Status"]
    assert version["subresources"] == {"status": {}}
    assert GVK(group="gitkrm.io", version="v1alpha1", kind="GitSource") == crd.GITSOURCE_GVK
