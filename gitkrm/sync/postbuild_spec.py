"""What a source asks of Flux's post-build steps (GitSource `spec.substitute`,
`spec.substituteFrom`, `spec.substituteStrict`, `spec.decryption`): plain values, light
to import (the agent's configuration holds them; `postbuild` does the work)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RefKind(StrEnum):
    CONFIG_MAP = "ConfigMap"
    SECRET = "Secret"


@dataclass(frozen=True, slots=True)
class SubstituteRef:
    """A ConfigMap or Secret of the store whose data keys are variables."""

    kind: RefKind
    name: str
    namespace: str
    optional: bool = False

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class DecryptionSpec:
    """SOPS decryption: age keys from a Secret of the store (`*.agekey` data keys) and/or
    key files given to the agent."""

    secret_name: str | None = None
    secret_namespace: str = "gitkrm-system"
    key_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PostBuildSpec:
    """What a source asks for; later entries of `substitute_from` win, `substitute` wins
    over all (Flux's order)."""

    substitute: tuple[tuple[str, str], ...] = ()
    substitute_from: tuple[SubstituteRef, ...] = ()
    strict: bool = False
    decryption: DecryptionSpec | None = None
    always: bool = False  # Flux's substituteStrategy Always: substitute even without variables

    @property
    def empty(self) -> bool:
        return not (self.substitute or self.substitute_from or self.decryption or self.always)
