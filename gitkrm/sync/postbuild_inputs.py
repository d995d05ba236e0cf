"""Resolve a source's post-build settings against the store, before each render.

`substituteFrom` ConfigMaps and Secrets are read afresh each time (a changed value makes
a new `PostBuild` digest, so the revision renders again); a missing one is a problem of
the revision unless `optional`. Age keys come from the decryption Secret's `*.agekey`
data keys (Flux's naming) and from key files given to the agent. Every value read from a
Secret, and every key, is registered with `krm.masking` before anything uses it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from pathlib import Path

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef, masking
from gitkrm.store import Store
from gitkrm.sync.postbuild import PostBuild, check_names, clean_value
from gitkrm.sync.postbuild_spec import PostBuildSpec, RefKind

AGE_KEY_SUFFIX = ".agekey"
_AGE_SECRET_PREFIX = "AGE-SECRET-KEY-"


def _secret_values(obj: Obj) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (obj.get("data") or {}).items():
        try:
            out[k] = base64.b64decode(str(v), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue
    for k, v in (obj.get("stringData") or {}).items():
        out[k] = str(v)
    return out


def age_identities(text: str) -> list[str]:
    """The age secret keys of a key file (`age-keygen` output: comments and keys)."""
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip().upper().startswith(_AGE_SECRET_PREFIX)
    ]


async def resolve(store: Store | None, spec: PostBuildSpec) -> PostBuild:
    """The variables and keys `spec` names, read now; problems instead of exceptions.
    Without a store (`gitkrm validate`) only inline variables and key files count."""
    variables: dict[str, str] = {}
    origin: dict[str, str] = {}
    problems: list[str] = []
    for ref in spec.substitute_from:
        oref = ObjectRef(group="", kind=str(ref.kind), name=ref.name, namespace=ref.namespace)
        if store is None:
            continue
        try:
            obj = await store.get(oref)
        except NotFound:
            if not ref.optional:
                problems.append(
                    f"substituteFrom {ref}: not found (set optional: true if it may be missing)"
                )
            continue
        except GitkrmError as e:
            problems.append(f"substituteFrom {ref}: can't be read: {e.message}")
            continue
        if ref.kind is RefKind.SECRET:
            values = _secret_values(obj)
            masking.remember(clean_value(v) for v in values.values())
        else:
            values = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        for k, v in values.items():
            variables[k] = clean_value(v)
            origin[k] = f"substituteFrom {ref}"
    for k, v in spec.substitute:
        variables[k] = clean_value(v)
        origin.pop(k, None)
    problems.extend(check_names(variables, origin))
    identities: list[str] = []
    dec = spec.decryption
    if dec is not None:
        if dec.secret_name and store is not None:
            sref = ObjectRef(
                group="", kind="Secret", name=dec.secret_name, namespace=dec.secret_namespace
            )
            what = f"decryption Secret {dec.secret_namespace}/{dec.secret_name}"
            try:
                secret = await store.get(sref)
            except NotFound:
                problems.append(f"{what} (spec.decryption.secretRef): not found")
            except GitkrmError as e:
                problems.append(f"{what}: can't be read: {e.message}")
            else:
                for name, value in sorted(_secret_values(secret).items()):
                    if name.endswith(AGE_KEY_SUFFIX):
                        identities.extend(age_identities(value))
        for path in dec.key_files:
            try:
                text = await asyncio.to_thread(Path(path).read_text)
            except OSError as e:
                problems.append(f"age key file {path}: {e.strerror or e}")
            else:
                identities.extend(age_identities(text))
        masking.remember(identities)
    return PostBuild(
        variables=variables,
        strict=spec.strict,
        always=spec.always,
        identities=tuple(identities),
        decrypt=dec is not None,
        problems=tuple(problems),
    )
