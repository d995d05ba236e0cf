"""Table rows of the cluster-level GA kinds: APIService, CertificateSigningRequest,
FlowSchema, PriorityLevelConfiguration and RuntimeClass (kube's printers.go and
kube-aggregator's APIService table)."""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.krm import Obj
from gitkrm.server.humanize import human_duration
from gitkrm.server.printing import AGE, NAME, NONE, Column, Printer, age, m, name_of


def _conditions(obj: Obj) -> list[Mapping[str, object]]:
    found = m(obj, "status", "conditions")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def _api_service(svc: Obj, now: float) -> list[object]:
    ref = m(svc, "spec", "service")
    where = (
        f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(ref, Mapping) else "Local"
    )
    available = "Unknown"
    for c in _conditions(svc):
        if c.get("type") == "Available":
            status, reason = str(c.get("status", "")), c.get("reason")
            available = f"{status} ({reason})" if status != "True" and reason else status
            break
    return [name_of(svc), where, available, age(svc, now)]


API_SERVICE = Printer(
    (
        NAME,
        Column("Service", description="The reference to the service that hosts this API endpoint."),
        Column("Available", description="Whether this service is available."),
        AGE,
    ),
    _api_service,
)


def _csr_condition(csr: Obj) -> str:
    kinds = {str(c.get("type")) for c in _conditions(csr) if c.get("status") != "False"}
    status = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        status += ",Failed"
    if m(csr, "status", "certificate"):
        status += ",Issued"
    return status


def _csr(csr: Obj, now: float) -> list[object]:
    seconds = m(csr, "spec", "expirationSeconds")
    return [
        name_of(csr),
        age(csr, now),
        m(csr, "spec", "signerName") or NONE,
        m(csr, "spec", "username") or "",
        human_duration(seconds) if type(seconds) is int else NONE,
        _csr_condition(csr),
    ]


CSR = Printer(
    (
        NAME,
        AGE,
        Column("SignerName", description="The requested signer of the certificate."),
        Column("Requestor", description="Name of the user which made this request."),
        Column("RequestedDuration", description="The requested validity of the certificate."),
        Column(
            "Condition",
            description="Condition indicates whether the request has been approved, denied "
            "or has failed.",
        ),
    ),
    _csr,
)


def _flow_schema(fs: Obj, now: float) -> list[object]:
    method = m(fs, "spec", "distinguisherMethod", "type")
    dangling = next((c.get("status") for c in _conditions(fs) if c.get("type") == "Dangling"), "?")
    precedence = m(fs, "spec", "matchingPrecedence")
    return [
        name_of(fs),
        m(fs, "spec", "priorityLevelConfiguration", "name") or "",
        precedence if type(precedence) is int else 1000,
        method or NONE,
        age(fs, now),
        dangling,
    ]


FLOW_SCHEMA = Printer(
    (
        NAME,
        Column("PriorityLevel", description="The priority level this schema's requests go to."),
        Column("MatchingPrecedence", "integer", description="Lower matches first."),
        Column("DistinguisherMethod", description="How flows are told apart."),
        AGE,
        Column("MissingPL", description="Whether the priority level it names is missing."),
    ),
    _flow_schema,
)


def _priority_level(pl: Obj, now: float) -> list[object]:
    shares: object = NONE
    queues: object = NONE
    hand: object = NONE
    limit: object = NONE
    limited = m(pl, "spec", "limited")
    if isinstance(limited, Mapping):
        shares = limited.get("nominalConcurrencyShares", 30)
        queuing = m(pl, "spec", "limited", "limitResponse", "queuing")
        if isinstance(queuing, Mapping):
            queues, hand = queuing.get("queues", 64), queuing.get("handSize", 8)
            limit = queuing.get("queueLengthLimit", 50)
    return [name_of(pl), m(pl, "spec", "type") or "", shares, queues, hand, limit, age(pl, now)]


PRIORITY_LEVEL = Printer(
    (
        NAME,
        Column("Type", description="Exempt or Limited."),
        Column("NominalConcurrencyShares", description="The level's share of concurrency."),
        Column("Queues", description="The number of queues."),
        Column("HandSize", description="Queues a flow is dealt."),
        Column("QueueLengthLimit", description="Requests a queue may hold."),
        AGE,
    ),
    _priority_level,
)


def _runtime_class(rc: Obj, now: float) -> list[object]:
    return [name_of(rc), rc.get("handler") or "", age(rc, now)]


RUNTIME_CLASS = Printer(
    (NAME, Column("Handler", description="The CRI handler of the class."), AGE),
    _runtime_class,
)
