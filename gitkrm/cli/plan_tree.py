"""The child sources a planned revision declares (gitkrm's GitSource objects; Flux
Kustomizations and Argo CD Applications with `--interpret`), planned in turn.

Each declaring object of the revision is read by its interpreter (`agent.tree`) as the
agent's source tree reads it, with one difference: objects the interpreter looks up (a Flux
GitRepository) are found in the planned revision first, then in the target, since the
revision may add them. A child over the parent's own repository is planned at the planned
commit (what merging it means for the children that follow the merged branch); a child over
another repository at the ref it names. A child that is the parent itself (Flux bootstrap's
`flux-system`: the parent's repository and path, whichever branch it names) is not planned
again; a cycle or more than `MAX_DEPTH` levels is an error."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from gitkrm.errors import GitkrmError

if TYPE_CHECKING:
    from gitkrm.agent.config import SourceConfig
    from gitkrm.agent.tree.model import ChildSpec
    from gitkrm.krm import Obj, ObjectRef
    from gitkrm.store import Store
    from gitkrm.sync.preview import Preview

MAX_DEPTH: Final = 8
_DECLARING_GROUPS: Final = frozenset({"gitkrm.io"})


@dataclass(frozen=True, slots=True)
class Declared:
    """A declaring object of the revision and the child it declares (or why not)."""

    declared_by: ObjectRef
    spec: ChildSpec | None
    error: str = ""


async def children(
    config: SourceConfig, revision: str, preview: Preview, store: Store
) -> list[Declared]:
    """The children the planned revision of `config` declares, in apply order."""
    if not config.interpret and not any(d.ref.group in _DECLARING_GROUPS for d in preview.objects):
        return []  # nothing can declare a child: the tree's modules are not imported
    from gitkrm.agent.tree import registry
    from gitkrm.agent.tree.child import ReadContext as TreeContext
    from gitkrm.source import GitRef

    rendered = {_key(d.ref): d.obj for d in preview.objects}

    @dataclass(frozen=True, slots=True)
    class _Context(TreeContext):
        """The tree's Context, but the planned revision's objects first."""

        async def get(self, ref: ObjectRef) -> Obj | None:
            found = rendered.get(_key(ref))
            return found if found is not None else await super(_Context, self).get(ref)

    interpreters = registry.for_peers(config.interpret)
    ctx = _Context(parent=config, store=store)
    out: list[Declared] = []
    for d in preview.objects:
        interpreter = interpreters.for_kind(d.ref.group_kind)
        if interpreter is None:
            continue
        try:
            spec = await interpreter.child(rendered[_key(d.ref)], ctx)
        except GitkrmError as e:
            out.append(Declared(d.ref, None, e.message))
            continue
        child = spec.config
        same_repository = config.ref is not None and child.url == config.url
        if spec.same_as_parent or (same_repository and _path(child.path) == _path(config.path)):
            continue  # the parent itself (whichever branch the object names)
        if same_repository:
            child = replace(child, ref=GitRef.from_flags(commit=revision))
        out.append(Declared(d.ref, replace(spec, config=child)))
    return out


def _path(path: str) -> str:
    return "/".join(p for p in path.split("/") if p not in ("", "."))


def _key(ref: ObjectRef) -> tuple[str, str, str, str]:
    return (ref.group, ref.kind, ref.namespace or "", ref.name)
