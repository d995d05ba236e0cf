"""`Link` headers (RFC 8288) as registries and Git hosts write them."""

from __future__ import annotations

import pytest

from gitkrm.source.links import next_link


@pytest.mark.parametrize(
    ("header", "target"),
    [
        ('</v2/x/tags/list?n=100&last=b>; rel="next"', "/v2/x/tags/list?n=100&last=b"),
        ("</v2/x/tags/list?last=b>; rel=next", "/v2/x/tags/list?last=b"),  # registry:2 unquoted
        ('<https://h/r?page=1>; rel="prev", <https://h/r?page=3>; rel="next"',
         "https://h/r?page=3"),
        ('<https://h/r?page=3>; REL="Next"', "https://h/r?page=3"),
        ('<https://h/r?page=9>; rel="last next"', "https://h/r?page=9"),
        ('<https://h/r?page=1>; rel="first"', None),
        ('https://h/r?page=2; rel="next"', None),  # no <...>
        ("", None),
        (None, None),
    ],
)  # fmt: skip
def test_the_next_link_wherever_it_stands(header: str | None, target: str | None) -> None:
    assert next_link(header) == target
