"""The per-namespace objects (the `default` ServiceAccount, the `kube-root-ca.crt`
ConfigMap): made in every namespace, made again when deleted, the ConfigMap's data put back."""

from __future__ import annotations

from functools import partial

from gitkrm.controllers.rootca import DESCRIPTION, STABLE_CA
from gitkrm.store.sqlite import SqliteStore
from tests.controllers.conftest import Start, get, ref, wait_until

PEM = "-----BEGIN CERTIFICATE-----\nserving\n-----END CERTIFICATE-----\n"


async def test_every_namespace_gets_both_and_gets_them_back(
    store: SqliteStore, start: Start
) -> None:
    await start()
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        for kind, name in (("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")):
            await wait_until(partial(get, store, kind, name, ns), what=f"{ns}/{name}")
    cm = await get(store, "ConfigMap", "kube-root-ca.crt")
    assert cm is not None
    assert cm["data"] == {"ca.crt": STABLE_CA}
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    await store.patch(
        ref("ConfigMap", "kube-root-ca.crt"),
        {"data": {"ca.crt": "forged"}, "metadata": {"annotations": {"x": "kept"}}},
        "merge",
    )

    async def put_back() -> bool:
        now = await get(store, "ConfigMap", "kube-root-ca.crt")
        return now is not None and now["data"] == {"ca.crt": STABLE_CA}

    await wait_until(put_back, what="data put back")
    kept = await get(store, "ConfigMap", "kube-root-ca.crt")
    assert kept is not None
    assert kept["metadata"]["annotations"]["x"] == "kept"
    await store.delete(ref("ConfigMap", "kube-root-ca.crt"))
    await wait_until(put_back, what="made again")


async def test_the_api_certificate_is_published(store: SqliteStore, start: Start) -> None:
    await start(root_ca_pem=PEM)
    cm = await wait_until(lambda: get(store, "ConfigMap", "kube-root-ca.crt", "kube-public"))
    assert cm["data"] == {"ca.crt": PEM}
