"""``x IN (...)`` over String / Binary columns of every offset width and layout: the
lookup runs on the column as it is (32-bit offsets as binary, 64-bit as large_binary)
and answers as ClickHouse's IN does (NULL x -> NULL, a NULL in the list matches nothing)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from skipidx.expr.kernels.compare import is_in

VALUES = ["a", "bb", None, "", "ünï", "a", "zz", None, "bb", "x" * 100]
LIST = ["bb", "", "ünï", None, "nope"]


def _want(vals, negated):
    keep = {v for v in LIST if v is not None}
    return [None if v is None else ((v in keep) != negated) for v in vals]


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
@pytest.mark.parametrize("negated", [False, True])
@pytest.mark.parametrize("layout", ["array", "chunked", "sliced", "dictionary"])
def test_in_over_string_layouts(typ, negated, layout):
    binary = pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
    vals = [None if v is None else (v.encode() if binary else v) for v in VALUES]
    items = [None if v is None else (v.encode() if binary else v) for v in LIST]
    arr = pa.array(vals, typ)
    want = _want(VALUES, negated)
    if layout == "chunked":
        arr = pa.chunked_array([arr.slice(0, 3), arr.slice(3, 0), arr.slice(3)], typ)
    elif layout == "sliced":
        arr, want = arr.slice(2, 6), want[2:8]
    elif layout == "dictionary":
        arr = arr.dictionary_encode()
    got = is_in(arr, items, negated=negated)
    assert got.type == pa.bool_()
    assert got.to_pylist() == want


def test_empty_list_and_repeated_plans():
    arr = pa.array(["a", None, "b"])
    assert is_in(arr, []).to_pylist() == [False, None, False]
    for _ in range(2):     # the prepared (cached) plan answers alike for both offset widths
        assert is_in(arr, ["b"]).to_pylist() == [False, None, True]
        assert is_in(arr.cast(pa.large_string()), ["b"]).to_pylist() == [False, None, True]
