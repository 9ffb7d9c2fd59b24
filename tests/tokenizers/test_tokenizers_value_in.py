"""The value tokenizer's batched IN encoding equals the value-by-value encoding.

``requirement('in', ...)`` encodes a whole IN list with one Arrow conversion
for fixed-width non-float types; the answer (alternatives, or None when a
member cannot be encoded) must be exactly the one of encoding each member
with ``plain_encode`` (the bytes the index side hashes).
"""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from skipidx_tokenizers.value import ValueTokenizer

CASES = [
    ("uint64", pa.uint64(), [1, 2, 3, 2**64 - 1, 2]),
    ("int8", pa.int8(), [-1, 5, 127]),
    ("int16", pa.int16(), [-300, 3]),
    ("uint16", pa.uint16(), [65535, 1]),
    ("int32", pa.int32(), [-(2**31), 2**31 - 1]),
    ("date32", pa.date32(), [dt.date(2024, 1, 1), dt.date(1970, 1, 2)]),
    ("date64", pa.date64(), [dt.date(1960, 1, 1), dt.date(2020, 5, 5)]),
    ("ts_s", pa.timestamp("s"), [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 1)]),
    ("ts_ms_mixed", pa.timestamp("ms"), [dt.datetime(2024, 1, 1), 5]),
    ("time32_s", pa.time32("s"), [dt.time(1, 2, 3), dt.time(0, 0, 1)]),
    ("decimal", pa.decimal128(10, 2), [decimal.Decimal("1.25"), decimal.Decimal("3")]),
    ("dict_uint32", pa.dictionary(pa.int32(), pa.uint32()), [4, 5]),
    ("list_int64", pa.list_(pa.int64()), [1, 2]),
    ("negative_in_unsigned", pa.uint64(), [1, -1]),
    ("overflow_uint8", pa.uint8(), [1, 300]),
    ("string_in_int", pa.int32(), [1, "x"]),
    ("bool_in_uint", pa.uint32(), [True, 2]),
    ("float_in_int", pa.int64(), [1, 1.0]),
    ("float64", pa.float64(), [0.0, 1.5, -2.0]),
    ("float_nan", pa.float64(), [1.0, float("nan")]),
    ("strings", pa.string(), ["a", "bb", "a"]),
    ("single", pa.uint64(), [7]),
]


def _one_by_one(tok: ValueTokenizer, vals: list, vt: pa.DataType):
    alts = []
    for v in vals:
        enc = tok._encodings(v, vt)
        if enc is None:
            return None
        alts.extend((e,) for e in enc)
    return tuple(dict.fromkeys(alts))


@pytest.mark.parametrize("vt, vals", [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("func", ["in", "notIn", "hasAny"])
def test_batched_in_equals_value_by_value(vt, vals, func):
    tok = ValueTokenizer()
    req = tok.requirement(func, (tuple(vals),), vt)
    want = _one_by_one(tok, vals, vt)
    got = None if req is None else req.any_of
    assert got == want, f"{func} over {vt}: batched {got} != value by value {want}"
    if req is not None:
        assert req.negated == (func == "notIn")


def test_batched_path_is_taken_for_integers():
    tok = ValueTokenizer()
    enc = tok._many_encodings(list(range(100, 110)), pa.uint64())
    assert enc == [v.to_bytes(8, "little") for v in range(100, 110)]
    assert tok._many_encodings([1, None], pa.uint64()) is None, "a NULL member goes value by value"
