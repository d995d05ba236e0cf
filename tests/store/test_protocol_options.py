"""The write keywords of the Store protocol, as one checked value (WriteOptions)."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.krm import FieldValidation
from gitkrm.store.protocol import WriteOptions


def test_write_options_of_the_keywords() -> None:
    assert WriteOptions.of() == WriteOptions()
    opts = WriteOptions.of(dry_run=True, field_manager="m", force=True, field_validation="Warn")
    assert opts == WriteOptions(True, "m", True, FieldValidation.WARN)
    with pytest.raises(BadRequest, match='invalid fieldValidation "Loose"'):
        WriteOptions.of(field_validation="Loose")
