"""What kube-apiserver's default mutating admission plugins add to a Pod (not to a pod
template: only a Pod is admitted by them, so a Deployment's template never gains these).

- ServiceAccount (create): `serviceAccountName` (and the deprecated `serviceAccount`)
  `default` when unset, and unless `automountServiceAccountToken` is false the projected
  token volume `kube-api-access-<5 chars>` mounted read-only at
  /var/run/secrets/kubernetes.io/serviceaccount in every (init) container that has no
  mount there.
- DefaultTolerationSeconds (create and update): NoExecute tolerations of
  `node.kubernetes.io/not-ready` and `.../unreachable` for 300 s, unless the pod already
  tolerates them.
- Priority (create): `priority` and `preemptionPolicy` from the named PriorityClass, else
  from a global default one, else 0 and PreemptLowerPriority.

Pure: the caller looks PriorityClasses up and draws the volume's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitkrm.errors import Forbidden
from gitkrm.krm.types import Obj

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DEFAULT_TOLERATION_SECONDS = 300
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
# The classes kube-apiserver creates at start (pkg/apis/scheduling SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_SOURCE_OF_MIRROR = "kubernetes.io/config.mirror"


@dataclass(frozen=True, slots=True)
class Priority:
    """What the Priority plugin resolved: the class name to record (the global default's,
    when the pod names none), its value and preemption policy (None: leave unset)."""

    class_name: str
    value: int
    preemption_policy: str | None


NO_CLASS = Priority(class_name="", value=0, preemption_policy="PreemptLowerPriority")


def token_volume() -> Obj:
    """The projected volume of serviceaccount.TokenVolumeSource (defaultMode 0644, the
    bound token's 3607 s, the namespace's root CA and the pod's namespace)."""
    return {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "name": ROOT_CA_CONFIGMAP,
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            "path": "namespace",
                        }
                    ]
                }
            },
        ],
    }


def admit_pod_create(
    pod: Obj, *, priority: Callable[[str], Priority | None], volume_name: Callable[[], str]
) -> None:
    """The plugins' mutations of a Pod being created, in kube-apiserver's order.

    `priority(name)` resolves a PriorityClass name ("" for the global default; None when
    there is no such class: the pod is left as it is); `volume_name()` draws the token
    volume's name. A malformed spec is left to validation.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    md = pod.get("metadata")
    annotations = md.get("annotations") if isinstance(md, dict) else None
    mirror = isinstance(annotations, dict) and _SOURCE_OF_MIRROR in annotations
    if not mirror:
        _service_account(spec, volume_name)
    admit_tolerations(spec)
    _priority(spec, priority)


def _service_account(spec: Obj, volume_name: Callable[[], str]) -> None:
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = account
    spec["serviceAccount"] = account  # the v1 conversion mirrors it
    if spec.get("automountServiceAccountToken") is False:
        return
    volumes = spec.get("volumes")
    if volumes is not None and not isinstance(volumes, list):
        return
    name = next(
        (
            v["name"]
            for v in volumes or ()
            if isinstance(v, dict)
            and isinstance(v.get("name"), str)
            and v["name"].startswith(TOKEN_VOLUME_PREFIX)
        ),
        None,
    )
    existing = name is not None
    mount_name = name or volume_name()
    needed = False
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            if not isinstance(c, dict):
                continue
            mounts = c.get("volumeMounts")
            if mounts is None:
                mounts = c["volumeMounts"] = []
            if not isinstance(mounts, list):
                continue
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"mountPath": TOKEN_MOUNT_PATH, "name": mount_name, "readOnly": True})
            needed = True
    if needed and not existing:
        spec["volumes"] = [*(volumes or ()), {"name": mount_name, "projected": token_volume()}]


def admit_tolerations(spec: Obj) -> None:
    """DefaultTolerationSeconds: tolerate not-ready and unreachable nodes for 300 s unless
    a toleration (of that key or any key, with effect NoExecute or any effect) does."""
    tolerations = spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return
    found = {_NOT_READY: False, _UNREACHABLE: False}
    for t in tolerations or ():
        if not isinstance(t, dict) or t.get("effect") not in (None, "", "NoExecute"):
            continue
        key = t.get("key") or ""
        for taint in found:
            if key in ("", taint):
                found[taint] = True
    missing = [taint for taint, ok in found.items() if not ok]
    if missing:
        spec["tolerations"] = [
            *(tolerations or ()),
            *(
                {
                    "effect": "NoExecute",
                    "key": taint,
                    "operator": "Exists",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
                for taint in missing
            ),
        ]


def _priority(spec: Obj, priority: Callable[[str], Priority | None]) -> None:
    name = spec.get("priorityClassName") or ""
    if not isinstance(name, str):
        return
    resolved = priority(name)
    if resolved is None:
        return
    if not name and resolved.class_name:
        spec["priorityClassName"] = resolved.class_name
    given = spec.get("priority")
    if given is not None and given != resolved.value:
        raise Forbidden(
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {resolved.value} from the given "
            "PriorityClass name"
        )
    spec["priority"] = resolved.value
    if resolved.preemption_policy and spec.get("preemptionPolicy") is None:
        spec["preemptionPolicy"] = resolved.preemption_policy


def priority_of(priority_class: Obj) -> Priority:
    """A PriorityClass object's value and preemption policy (PreemptLowerPriority when it
    names none, as its defaulting does)."""
    md = priority_class.get("metadata") or {}
    value = priority_class.get("value")
    policy = priority_class.get("preemptionPolicy")
    return Priority(
        class_name=str(md.get("name") or ""),
        value=value if isinstance(value, int) else 0,
        preemption_policy=policy if isinstance(policy, str) else "PreemptLowerPriority",
    )
