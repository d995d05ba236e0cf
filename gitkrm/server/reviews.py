"""Access and identity reviews (authorization.k8s.io/v1, authentication.k8s.io/v1).

They are answered, never stored, as kube-apiserver does. gitkrm has no authorization: the
one token (or loopback) gives full access, so the answers are those of kube-apiserver with
`--authorization-mode=AlwaysAllow`: every access review is allowed (no reason given) and
the rules review lists `*`. That is what `kubectl auth can-i` (yes, exit 0), `auth can-i
--list` and `auth whoami` show, instead of a 404 that reads as "no".
"""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from gitkrm.errors import Cause, Invalid
from gitkrm.krm import Obj
from gitkrm.schema.fielderrors import invalid, required
from gitkrm.server.context import ServerContext
from gitkrm.server.objects import decoded_object, params_of
from gitkrm.server.paths import Target
from gitkrm.server.responses import object_response

GROUPS: Final = frozenset({"authorization.k8s.io", "authentication.k8s.io"})
USERNAME: Final = "gitkrm"  # the user the written kubeconfig names
USER_GROUPS: Final = ("system:masters", "system:authenticated")
_ACCESS_KINDS: Final = frozenset(
    {"SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"}
)


def _access_causes(kind: str, spec: dict[str, Any], namespace: str | None) -> list[Cause]:
    """pkg/apis/authorization/validation: the checks of an access review's spec."""
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if res is None and non is None:
        causes.append(
            required(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    elif res is not None and non is not None:
        causes.append(
            invalid(
                "spec.nonResourceAttributes",
                non,
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(
            invalid(
                "spec.user", spec.get("user", ""), "at least one of user or group must be specified"
            )
        )
    local = kind == "LocalSubjectAccessReview"
    if local and isinstance(res, dict) and (res.get("namespace") or "") != (namespace or ""):
        causes.append(
            invalid(
                "spec.resourceAttributes.namespace",
                res.get("namespace", ""),
                "must match metadata.namespace",
            )
        )
    return causes


def _status(obj: Obj) -> dict[str, Any]:
    kind = obj["kind"]
    if kind in _ACCESS_KINDS:
        return {"allowed": True}
    if kind == "SelfSubjectRulesReview":
        return {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    if kind == "SelfSubjectReview":
        return {"userInfo": {"username": USERNAME, "groups": list(USER_GROUPS)}}
    # TokenReview: the server's own token is checked by its middleware, not reviewed here.
    return {"authenticated": False, "error": "gitkrm does not review tokens"}


async def create(ctx: ServerContext, request: Request, target: Target) -> Response:
    """Answer a review: the request's object with its `status` filled in (201)."""
    wp = params_of(request, "CreateOptions")
    obj, warnings = await decoded_object(ctx, request, target, wp.field_validation)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if obj["kind"] in _ACCESS_KINDS:
        causes = _access_causes(obj["kind"], spec, target.namespace)
        if causes:
            raise Invalid.for_object(
                kind=obj["kind"], group=target.info.group, name="", causes=causes
            )
    obj["status"] = _status(obj)
    return object_response(obj, status=201, warnings=warnings)
