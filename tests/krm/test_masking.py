"""Values from Secrets are masked in any text, with their base64 and escaped forms."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from gitkrm.krm import masking


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    masking.forget_all()
    yield
    masking.forget_all()


def test_remembered_values_are_masked_in_every_form() -> None:
    assert masking.mask("nothing remembered") == "nothing remembered"
    masking.remember(["hunter2-pass", 'two\nlines "q"', "no"])
    b64 = base64.b64encode(b"hunter2-pass").decode()
    assert masking.mask(f"a hunter2-pass b {b64} c") == "a *** b *** c"
    assert masking.mask('json: "two\\nlines \\"q\\""') == 'json: "***"'
    assert masking.mask('x lines "q" y') == "x *** y"  # one line of it
    assert masking.mask("no, short values stay") == "no, short values stay"
    assert masking.active()


def test_the_longest_value_wins_where_values_overlap() -> None:
    masking.remember(["abcd", "abcdefgh"])
    assert masking.mask("xabcdefghx abcd") == "x***x ***"
