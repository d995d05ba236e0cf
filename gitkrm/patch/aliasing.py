"""The live order apimachinery sees after merging a list in place (Go slice aliasing).

When a patch carries `$setElementOrder/<field>`, apimachinery first merges the list and
then orders the result by the live list, *reading the live list through a slice that the
merge has written to*: removing `$patch: delete` items shifts the backing array left, and
appending new items writes into its spare capacity. JSON decoding grows slices by
doubling, so a live list of n items has capacity next_pow2(n). Kubernetes' own test
vectors depend on this; reproducing it keeps gitkrm's orders identical to Go's.
"""

from __future__ import annotations

from collections.abc import Hashable

from gitkrm.krm.types import JSONValue
from gitkrm.patch.meta import MergeKey
from gitkrm.patch.order import DELETE, DIRECTIVE


def _capacity(n: int) -> int:
    cap = 1
    while cap < n:
        cap *= 2
    return cap


def _find(items: list[JSONValue], length: int, mk: MergeKey, key: Hashable) -> int:
    for i in range(length):
        item = items[i]
        if isinstance(item, dict) and mk.present(item) and mk.value(item) == key:
            return i
    return -1


def live_order_view(
    original: list[JSONValue], patch: list[JSONValue], mk: MergeKey
) -> list[JSONValue]:
    """The first len(original) slots of the live list's backing array after Go's
    `mergeSliceWithSpecialElements` + `mergeSliceWithoutSpecialElements` ran on it."""
    n = len(original)
    if n == 0:
        return original
    cap = _capacity(n)
    arr: list[JSONValue] = list(original) + [None] * (cap - n)
    length = n
    replace = False
    for v in patch:
        if not isinstance(v, dict) or DIRECTIVE not in v:
            continue
        if v[DIRECTIVE] == DELETE and mk.present(v):
            key = mk.value(v)
            while (i := _find(arr, length, mk, key)) >= 0:
                arr[i : length - 1] = arr[i + 1 : length]
                length -= 1
        elif v[DIRECTIVE] == "replace":
            replace = True
    if replace:
        return arr[:n]
    logical = arr[:length]
    shared = True
    for v in patch:
        if not isinstance(v, dict) or DIRECTIVE in v or not mk.present(v):
            continue
        if _find(logical, len(logical), mk, mk.value(v)) >= 0:
            continue
        logical.append(v)
        if shared and length < cap:
            arr[length] = v
            length += 1
        else:
            shared = False
    return arr[:n]
