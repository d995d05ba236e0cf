"""Storage: PersistentVolumeClaims bound to volumes provisioned on the spot.

At start a default StorageClass (`options.default_storage_class`, provisioner
`gitkrm.io/simulated`) is created unless one is marked default already. A claim of an
existing class (or of no class, which means the default one) gets a PersistentVolume
`pvc-<claim uid>` of its size and access modes, and both are Bound. A claim with
`storageClassName: ""` binds to a matching Available volume if there is one. A claim of a
class that does not exist stays Pending. When a claim goes away its volume is deleted
(reclaimPolicy Delete) or Released (Retain).
"""

from __future__ import annotations

import contextlib

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers.kinds import PV, PVC, STORAGE_CLASS
from gitkrm.controllers.objects import annotations_of, being_deleted, uid, with_status
from gitkrm.controllers.resources import amount
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import AlreadyExists, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.fields import field_value

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PROVISIONER = "gitkrm.io/simulated"
VOLUME_KEY = "\0pv"  # queue keys (VOLUME_KEY, name): a PersistentVolume


class StorageController(Controller):
    name = "storage"

    def setup(self) -> None:
        self.claims = self.watch(PVC, primary=True)
        self.volumes = self.watch(PV)
        self.classes = self.watch(STORAGE_CLASS)
        self.volumes.add_handler(self._on_volume)
        self.classes.add_handler(self._on_class)

    def _on_volume(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is None:
            return
        self.queue.add((VOLUME_KEY, obj["metadata"]["name"]))
        ref = field_value(obj, "spec", "claimRef")
        if isinstance(ref, dict) and ref.get("name"):
            self.queue.add((str(ref.get("namespace") or ""), str(ref["name"])))

    def _on_class(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and old is None:
            for claim in self.claims.items():
                if field_value(claim, "status", "phase") != "Bound":
                    self.queue.add(key_of(claim))

    def default_class(self) -> Obj | None:
        for sc in self.classes.items():
            if annotations_of(sc).get(DEFAULT_CLASS) == "true":
                return sc
        return None

    async def started(self) -> None:
        if self.default_class() is not None:
            return
        with contextlib.suppress(AlreadyExists):
            await self.writer.create(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {
                        "name": self.options.default_storage_class,
                        "annotations": {DEFAULT_CLASS: "true"},
                    },
                    "provisioner": PROVISIONER,
                    "reclaimPolicy": "Delete",
                    "volumeBindingMode": "Immediate",
                }
            )

    async def reconcile(self, key: Key) -> float | None:
        if key[0] == VOLUME_KEY:
            await self._sync_volume(key[1])
            return None
        claim = self.claims.get_key(key)
        if claim is None or being_deleted(claim):
            return None
        name = field_value(claim, "spec", "volumeName")
        if name:
            volume = self.volumes.get(None, str(name))
            if volume is not None and field_value(claim, "status", "phase") != "Bound":
                await self._bound(claim, volume)
            return None
        cls_name = field_value(claim, "spec", "storageClassName")
        if cls_name == "":
            volume = self._matching_volume(claim)
            if volume is None:
                await self._pending(claim)
                return None
            await self._bind(claim, volume)
            return None
        sc = self.default_class() if cls_name is None else self.classes.get(None, str(cls_name))
        if sc is None:
            await self._pending(claim)
            return None
        await self._provision(claim, sc)
        return None

    def _matching_volume(self, claim: Obj) -> Obj | None:
        want = amount("storage", field_value(claim, "spec", "resources", "requests", "storage"))
        modes = set(field_value(claim, "spec", "accessModes") or ())
        for volume in sorted(self.volumes.items(), key=lambda v: v["metadata"]["name"]):
            spec = volume.get("spec") or {}
            if spec.get("claimRef") or (spec.get("storageClassName") or "") != "":
                continue
            if field_value(volume, "status", "phase") not in (None, "Available"):
                continue
            if amount("storage", field_value(volume, "spec", "capacity", "storage")) < want:
                continue
            if not modes <= set(spec.get("accessModes") or ()):
                continue
            return volume
        return None

    async def _pending(self, claim: Obj) -> None:
        if field_value(claim, "status", "phase") == "Pending":
            return
        status = dict(claim.get("status") or {})
        status["phase"] = "Pending"
        await self.writer.update_status(with_status(claim, status))

    def _claim_ref(self, claim: Obj) -> dict[str, object]:
        md = claim["metadata"]
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": md.get("namespace"),
            "name": md["name"],
            "uid": md.get("uid"),
        }

    async def _provision(self, claim: Obj, sc: Obj) -> None:
        spec = claim.get("spec") or {}
        name = f"pvc-{uid(claim)}"
        volume = self.volumes.get(None, name)
        if volume is None:
            size = field_value(claim, "spec", "resources", "requests", "storage") or "1Gi"
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": name,
                    "annotations": {"pv.kubernetes.io/provisioned-by": str(sc.get("provisioner"))},
                },
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                    "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                    "storageClassName": sc["metadata"]["name"],
                    "volumeMode": spec.get("volumeMode") or "Filesystem",
                    "claimRef": self._claim_ref(claim),
                    "hostPath": {
                        "path": f"/var/lib/gitkrm/volumes/{name}",
                        "type": "DirectoryOrCreate",
                    },
                },
            }
            try:
                volume = await self.writer.create(body)
            except AlreadyExists:
                volume = await self.ctx.store.get(ref_of(body))
        await self._bind(claim, volume, provisioner=str(sc.get("provisioner")))

    async def _bind(self, claim: Obj, volume: Obj, provisioner: str | None = None) -> None:
        spec = volume.get("spec") or {}
        if spec.get("claimRef", {}).get("uid") != uid(claim):
            volume = await self.writer.update(
                {**volume, "spec": {**spec, "claimRef": self._claim_ref(claim)}}
            )
        if field_value(volume, "status", "phase") != "Bound":
            volume = await self.writer.update_status(
                with_status(volume, {**(volume.get("status") or {}), "phase": "Bound"})
            )
        notes = dict(annotations_of(claim))
        notes["pv.kubernetes.io/bind-completed"] = "yes"
        notes["pv.kubernetes.io/bound-by-controller"] = "yes"
        if provisioner:
            notes["volume.kubernetes.io/storage-provisioner"] = provisioner
            notes["volume.beta.kubernetes.io/storage-provisioner"] = provisioner
        claim = await self.writer.update(
            {
                **claim,
                "metadata": {**claim["metadata"], "annotations": notes},
                "spec": {**(claim.get("spec") or {}), "volumeName": volume["metadata"]["name"]},
            }
        )
        await self._bound(claim, volume)

    async def _bound(self, claim: Obj, volume: Obj) -> None:
        spec = volume.get("spec") or {}
        status = dict(claim.get("status") or {})
        status.update(
            {
                "phase": "Bound",
                "accessModes": list(spec.get("accessModes") or ()),
                "capacity": dict(spec.get("capacity") or {}),
            }
        )
        if status != (claim.get("status") or {}):
            await self.writer.update_status(with_status(claim, status))

    async def _sync_volume(self, name: str) -> None:
        """A volume whose claim is gone is deleted (Delete) or Released (Retain)."""
        volume = self.volumes.get(None, name)
        if volume is None or being_deleted(volume):
            return
        ref = field_value(volume, "spec", "claimRef")
        if not isinstance(ref, dict) or not ref.get("name"):
            if field_value(volume, "status", "phase") is None:
                await self.writer.update_status(with_status(volume, {"phase": "Available"}))
            return
        claim = self.claims.get(str(ref.get("namespace") or ""), str(ref["name"]))
        if claim is not None and uid(claim) == ref.get("uid"):
            return
        if claim is None:
            try:
                claim = await self.ctx.store.get(
                    ref_of(
                        {
                            "apiVersion": "v1",
                            "kind": "PersistentVolumeClaim",
                            "metadata": {"name": ref["name"], "namespace": ref.get("namespace")},
                        }
                    )
                )
            except NotFound:
                claim = None
            if claim is not None and uid(claim) == ref.get("uid"):
                return
        if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
            with contextlib.suppress(NotFound):
                await self.writer.delete(ref_of(volume))
        elif field_value(volume, "status", "phase") != "Released":
            await self.writer.update_status(
                with_status(volume, {**(volume.get("status") or {}), "phase": "Released"})
            )
