"""Column types: parsing ClickHouse type names, casting with range checks."""
from __future__ import annotations

import datetime as dt
import decimal as _decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from skipidx.core.errors import SkipidxError
from skipidx.core.types import ColumnType, cast_to, ch_type_of, parse_type

PARSE = [
    ("UInt8", "UInt8", pa.uint8(), False, False),
    ("UInt64", "UInt64", pa.uint64(), False, False),
    ("Int8", "Int8", pa.int8(), False, False),
    ("Int64", "Int64", pa.int64(), False, False),
    ("Float32", "Float32", pa.float32(), False, False),
    ("Float64", "Float64", pa.float64(), False, False),
    ("Bool", "Bool", pa.bool_(), False, False),
    ("Boolean", "Bool", pa.bool_(), False, False),
    ("String", "String", pa.string(), False, False),
    ("Date", "Date", pa.date32(), False, False),
    ("DateTime", "DateTime", pa.timestamp("s"), False, False),
    ("Nullable(Int32)", "Nullable(Int32)", pa.int32(), True, False),
    (" Nullable( String ) ", "Nullable(String)", pa.string(), True, False),
    ("LowCardinality(String)", "LowCardinality(String)", pa.string(), False, True),
    ("LowCardinality(Nullable(String))", "LowCardinality(Nullable(String))", pa.string(), True, True),
    ("Nullable(LowCardinality(String))", "LowCardinality(Nullable(String))", pa.string(), True, True),
    ("Nullable(DateTime)", "Nullable(DateTime)", pa.timestamp("s"), True, False),
]


@pytest.mark.parametrize("text,name,arrow,nullable,lc", PARSE, ids=[p[0].strip() for p in PARSE])
def test_parse_type(text, name, arrow, nullable, lc):
    t = parse_type(text)
    assert (t.name, t.arrow_type, t.nullable, t.low_cardinality) == (name, arrow, nullable, lc)
    assert parse_type(t.name) == t, "the canonical name must parse to the same type"


BAD_TYPES = [
    ("UInt128", "unknown type"),
    ("Nullable(Array(String))", "cannot be inside Nullable"),
    ("Nullable(Nullable(String))", "nested Nullable"),
    ("LowCardinality(UInt8)", "LowCardinality is supported for String and FixedString only"),
    ("", "empty or invalid type"),
    ("string", "unknown type"),
    ("Nullable(", "bad type name"),
]


@pytest.mark.parametrize("text,msg", BAD_TYPES, ids=[b[0] or "empty" for b in BAD_TYPES])
def test_parse_type_rejects(text, msg):
    with pytest.raises(SkipidxError, match=msg.replace("(", r"\(")):
        parse_type(text)


CH_NAMES = [
    (pa.uint16(), "UInt16"), (pa.int64(), "Int64"), (pa.float32(), "Float32"), (pa.bool_(), "Bool"),
    (pa.string(), "String"), (pa.large_string(), "String"), (pa.date32(), "Date"),
    (pa.timestamp("s"), "DateTime"), (pa.timestamp("ms"), "DateTime64(3)"),
    (pa.dictionary(pa.int32(), pa.string()), "LowCardinality(String)"),
]


@pytest.mark.parametrize("arrow,name", CH_NAMES, ids=[str(a) for a, _ in CH_NAMES])
def test_ch_type_of(arrow, name):
    assert ch_type_of(arrow) == name


def test_ch_type_of_unknown():
    with pytest.raises(SkipidxError, match="no ClickHouse type"):
        ch_type_of(pa.struct([("a", pa.int8())]))


# (declared type, input array, expected output list or error substring)
CASTS = [
    ("UInt8", pa.array([0, 255], pa.int64()), [0, 255]),
    ("UInt8", pa.array([0, 256], pa.int64()), "value out of range [0, 255]: 256"),
    ("UInt8", pa.array([-1, 3], pa.int64()), "value out of range [0, 255]: -1"),
    ("Int8", pa.array([-128, 127], pa.int64()), [-128, 127]),
    ("Int8", pa.array([-129], pa.int64()), "out of range [-128, 127]: -129"),
    ("UInt32", pa.array([2**32 - 1], pa.uint64()), [2**32 - 1]),
    ("UInt32", pa.array([2**32], pa.uint64()), "out of range"),
    ("Int64", pa.array([2**63], pa.uint64()), "out of range"),
    ("UInt64", pa.array([-5], pa.int64()), "out of range [0, 18446744073709551615]: -5"),
    ("UInt64", pa.array([2**64 - 1], pa.uint64()), [2**64 - 1]),
    ("Int32", pa.array([1.0, -2.0]), [1, -2]),
    ("Int32", pa.array([1.5]), "not an integer: 1.5"),
    ("Int64", pa.array([2.0**63]), "out of range"),
    ("Int64", pa.array([float("nan")]), "not an integer"),
    ("UInt16", pa.array(["1"]), "is UInt16, got values of type string"),
    ("Float32", pa.array([1, 2], pa.int64()), [1.0, 2.0]),
    ("Float64", pa.array(["x"]), "got values of type string"),
    ("Bool", pa.array([0, 1], pa.int8()), [False, True]),
    ("Bool", pa.array([2], pa.int8()), "not a Bool (0 or 1): 2"),
    ("String", pa.array(["", "é", "日本"], pa.large_string()), ["", "é", "日本"]),
    ("String", pa.array(["a", "b", "a"]).dictionary_encode(), ["a", "b", "a"]),
    ("String", pa.array([b"ok"], pa.binary()), ["ok"]),
    ("String", pa.array([b"\xff"], pa.binary()), "not valid UTF-8"),
    ("String", pa.array([1]), "got values of type int64"),
    ("String", pa.array([None, "a"]), "NULL in a non-Nullable column (row 0)"),
    ("Nullable(String)", pa.array([None, "a"]), [None, "a"]),
    ("Nullable(UInt8)", pa.nulls(2), [None, None]),
    ("UInt8", pa.nulls(2), "NULL in a non-Nullable column"),
    ("Nullable(UInt8)", pa.array([None, 300]), "out of range"),
    ("Date", pa.array([dt.date(2024, 2, 29)]), [dt.date(2024, 2, 29)]),
    ("Date", pa.array([dt.date(1969, 12, 31)]), "out of range [1970-01-01, 2149-06-06]"),
    ("Date", pa.array([dt.date(2149, 6, 7)]), "out of range"),
    ("Date", pa.array([dt.datetime(2024, 1, 1, 0, 0)], pa.timestamp("s")), [dt.date(2024, 1, 1)]),
    ("Date", pa.array([dt.datetime(2024, 1, 1, 5, 0)], pa.timestamp("s")), "time of day"),
    ("DateTime", pa.array([dt.datetime(2024, 1, 1, 10, 0, 1)], pa.timestamp("us")), [dt.datetime(2024, 1, 1, 10, 0, 1)]),
    # ClickHouse truncates a sub-second value into DateTime
    ("DateTime", pa.array([dt.datetime(2024, 1, 1, 10, 0, 1, 5)], pa.timestamp("us")), [dt.datetime(2024, 1, 1, 10, 0, 1)]),
    ("DateTime", pa.array([dt.datetime(1960, 1, 1)], pa.timestamp("s")), "out of range"),
    ("DateTime", pa.array([dt.datetime(2106, 2, 7, 6, 28, 16)], pa.timestamp("s")), "out of range"),
    ("DateTime", pa.array([0, 86400], pa.int64()), [dt.datetime(1970, 1, 1), dt.datetime(1970, 1, 2)]),
    ("DateTime", pa.array([dt.date(2000, 1, 2)]), [dt.datetime(2000, 1, 2)]),
    ("DateTime", pa.array(["2020-01-01"]), "got values of type string"),
    ("Date", pa.array([1]), "got values of type int64"),
]


@pytest.mark.parametrize("tname,arr,expected", CASTS, ids=[f"{c[0]}<-{c[1].type}-{i}" for i, c in enumerate(CASTS)])
def test_cast_to(tname, arr, expected):
    t = parse_type(tname)
    if isinstance(expected, str):
        with pytest.raises(SkipidxError) as ei:
            cast_to(t, arr, "col")
        assert expected in str(ei.value), str(ei.value)
        assert "'col'" in str(ei.value), "the message must name the column"
    else:
        out = cast_to(t, arr, "col")
        assert out.type == t.arrow_type
        assert out.to_pylist() == expected


def test_cast_chunked_and_timezone():
    t = parse_type("DateTime")
    arr = pa.chunked_array([pa.array([0], pa.timestamp("s", tz="Europe/Paris")), pa.array([60], pa.timestamp("s", tz="Europe/Paris"))])
    assert cast_to(t, arr).to_pylist() == [dt.datetime(1970, 1, 1), dt.datetime(1970, 1, 1, 0, 1)]


def test_cast_all_int_bounds_exhaustive():
    """Every integer type accepts exactly its own range, from every wider source."""
    for name, np_t in [("UInt8", np.uint8), ("UInt16", np.uint16), ("UInt32", np.uint32),
                       ("Int8", np.int8), ("Int16", np.int16), ("Int32", np.int32)]:
        info = np.iinfo(np_t)
        ok = pa.array([info.min, info.max], pa.int64())
        assert cast_to(parse_type(name), ok).to_pylist() == [info.min, info.max]
        for bad in (info.min - 1, info.max + 1):
            with pytest.raises(SkipidxError, match="out of range"):
                cast_to(parse_type(name), pa.array([bad], pa.int64()))


def test_column_type_is_value_object():
    assert parse_type("String") == ColumnType("String", pa.string())
    assert str(parse_type("Nullable(UInt8)")) == "Nullable(UInt8)"
    assert parse_type("Nullable(UInt8)").base_name == "UInt8"


# --- Decimal from text and floats, column-wise, against Python's decimal module --------------

def _decimal_reference(v, precision: int, scale: int):
    """ClickHouse's rule as the value-by-value path states it: the shortest repr of a
    float (or the text), truncated toward zero to `scale` digits."""
    d = _decimal.Decimal(v.strip()) if isinstance(v, str) else _decimal.Decimal(repr(float(v)))
    return d.quantize(_decimal.Decimal(1).scaleb(-scale), rounding=_decimal.ROUND_DOWN,
                      context=_decimal.Context(prec=80))


_numbers_as_text = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-10**8, max_value=10**8).map(lambda d: format(d, "f")),
    st.from_regex(r"\A[+-]?[0-9]{1,8}(\.[0-9]{0,12})?([eE][+-]?[0-9])?\Z"),
    st.from_regex(r"\A[+-]?\.[0-9]{1,10}\Z"),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_numbers_as_text, min_size=1, max_size=40), st.sampled_from([(9, 2), (18, 4), (38, 10), (76, 20)]))
def test_decimal_from_text_column_matches_reference(values, ps):
    precision, scale = ps
    ctype = parse_type(f"Decimal({precision}, {scale})")
    limit = _decimal.Decimal(10) ** (precision - scale)
    want = [_decimal_reference(v, precision, scale) for v in values]
    if any(abs(w) >= limit for w in want):
        with pytest.raises(SkipidxError):
            cast_to(ctype, pa.array(values), "c")
        return
    got = cast_to(ctype, pa.array(values), "c").to_pylist()
    assert got == want, f"{values} -> {got}, expected {want}"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)),
                min_size=1, max_size=40), st.sampled_from([(18, 4), (38, 10), (76, 20)]), st.booleans())
def test_decimal_from_float_column_matches_reference(values, ps, single):
    precision, scale = ps
    ctype = parse_type(f"Nullable(Decimal({precision}, {scale}))")
    arr = pa.array(values, pa.float32() if single else pa.float64())
    want = [None if v is None else _decimal_reference(v, precision, scale) for v in arr.to_pylist()]
    got = cast_to(ctype, arr, "c").to_pylist()
    assert got == want, f"{arr.to_pylist()} -> {got}, expected {want}"
