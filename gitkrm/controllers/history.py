"""ControllerRevisions: the template history of StatefulSets and DaemonSets.

A revision is named `<owner>-<hash of its template>`, carries the template as
`data.spec.template` and a revision number one above the owner's highest; the same template
coming back reuses its revision (with a new number), as Kubernetes does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitkrm.cache.informer import Informer
from gitkrm.controllers.objects import OWNER_INDEX, owner_ref, uid
from gitkrm.controllers.revisions import template_hash
from gitkrm.controllers.writer import Writer
from gitkrm.errors import AlreadyExists
from gitkrm.krm import Obj

REVISION_HASH = "controller-revision-hash"


def revision_name(owner: Obj, template: Mapping[str, object]) -> str:
    count = (owner.get("status") or {}).get("collisionCount")
    return f"{owner['metadata']['name']}-{template_hash(template, count)}"


def template_of(revision: Obj) -> dict[str, Any]:
    data = revision.get("data") or {}
    spec = data.get("spec") if isinstance(data, dict) else None
    template = spec.get("template") if isinstance(spec, dict) else None
    return dict(template) if isinstance(template, dict) else {}


async def ensure_revision(
    writer: Writer, revisions: Informer, owner: Obj, template: Mapping[str, object]
) -> Obj:
    """The ControllerRevision of `owner`'s current template (created when missing)."""
    name = revision_name(owner, template)
    ns = owner["metadata"].get("namespace")
    owned = revisions.by_index(OWNER_INDEX, uid(owner))
    highest = max((int(r.get("revision") or 0) for r in owned), default=0)
    found = revisions.get(ns, name)
    if found is not None:
        if int(found.get("revision") or 0) < highest:
            found = await writer.update({**found, "revision": highest + 1})
        return found
    body = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": dict((owner.get("spec") or {}).get("selector", {}).get("matchLabels") or {}),
            "ownerReferences": [owner_ref(owner)],
        },
        "data": {"spec": {"template": dict(template)}},
        "revision": highest + 1,
    }
    try:
        return await writer.create(body)
    except AlreadyExists:
        existing = revisions.get(ns, name)
        if existing is None:
            raise
        return existing
