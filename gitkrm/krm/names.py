"""Name, label and annotation syntax checks, with apimachinery's exact messages.

Each `is_*` function returns a list of messages (empty = valid) rather than raising, so
callers can collect every problem of an object into one `Invalid` error, as the API
server does. Messages match k8s.io/apimachinery/pkg/util/validation word for word,
because users search for them.
"""

from __future__ import annotations

import re
from enum import StrEnum

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)

# ASCII-only patterns; fullmatch gives Go's ^...$ (Python's $ would accept a trailing \n).
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT, re.ASCII)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT, re.ASCII)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT, re.ASCII)
_QNAME_RE = re.compile(_QNAME_FMT, re.ASCII)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT, re.ASCII)


class NameRule(StrEnum):
    """Which syntax a kind's `metadata.name` must follow (the API server's per-kind choice)."""

    DNS1123_SUBDOMAIN = "DNS1123Subdomain"
    DNS1123_LABEL = "DNS1123Label"
    DNS1035_LABEL = "DNS1035Label"
    PATH_SEGMENT = "PathSegment"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError: the message, examples and the regex used."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Literally as Go builds it, including the double space before "or".
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def _byte_len(value: str) -> int:
    # Go measures strings in bytes; most names are ASCII, where both agree.
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_path_segment_name(value: str) -> list[str]:
    """Names that only have to be usable as one URL path segment (RBAC kinds and others)."""
    for bad in (".", ".."):
        if value == bad:
            return [f"may not be '{bad}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def is_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys, finalizers: `[prefix/]name`, prefix a DNS-1123 subdomain."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs: list[str] = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def validate_name(value: str, rule: NameRule) -> list[str]:
    """Check `value` against the name rule of a kind."""
    if rule is NameRule.DNS1123_SUBDOMAIN:
        return is_dns1123_subdomain(value)
    if rule is NameRule.DNS1123_LABEL:
        return is_dns1123_label(value)
    if rule is NameRule.DNS1035_LABEL:
        return is_dns1035_label(value)
    return is_path_segment_name(value)
