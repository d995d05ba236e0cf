"""Query parameters (and DeleteOptions bodies) of Kubernetes requests, validated as
kube-apiserver validates them."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from starlette.datastructures import QueryParams

from gitkrm.errors import BadRequest, Cause, Invalid
from gitkrm.krm import FieldValidation
from gitkrm.store import Preconditions, Propagation

MAX_FIELD_MANAGER: Final = 128
MIN_WATCH_TIMEOUT: Final = 1800  # kube-apiserver's --min-request-timeout


def _invalid_options(kind: str, field: str, message: str, reason: str) -> Invalid:
    return Invalid.for_object(
        kind=kind, group="meta.k8s.io", name="", causes=[Cause(reason, message, field)]
    )


def _bool(q: QueryParams, name: str) -> bool:
    v = q.get(name)
    if v is None or v == "":
        return False
    if v in ("true", "True", "1", "t", "T", "TRUE"):
        return True
    if v in ("false", "False", "0", "f", "F", "FALSE"):
        return False
    raise BadRequest(f'invalid value for {name}: "{v}": must be a boolean')


def _int(q: QueryParams, name: str) -> int | None:
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise BadRequest(f'invalid value for {name}: "{v}": must be an integer') from None


@dataclass(frozen=True, slots=True)
class ListParams:
    label_selector: str | None = None
    field_selector: str | None = None
    limit: int | None = None
    continue_: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    watch: bool = False
    allow_bookmarks: bool = False
    timeout_seconds: int | None = None
    send_initial_events: bool | None = None

    def watch_timeout(self) -> float:
        """Seconds a watch stream lasts: timeoutSeconds, or kube's randomized default."""
        if self.timeout_seconds is not None and self.timeout_seconds > 0:
            return float(self.timeout_seconds)
        return MIN_WATCH_TIMEOUT * (1.0 + random.random())


def list_params(q: QueryParams, *, watch_path: bool = False) -> ListParams:
    rvm = q.get("resourceVersionMatch") or None
    rv = q.get("resourceVersion")
    if rvm is not None:
        if rvm not in ("Exact", "NotOlderThan"):
            raise _invalid_options(
                "ListOptions",
                "resourceVersionMatch",
                f'Unsupported value: "{rvm}": supported values: "Exact", "NotOlderThan"',
                "FieldValueNotSupported",
            )
        if not rv:
            raise _invalid_options(
                "ListOptions",
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                "FieldValueForbidden",
            )
        if rvm == "Exact" and rv == "0":
            raise _invalid_options(
                "ListOptions",
                "resourceVersionMatch",
                'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                "FieldValueForbidden",
            )
    sie = q.get("sendInitialEvents")
    return ListParams(
        label_selector=q.get("labelSelector") or None,
        field_selector=q.get("fieldSelector") or None,
        limit=_int(q, "limit"),
        continue_=q.get("continue") or None,
        resource_version=rv,
        resource_version_match=rvm,
        watch=watch_path or _bool(q, "watch"),
        allow_bookmarks=_bool(q, "allowWatchBookmarks"),
        timeout_seconds=_int(q, "timeoutSeconds"),
        send_initial_events=None if sie is None else _bool(q, "sendInitialEvents"),
    )


@dataclass(frozen=True, slots=True)
class WriteParams:
    dry_run: bool = False
    field_manager: str | None = None
    field_validation: FieldValidation = FieldValidation.WARN
    force: bool = False
    force_given: bool = False  # `force` was in the query (only an apply patch may carry it)
    user_agent_manager: str | None = None  # the User-Agent's prefix (managerOrUserAgent)

    @property
    def manager(self) -> str | None:
        """The manager of a non-apply write: fieldManager, else the User-Agent's prefix
        (the API server's managerOrUserAgent)."""
        return self.field_manager or self.user_agent_manager


def prefix_from_user_agent(user_agent: str | None) -> str | None:
    """`kubectl/v1.32.0 (linux/amd64) kubernetes/abc` -> `kubectl`: the characters before the
    first '/', without unprintable ones, at most 128 bytes (apiserver's prefixFromUserAgent)."""
    if not user_agent:
        return None
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable():
            continue
        n = len(ch.encode())
        if size + n > MAX_FIELD_MANAGER:
            break
        out.append(ch)
        size += n
    return "".join(out) or None


def check_patch_options(wp: WriteParams, *, apply: bool) -> None:
    """ValidatePatchOptions: an apply patch names its fieldManager; only it may carry force."""
    if apply:
        if not wp.field_manager:
            raise _invalid_options(
                "PatchOptions",
                "fieldManager",
                "Required value: is required for apply patch",
                "FieldValueRequired",
            )
    elif wp.force_given:
        raise _invalid_options(
            "PatchOptions",
            "force",
            "Forbidden: may not be specified for non-apply patch",
            "FieldValueForbidden",
        )


def _dry_run(values: list[str], kind: str) -> bool:
    for v in values:
        if v != "All":
            raise _invalid_options(
                kind,
                "dryRun",
                f'Unsupported value: "{v}": supported values: "All"',
                "FieldValueNotSupported",
            )
    return bool(values)


def write_params(q: QueryParams, *, kind: str, user_agent: str | None = None) -> WriteParams:
    """dryRun, fieldManager, fieldValidation (default Warn, as on a cluster) and force.

    `kind` names the options kind in errors: CreateOptions, UpdateOptions, PatchOptions;
    `user_agent` gives the manager of writes that name no fieldManager.
    """
    fm = q.get("fieldManager") or None
    if fm is not None:
        if len(fm.encode()) > MAX_FIELD_MANAGER:
            raise _invalid_options(
                kind,
                "fieldManager",
                f"Too long: may not be more than {MAX_FIELD_MANAGER} bytes",
                "FieldValueTooLong",
            )
        if not fm.isprintable():
            raise _invalid_options(
                kind,
                "fieldManager",
                f"Invalid value: {fm!r}: must only contain printable characters",
                "FieldValueInvalid",
            )
    fv_raw = q.get("fieldValidation") or ""
    if fv_raw == "":
        fv = FieldValidation.WARN
    else:
        try:
            fv = FieldValidation(fv_raw)
        except ValueError:
            raise _invalid_options(
                kind,
                "fieldValidation",
                f'Unsupported value: "{fv_raw}": supported values: "Ignore", "Strict", "Warn"',
                "FieldValueNotSupported",
            ) from None
    force = _bool(q, "force")
    return WriteParams(
        dry_run=_dry_run(q.getlist("dryRun"), kind),
        field_manager=fm,
        field_validation=fv,
        force=force,
        force_given="force" in q,
        user_agent_manager=prefix_from_user_agent(user_agent),
    )


_CACHED_QUERY_BYTES: Final = 1024  # longer queries are parsed each time (bounded memory)


def cached_write_params(query_string: bytes, *, kind: str, user_agent: str | None) -> WriteParams:
    """write_params of a raw query string, remembered: a client's writes repeat the same
    query (fieldManager, fieldValidation), and parsing it was a twentieth of a create.
    Errors are not remembered (they raise)."""
    if len(query_string) > _CACHED_QUERY_BYTES or (
        user_agent is not None and len(user_agent) > _CACHED_QUERY_BYTES
    ):
        return _write_params_of(query_string, kind, user_agent)
    return _cached_write_params(query_string, kind, user_agent)


def _write_params_of(query_string: bytes, kind: str, user_agent: str | None) -> WriteParams:
    q = QueryParams(query_string.decode("latin-1"))
    return write_params(q, kind=kind, user_agent=user_agent)


_cached_write_params = functools.lru_cache(maxsize=256)(_write_params_of)


@dataclass(frozen=True, slots=True)
class DeleteParams:
    propagation: Propagation | None = None
    preconditions: Preconditions | None = None
    grace_period_seconds: int | None = None
    dry_run: bool = False
    orphan_dependents: bool | None = None


def _propagation(value: Any) -> Propagation | None:
    if value is None or value == "":
        return None
    try:
        return Propagation(value)
    except ValueError:
        raise _invalid_options(
            "DeleteOptions",
            "propagationPolicy",
            f'Unsupported value: "{value}": supported values: "Foreground", "Background", '
            '"Orphan", "nil"',
            "FieldValueNotSupported",
        ) from None


def _combine(
    propagation: Propagation | None, orphan: bool | None, grace: int | None
) -> Propagation | None:
    if orphan is not None and propagation is not None:
        raise _invalid_options(
            "DeleteOptions",
            "propagationPolicy",
            "Invalid value: "
            f'"{propagation.value}": orphanDependents and deletionPropagation cannot be both set',
            "FieldValueInvalid",
        )
    if grace is not None and grace < 0:
        raise _invalid_options(
            "DeleteOptions",
            "gracePeriodSeconds",
            f"Invalid value: {grace}: must be >= 0",
            "FieldValueInvalid",
        )
    if orphan is not None:
        return Propagation.ORPHAN if orphan else Propagation.BACKGROUND
    return propagation


def delete_params(q: QueryParams, body: Mapping[str, Any] | None) -> DeleteParams:
    """DeleteOptions from the body when there is one, else from the query (as kube does)."""
    if body is None:
        orphan_raw = q.get("orphanDependents")
        orphan = None if orphan_raw in (None, "") else _bool(q, "orphanDependents")
        grace = _int(q, "gracePeriodSeconds")
        prop = _propagation(q.get("propagationPolicy"))
        return DeleteParams(
            propagation=_combine(prop, orphan, grace),
            grace_period_seconds=grace,
            dry_run=_dry_run(q.getlist("dryRun"), "DeleteOptions"),
            orphan_dependents=orphan,
        )
    kind = body.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        raise BadRequest(f'expected a DeleteOptions body, got kind "{kind}"')
    orphan = body.get("orphanDependents")
    if orphan is not None and not isinstance(orphan, bool):
        raise BadRequest("DeleteOptions.orphanDependents must be a boolean")
    grace = body.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise BadRequest("DeleteOptions.gracePeriodSeconds must be an integer")
    pre = body.get("preconditions")
    preconditions = None
    if pre is not None:
        if not isinstance(pre, Mapping):
            raise BadRequest("DeleteOptions.preconditions must be an object")
        uid, rv = pre.get("uid"), pre.get("resourceVersion")
        if (uid is not None and not isinstance(uid, str)) or (
            rv is not None and not isinstance(rv, str)
        ):
            raise BadRequest("DeleteOptions.preconditions: uid and resourceVersion are strings")
        if uid or rv:
            preconditions = Preconditions(uid=uid or None, resource_version=rv or None)
    dry = body.get("dryRun") or []
    if not isinstance(dry, list) or not all(isinstance(d, str) for d in dry):
        raise BadRequest("DeleteOptions.dryRun must be a list of strings")
    query_dry = _dry_run(q.getlist("dryRun"), "DeleteOptions")
    return DeleteParams(
        propagation=_combine(_propagation(body.get("propagationPolicy")), orphan, grace),
        preconditions=preconditions,
        grace_period_seconds=grace,
        dry_run=_dry_run(dry, "DeleteOptions") or query_dry,
        orphan_dependents=orphan,
    )
