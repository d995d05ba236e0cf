"""API-server rules of workloads: Pods, pod templates and the controllers that own them.

pkg/apis/apps/validation and pkg/apis/batch/validation (1.33): the selector is required,
non-empty and matches the template labels; replicas and other counts are non-negative;
rolling-update parameters are valid; restart policies fit the kind; then the pod rules.
`fast=True` (fastpath.py) skips what the fast-path schema already checked.
"""

from __future__ import annotations

import re

from gitkrm.errors import BadRequest, Cause
from gitkrm.krm.labels import label_selector_from_dict
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.rules_pod import validate_labels, validate_pod_spec, validate_pod_template

_NONNEG = "must be greater than or equal to 0"
_MAX_CRONJOB_NAME = 52
_PERCENT = re.compile(r"[0-9]+%", re.ASCII)
_PERCENTS = {f"{n}%": n for n in range(101)}
_JOB_RESTART = ("OnFailure", "Never")
_DEADLINE_OWNERS = {
    "deployment": "ReplicaSet",
    "daemonset": "DaemonSet",
    "statefulset": "StatefulSet",
}


def _nonneg(spec: Obj, keys: tuple[str, ...], path: str, out: list[Cause]) -> None:
    for key in keys:
        value = spec.get(key)
        if type(value) is int and value < 0:
            out.append(fe.invalid(f"{path}.{key}", value, _NONNEG))


def _selector_matches(
    selector: Obj, labels: object, path: str, out: list[Cause], fast: bool
) -> bool | None:
    """Whether a structured selector matches `labels`; None when the selector is empty.

    Also validates the selector (label syntax, operators) as ValidateLabelSelector does.
    """
    match_labels = selector.get("matchLabels")
    if not selector.get("matchExpressions") and isinstance(match_labels, dict):
        if not match_labels:
            return None
        if not fast:
            validate_labels(match_labels, path + ".matchLabels", out)
        if not isinstance(labels, dict):
            return False
        for k, v in match_labels.items():  # noqa: SIM110 (all() builds a generator per call)
            if labels.get(k) != v:
                return False
        return True
    try:
        compiled = label_selector_from_dict(selector)
    except BadRequest as e:
        out.append(fe.invalid(path, selector, e.message))
        return False
    if compiled.empty:
        return None
    return compiled.matches(labels if isinstance(labels, dict) else {})


def _template_for_selector(
    spec: Obj,
    path: str,
    out: list[Cause],
    *,
    kind: str,
    restart: tuple[str, ...],
    fast: bool,
    pod_spec: bool = True,
) -> None:
    """Selector required, non-empty and matching the template labels; template rules.

    `pod_spec=False` for StatefulSets: the API server checks only their template's labels
    (ValidatePodTemplateSpecForStatefulSet leaves the pod spec, whose volume mounts may
    name volume claim templates, to the pods).
    """
    selector = spec.get("selector")
    template = spec.get("template")
    tmeta = template.get("metadata") if isinstance(template, dict) else None
    labels = tmeta.get("labels") if isinstance(tmeta, dict) else None
    if not isinstance(selector, dict):
        out.append(fe.required(path + ".selector"))
    else:
        matched = _selector_matches(selector, labels, path + ".selector", out, fast)
        if matched is None:
            out.append(
                fe.invalid(path + ".selector", selector, f"empty selector is invalid for {kind}")
            )
        elif not matched:
            out.append(
                fe.invalid(
                    path + ".template.metadata.labels",
                    labels or {},
                    "`selector` does not match template `labels`",
                )
            )
    if not isinstance(template, dict):
        out.append(fe.required(path + ".template"))
        return
    if pod_spec:
        out.extend(
            validate_pod_template(
                template, path + ".template", fast=fast, labels_defaulted=kind == "job"
            )
        )
    elif not fast and isinstance(tmeta, dict) and tmeta.get("labels"):
        validate_labels(tmeta["labels"], path + ".template.metadata.labels", out)
    pod = template.get("spec")
    if isinstance(pod, dict):
        _restart_policy(pod, path + ".template.spec.restartPolicy", restart, out, job=kind == "job")
        owner = _DEADLINE_OWNERS.get(kind)
        if owner and pod.get("activeDeadlineSeconds") is not None:
            out.append(
                fe.forbidden(
                    path + ".template.spec.activeDeadlineSeconds",
                    f"activeDeadlineSeconds in {owner} is not Supported",
                )
            )


def _restart_policy(
    pod: Obj, path: str, allowed: tuple[str, ...], out: list[Cause], *, job: bool
) -> None:
    """A template's restart policy must fit its owner. A Job's template defaults to
    Always, so the API server words that case as a missing value."""
    policy = pod.get("restartPolicy")
    if policy in allowed:
        return
    if job and policy in ("Always", "", None):
        out.append(fe.required(path, 'valid values: "OnFailure", "Never"'))
    else:
        out.append(fe.not_supported(path, policy or "", allowed))


def _int_or_percent(value: object, path: str, out: list[Cause]) -> int | None:
    """The numeric part of an IntOrString percent/int; records its errors."""
    known = _PERCENTS.get(value) if type(value) is str else None
    if known is not None:
        return known
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if value < 0:
            out.append(fe.invalid(path, value, _NONNEG))
        return value
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            out.append(
                fe.invalid(
                    path,
                    value,
                    "a valid percent string must be a numeric string "
                    "followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                    "validation is '[0-9]+%')",
                )
            )
            return None
        number = int(value[:-1])
        if number > 100:
            out.append(fe.invalid(path, value, "must not be greater than 100%"))
        return number
    return None


def _rolling_update(
    rolling: object, path: str, out: list[Cause], *, surge_key: bool = True
) -> None:
    if not isinstance(rolling, dict):
        return
    unavailable = _int_or_percent(rolling.get("maxUnavailable"), path + ".maxUnavailable", out)
    surge = _int_or_percent(rolling.get("maxSurge"), path + ".maxSurge", out)
    if surge_key and unavailable == 0 and surge == 0:
        out.append(
            fe.invalid(
                path + ".maxUnavailable",
                rolling.get("maxUnavailable"),
                "may not be 0 when `maxSurge` is 0",
            )
        )


def deployment(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(
            spec,
            ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"),
            "spec",
            out,
        )
    _template_for_selector(spec, "spec", out, kind="deployment", restart=("Always",), fast=fast)
    strategy = spec.get("strategy")
    if isinstance(strategy, dict):
        stype = strategy.get("type")
        if stype == "Recreate" and strategy.get("rollingUpdate") is not None:
            out.append(
                fe.forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
        elif stype == "RollingUpdate":
            _rolling_update(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate", out)
        elif stype not in (None, "Recreate"):
            out.append(fe.not_supported("spec.strategy.type", stype, ("Recreate", "RollingUpdate")))
    deadline = spec.get("progressDeadlineSeconds")
    ready = spec.get("minReadySeconds") or 0
    if isinstance(deadline, int) and isinstance(ready, int) and deadline <= ready:
        out.append(
            fe.invalid(
                "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
            )
        )
    return out


def replica_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("replicas", "minReadySeconds"), "spec", out)
    _template_for_selector(spec, "spec", out, kind="deployment", restart=("Always",), fast=fast)
    return out


def stateful_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("replicas", "minReadySeconds", "revisionHistoryLimit"), "spec", out)
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "OrderedReady", "Parallel"):
        out.append(
            fe.not_supported("spec.podManagementPolicy", policy, ("OrderedReady", "Parallel"))
        )
    _template_for_selector(
        spec, "spec", out, kind="statefulset", restart=("Always",), fast=fast, pod_spec=False
    )
    return out


def daemon_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("minReadySeconds", "revisionHistoryLimit"), "spec", out)
    _template_for_selector(spec, "spec", out, kind="daemonset", restart=("Always",), fast=fast)
    strategy = spec.get("updateStrategy")
    if isinstance(strategy, dict) and strategy.get("type") == "RollingUpdate":
        _rolling_update(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate", out)
    return out


def _job_spec(spec: object, path: str, out: list[Cause], fast: bool) -> None:
    if not isinstance(spec, dict):
        out.append(fe.required(path))
        return
    _nonneg(
        spec,
        (
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
        ),
        path,
        out,
    )
    if spec.get("manualSelector") is True or spec.get("selector") is not None:
        _template_for_selector(spec, path, out, kind="job", restart=_JOB_RESTART, fast=fast)
        return
    template = spec.get("template")
    if not isinstance(template, dict):
        out.append(fe.required(path + ".template"))
        return
    pod = template.get("spec")
    out.extend(
        validate_pod_template(template, path + ".template", fast=fast, labels_defaulted=True)
    )
    if isinstance(pod, dict):
        _restart_policy(pod, path + ".template.spec.restartPolicy", _JOB_RESTART, out, job=True)


def job(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    _job_spec(obj.get("spec"), "spec", out, fast)
    return out


def cron_job(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(name, str) and len(name) > _MAX_CRONJOB_NAME:
        out.append(
            fe.invalid(
                "metadata.name", name, f"must be no more than {_MAX_CRONJOB_NAME} characters"
            )
        )
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*out, fe.required("spec")]
    if not spec.get("schedule"):
        out.append(fe.required("spec.schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy not in (None, "Allow", "Forbid", "Replace"):
        out.append(
            fe.not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace"))
        )
    _nonneg(
        spec,
        ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"),
        "spec",
        out,
    )
    job_template = spec.get("jobTemplate")
    job_spec = job_template.get("spec") if isinstance(job_template, dict) else None
    _job_spec(job_spec, "spec.jobTemplate.spec", out, fast)
    return out


def pod(obj: Obj, fast: bool) -> list[Cause]:
    if "spec" not in obj:
        return [fe.required("spec")]
    return validate_pod_spec(obj.get("spec"), "spec", fast=fast)


def pod_template(obj: Obj, fast: bool) -> list[Cause]:
    template = obj.get("template")
    if not isinstance(template, dict):
        return [fe.required("template")]
    return validate_pod_template(template, "template", fast=fast)


def replication_controller(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    _nonneg(spec, ("replicas",), "spec", out)
    selector = spec.get("selector")
    template = spec.get("template")
    if not selector:
        out.append(fe.required("spec.selector"))
    if not isinstance(template, dict):
        out.append(fe.required("spec.template"))
        return out
    labels = (template.get("metadata") or {}).get("labels") or {}
    if (
        isinstance(selector, dict)
        and selector
        and isinstance(labels, dict)
        and any(labels.get(k) != v for k, v in selector.items())
    ):
        out.append(
            fe.invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    out.extend(validate_pod_template(template, "spec.template", fast=fast))
    return out
