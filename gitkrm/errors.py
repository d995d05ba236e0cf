"""One error hierarchy for gitkrm, mapped to Kubernetes Status reasons and HTTP codes.

Every layer raises these, so the HTTP API can turn any of them into a `kind: Status`
body and the CLI into one clear line, without translating between error types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

IMMUTABLE_MESSAGE = "field is immutable"
"""The words of apimachinery's ValidateImmutableField (and of `immutable: true` data)."""


@dataclass(frozen=True)
class Cause:
    """One reason an object is invalid (a Kubernetes `StatusCause`).

    `type` is a Kubernetes CauseType such as `FieldValueInvalid`, `FieldValueRequired`,
    `FieldValueNotSupported`, `FieldValueDuplicate`, `FieldValueForbidden`,
    `FieldValueTooLong`, `FieldManagerConflict`; `field` is the dotted path
    (`spec.template.spec.containers[0].image`).
    """

    type: str
    message: str
    field: str = ""
    immutable: bool = False
    """The field may not change after creation (a delete and create could apply it). Not
    part of the Status body: Kubernetes says it in the message ("field is immutable")."""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.type, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class Details:
    """The `details` of a Status: which object the error is about."""

    name: str = ""
    group: str = ""
    kind: str = ""
    causes: Sequence[Cause] = field(default_factory=tuple)
    retry_after_seconds: int | None = None


class GitkrmError(Exception):
    """Root of all gitkrm errors; `reason` and `code` are the Kubernetes Status values."""

    reason: ClassVar[str] = "InternalError"
    code: ClassVar[int] = 500
    # kube-apiserver's NewNotFound and NewGenericServerResponse always set `details` (`{}`
    # at least); clients read it unchecked (`kubectl debug` dereferences it).
    always_details: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        details: Details | None = None,
        causes: Sequence[Cause] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or Details()
        if causes:
            self.details.causes = tuple(causes)

    @property
    def causes(self) -> Sequence[Cause]:
        return self.details.causes

    def to_status(self) -> dict[str, Any]:
        """The Kubernetes `Status` object for this error."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        d = self.details
        det: dict[str, Any] = {}
        if d.name:
            det["name"] = d.name
        if d.group:
            det["group"] = d.group
        if d.kind:
            det["kind"] = d.kind
        if d.causes:
            det["causes"] = [c.to_dict() for c in d.causes]
        if d.retry_after_seconds is not None:
            det["retryAfterSeconds"] = d.retry_after_seconds
        if det or self.always_details:
            status["details"] = det
        return status


class BadRequest(GitkrmError):
    reason = "BadRequest"
    code = 400


class ManifestError(BadRequest):
    """A manifest file that cannot be read, located for the user: `path:line: [object: ]message`.

    `path`, `line` (1-based, None when unknown) and `object` (`Kind namespace/name`, when
    known) are kept as attributes so the CLI and reports can point at the exact spot.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str,
        line: int | None = None,
        object: str | None = None,
    ) -> None:
        where = f"{path}:{line}" if line is not None else path
        prefix = f"{object}: " if object else ""
        super().__init__(f"{where}: {prefix}{message}")
        self.path = path
        self.line = line
        self.object = object
        self.detail = message


class Unauthorized(GitkrmError):
    reason = "Unauthorized"
    code = 401


class Forbidden(GitkrmError):
    reason = "Forbidden"
    code = 403


class NotFound(GitkrmError):
    reason = "NotFound"
    code = 404
    always_details = True


class MethodNotAllowed(GitkrmError):
    reason = "MethodNotAllowed"
    code = 405


class AlreadyExists(GitkrmError):
    reason = "AlreadyExists"
    code = 409


class Conflict(GitkrmError):
    reason = "Conflict"
    code = 409


class Expired(GitkrmError):
    reason = "Expired"
    code = 410


class RequestEntityTooLarge(GitkrmError):
    reason = "RequestEntityTooLarge"
    code = 413


class UnsupportedMediaType(GitkrmError):
    reason = "UnsupportedMediaType"
    code = 415


class Invalid(GitkrmError):
    """An object failed validation; carries one `Cause` per problem, never just the first."""

    reason = "Invalid"
    code = 422

    @property
    def immutable(self) -> bool:
        """A field that may not change did (see `Cause.immutable`)."""
        return any(c.immutable for c in self.causes)

    @classmethod
    def for_object(cls, *, kind: str, group: str, name: str, causes: Sequence[Cause]) -> Invalid:
        """Build the error with the API server's message shape.

        `Deployment.apps "web" is invalid: [spec.replicas: Invalid value: "x": ..., ...]`
        """
        qualified = f"{kind}.{group}" if group else kind
        if len(causes) == 1:
            body = str(causes[0])
        else:
            body = "[" + ", ".join(str(c) for c in causes) + "]"
        return cls(
            f'{qualified} "{name}" is invalid: {body}',
            details=Details(name=name, group=group, kind=kind, causes=tuple(causes)),
        )


class TooManyRequests(GitkrmError):
    reason = "TooManyRequests"
    code = 429


class InternalError(GitkrmError):
    reason = "InternalError"
    code = 500


class ServiceUnavailable(GitkrmError):
    reason = "ServiceUnavailable"
    code = 503


class Timeout(GitkrmError):
    reason = "Timeout"
    code = 504


_BY_REASON: dict[str, type[GitkrmError]] = {
    c.reason: c
    for c in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        AlreadyExists,
        Conflict,
        Expired,
        RequestEntityTooLarge,
        UnsupportedMediaType,
        Invalid,
        TooManyRequests,
        InternalError,
        ServiceUnavailable,
        Timeout,
    )
}
_BY_CODE: dict[int, type[GitkrmError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Expired,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def from_status(status: dict[str, Any], *, http_code: int | None = None) -> GitkrmError:
    """Rebuild a gitkrm error from a Kubernetes `Status` body (the cluster target uses it)."""
    reason = str(status.get("reason") or "")
    code = int(status.get("code") or http_code or 500)
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code, InternalError)
    det = status.get("details") or {}
    causes = tuple(
        Cause(
            type=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            field=str(c.get("field", "")),
            # An API server says so in words only ("field is immutable", "spec is
            # immutable after creation ..."): read once here, typed from then on.
            immutable="is immutable" in str(c.get("message", "")),
        )
        for c in det.get("causes") or ()
    )
    return cls(
        str(status.get("message") or reason or f"HTTP {code}"),
        details=Details(
            name=str(det.get("name", "")),
            group=str(det.get("group", "")),
            kind=str(det.get("kind", "")),
            causes=causes,
            retry_after_seconds=det.get("retryAfterSeconds"),
        ),
    )
