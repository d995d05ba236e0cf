"""Secret `stringData`: merged into `data` (base64) on write, as the v1 conversion does."""

from __future__ import annotations

import base64

from gitkrm.krm.types import Obj


def merge_string_data(secret: Obj) -> None:
    """Move `stringData` into `data` base64-encoded; stringData wins on equal keys."""
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = secret.get("data")
    if not isinstance(data, dict):
        data = secret["data"] = {}
    for key, value in string_data.items():
        if isinstance(value, str):
            data[key] = base64.b64encode(value.encode()).decode("ascii")
        else:
            data[key] = value
