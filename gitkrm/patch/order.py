"""Order of merged lists: the `$setElementOrder` rules of apimachinery, element for element.

After a merge, items named by the patch come in the patch's (or `$setElementOrder`'s)
order and items only the live object has keep their live order, interleaved "with best
effort" (design proposal preserve-order-in-strategic-merge-patch). Identity of an item is
its merge key for lists of maps and the value itself for lists of scalars.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.failures import NO_LIST_OF_LISTS, PatchFailure, bad_arg_type
from gitkrm.patch.meta import MergeKey
from gitkrm.patch.values import LIST, MAP, gofmt, hkey, kind

DIRECTIVE = "$patch"
DELETE = "delete"


def no_merge_key(m: JSONObject, mk: MergeKey | str) -> PatchFailure:
    return PatchFailure(f"map: {gofmt(m)} does not contain declared merge key: {mk}")


def element_kind(*lists: list[JSONValue]) -> str:
    """apimachinery `sliceElementType`: all items share one JSON kind, never a list."""
    prev: str | None = None
    for s in lists:
        for v in s:
            k = kind(v)
            if prev is None:
                if k == LIST:
                    raise PatchFailure(NO_LIST_OF_LISTS, unprocessable=True)
                prev = k
            elif prev != k:
                text = " ".join(gofmt(x) for x in lists)
                raise PatchFailure(f"list element types are not identical: [{text}]")
    if prev is None:
        raise PatchFailure("no elements in any of the given slices")
    return prev


def identity(item: JSONValue, mk: MergeKey | None, k: str) -> Hashable:
    """What Go's `index()` compares: the merge key of a map, or the scalar itself."""
    try:
        if k == MAP:
            if mk is None or not isinstance(item, dict):
                return None
            return mk.value(item)
        return hkey(item)
    except TypeError as e:
        raise PatchFailure("list items must be scalars or maps with scalar merge keys") from e


def positions(order: Sequence[JSONValue], mk: MergeKey | None, k: str) -> dict[Hashable, int]:
    """Index of the first occurrence of each identity in `order`."""
    out: dict[Hashable, int] = {}
    for i, item in enumerate(order):
        out.setdefault(identity(item, mk, k), i)
    return out


def validate_merge_keys(mk: MergeKey | None, *lists: Sequence[JSONValue]) -> None:
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
            if mk is None or not mk.present(item):
                raise no_merge_key(item, mk or "")


def normalize_slice_order(
    to_sort: list[JSONValue], order: Sequence[JSONValue], mk: MergeKey | None, k: str
) -> list[JSONValue]:
    """Sort `to_sort` by position in `order`; `$patch: delete` items go last."""
    to_delete: list[JSONValue] = []
    if k == MAP:
        validate_merge_keys(mk, to_sort, order)
        # Every item is a map with its merge key (validate_merge_keys raised otherwise).
        keep: list[JSONValue] = [
            v for v in to_sort if isinstance(v, dict) and v.get(DIRECTIVE) != DELETE
        ]
        if len(keep) != len(to_sort):
            to_delete = [v for v in to_sort if isinstance(v, dict) and v.get(DIRECTIVE) == DELETE]
        to_sort = keep
    if len(to_sort) > 1:
        where = positions(order, mk, k)
        pos = [where.get(identity(v, mk, k), -1) for v in to_sort]
        if min(pos) >= 0:
            ranked = sorted(range(len(to_sort)), key=pos.__getitem__)
            to_sort = [to_sort[i] for i in ranked]
        else:
            to_sort = _go_stable_sort(to_sort, pos)
    else:
        to_sort = list(to_sort)
    return to_sort + to_delete


def merge_sorted(
    left: list[JSONValue],
    right: list[JSONValue],
    server_order: list[JSONValue],
    mk: MergeKey | None,
    k: str,
) -> list[JSONValue]:
    """Interleave server-only items (`left`) into patch items (`right`) by live order."""
    if not left:
        return list(right)
    if not right:
        return list(left)
    where = positions(server_order, mk, k)
    out: list[JSONValue] = []
    i = j = 0
    while i < len(left) and j < len(right):
        li = where.get(identity(left[i], mk, k), -1)
        ri = where.get(identity(right[j], mk, k), -1)
        if li >= 0 and ri >= 0 and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


def normalize_element_order(
    patch: list[JSONValue],
    server_only: list[JSONValue],
    patch_order: list[JSONValue],
    server_order: list[JSONValue],
    mk: MergeKey | None,
    k: str,
) -> list[JSONValue]:
    patch = normalize_slice_order(patch, patch_order, mk, k)
    server_only = normalize_slice_order(server_only, server_order, mk, k)
    return merge_sorted(server_only, patch, server_order, mk, k)


def partition(
    merged: list[JSONValue], by: list[JSONValue], mk: MergeKey | None
) -> tuple[list[JSONValue], list[JSONValue]]:
    """Split merged items into those named in `by` and the rest (server-only)."""
    if mk is None:
        try:
            named = {hkey(v) for v in by}
            flags = [hkey(v) in named for v in merged]
        except TypeError as e:
            raise PatchFailure("list items must be scalars or maps with a merge key") from e
    else:
        named = set()
        for v in by:
            if not isinstance(v, dict):
                raise PatchFailure(f"value for key {gofmt(v)} is not a map")
            if mk.present(v):
                named.add(mk.value(v))
        flags = []
        for v in merged:
            if not isinstance(v, dict):
                raise bad_arg_type("map[string]interface {}", v)
            if not mk.present(v):
                raise no_merge_key(v, mk)
            flags.append(mk.value(v) in named)
    inside = [v for v, f in zip(merged, flags, strict=True) if f]
    outside = [v for v, f in zip(merged, flags, strict=True) if not f]
    return inside, outside


def _go_stable_sort(items: list[JSONValue], pos: list[int]) -> list[JSONValue]:
    """Go `sort.SliceStable` with apimachinery's partial order (unknown items "less").

    Only reached when some item is missing from the order list; then the result depends
    on Go's algorithm (insertion sort in blocks of 20, then SymMerge), reproduced here.
    """
    data = list(zip(pos, items, strict=True))

    def less(i: int, j: int) -> bool:
        pi, pj = data[i][0], data[j][0]
        return pi < pj if pi >= 0 and pj >= 0 else True

    def swap(i: int, j: int) -> None:
        data[i], data[j] = data[j], data[i]

    _stable(less, swap, len(data))
    return [v for _, v in data]


def _stable(less: Callable[[int, int], bool], swap: Callable[[int, int], None], n: int) -> None:
    block = 20
    a, b = 0, block
    while b <= n:
        _insertion(less, swap, a, b)
        a, b = b, b + block
    _insertion(less, swap, a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            _sym_merge(less, swap, a, a + block, b)
            a, b = b, b + 2 * block
        m = a + block
        if m < n:
            _sym_merge(less, swap, a, m, n)
        block *= 2


def _insertion(
    less: Callable[[int, int], bool], swap: Callable[[int, int], None], a: int, b: int
) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(j, j - 1):
            swap(j, j - 1)
            j -= 1


def _sym_merge(
    less: Callable[[int, int], bool], swap: Callable[[int, int], None], a: int, m: int, b: int
) -> None:
    if m - a == 1:
        i, j = m, b
        while i < j:
            h = (i + j) >> 1
            if less(h, a):
                i = h + 1
            else:
                j = h
        for k in range(a, i - 1):
            swap(k, k + 1)
        return
    if b - m == 1:
        i, j = a, m
        while i < j:
            h = (i + j) >> 1
            if not less(m, h):
                i = h + 1
            else:
                j = h
        for k in range(m, i, -1):
            swap(k, k - 1)
        return
    mid = (a + b) >> 1
    n = mid + m
    if m > mid:
        start, r = n - b, mid
    else:
        start, r = a, m
    p = n - 1
    while start < r:
        c = (start + r) >> 1
        if not less(p - c, c):
            start = c + 1
        else:
            r = c
    end = n - start
    if start < m < end:
        _rotate(swap, start, m, end)
    if a < start < mid:
        _sym_merge(less, swap, a, start, mid)
    if mid < end < b:
        _sym_merge(less, swap, mid, end, b)


def _rotate(swap: Callable[[int, int], None], a: int, m: int, b: int) -> None:
    i, j = m - a, b - m
    while i != j:
        if i > j:
            _swap_range(swap, m - i, m, j)
            i -= j
        else:
            _swap_range(swap, m - i, m + j - i, i)
            j -= i
    _swap_range(swap, m - i, m, i)


def _swap_range(swap: Callable[[int, int], None], a: int, b: int, n: int) -> None:
    for i in range(n):
        swap(a + i, b + i)
