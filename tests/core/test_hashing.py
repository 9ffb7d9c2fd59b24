"""hashing: XXH64 of the Parquet PLAIN encoding, checked against the `xxhash` package."""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import datetime
import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from skipidx.core.errors import SkipidxError
from skipidx.core.hashing import (
    cityhash64,
    parquet_xxh64,
    parquet_xxh64_with_validity,
    physical_type,
    plain_encode,
    xxh64_array,
    xxh64_array_with_validity,
    xxh64_bytes,
)

EMPTY_XXH64 = 0xEF46DB3751D8E999


def oracle(plain: list[bytes], seed: int = 0) -> list[int]:
    return [xxhash.xxh64_intdigest(b, seed=seed) for b in plain]


def test_known_answer_empty_input():
    assert xxhash.xxh64_intdigest(b"") == EMPTY_XXH64
    assert xxh64_bytes(b"") == EMPTY_XXH64
    assert parquet_xxh64(pa.array([""])).tolist() == [EMPTY_XXH64]
    assert parquet_xxh64(pa.array([b""], pa.binary())).tolist() == [EMPTY_XXH64]


def _ints(dtype: str, n: int, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    v = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    v[:4] = [info.min, info.max, 0, 1 if info.min == 0 else -1]
    return v


# (Arrow type, values, PLAIN bytes of one value computed independently with struct)
INT_CASES = [
    ("int8", "<i"), ("int16", "<i"), ("int32", "<i"),  # sign-extended to INT32
    ("uint8", "<i"), ("uint16", "<i"),                   # zero-extended to INT32
    ("uint32", "<I"),                                    # INT32 holding the same 32 bits
    ("int64", "<q"), ("uint64", "<Q"),
]


@pytest.mark.parametrize("dtype, fmt", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_integers_against_xxhash(dtype, fmt):
    v = _ints(dtype, 5000, hash(dtype) % 1000)
    got = parquet_xxh64(pa.array(v))
    assert got.dtype == np.uint64
    assert got.tolist() == oracle([struct.pack(fmt, int(x)) for x in v])


@pytest.mark.parametrize("dtype, fmt", [("float32", "<f"), ("float64", "<d")], ids=["float", "double"])
def test_floats_against_xxhash(dtype, fmt):
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(3000) * 1e6).astype(dtype)
    info = np.finfo(dtype)
    v[:9] = [0.0, -0.0, np.nan, np.inf, -np.inf, info.max, info.min, info.tiny, info.smallest_subnormal]
    got = parquet_xxh64(pa.array(v))
    assert got.tolist() == oracle([x.tobytes() for x in v])  # numpy scalars: IEEE little-endian bits
    assert got[0] != got[1], "-0.0 and 0.0 are different bits, hence different hashes"


@pytest.mark.parametrize("seed", [0, 1, 42, 2**64 - 1], ids=["0", "1", "42", "max"])
def test_seeds(seed):
    v = _ints("int64", 300, 9)
    assert xxh64_array(pa.array(v), seed).tolist() == oracle([struct.pack("<q", int(x)) for x in v], seed)
    i = _ints("int32", 300, 10)
    assert xxh64_array(pa.array(i), seed).tolist() == oracle([struct.pack("<i", int(x)) for x in i], seed)
    s = ["", "a", "héllo wörld", "x" * 33, "\u65e5\u672c" * 20]
    assert xxh64_array(pa.array(s), seed).tolist() == oracle([x.encode() for x in s], seed)
    assert xxh64_bytes(b"abc", seed) == xxhash.xxh64_intdigest(b"abc", seed=seed)


def _strings(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    alphabet = list("abcXYZ019 -_/") + ["é", "ß", "日", "本", "\U0001f600", "\x00"]
    # every length 0..100 covers all XXH64 paths: <4, 4..7, 8..31 tails, >= 32 stripes
    out = ["".join(rng.choice(alphabet, size=k)) for k in range(101)]
    out += ["".join(rng.choice(alphabet, size=int(rng.integers(0, 300)))) for _ in range(n)]
    return out


@pytest.mark.parametrize(
    "arrow_type", [pa.string(), pa.large_string(), pa.string_view()], ids=["string", "large_string", "string_view"]
)
def test_strings_against_xxhash(arrow_type):
    s = _strings(1000, 4)
    got = parquet_xxh64(pa.array(s, arrow_type))
    assert got.tolist() == oracle([x.encode("utf-8") for x in s])


@pytest.mark.parametrize(
    "arrow_type", [pa.binary(), pa.large_binary(), pa.binary_view()], ids=["binary", "large_binary", "binary_view"]
)
def test_binary_against_xxhash(arrow_type):
    rng = np.random.default_rng(5)
    b = [rng.integers(0, 256, size=k, dtype=np.uint8).tobytes() for k in list(range(70)) + [1000, 4096]]
    assert parquet_xxh64(pa.array(b, arrow_type)).tolist() == oracle(b)


def test_fixed_size_binary_and_float16():
    rng = np.random.default_rng(6)
    b = [rng.integers(0, 256, size=16, dtype=np.uint8).tobytes() for _ in range(200)]
    assert parquet_xxh64(pa.array(b, pa.binary(16))).tolist() == oracle(b)
    h = np.array([0.0, -0.0, 1.5, np.inf, np.nan], dtype=np.float16)
    assert parquet_xxh64(pa.array(h)).tolist() == oracle([x.tobytes() for x in h])


@pytest.mark.parametrize(
    "arrow_type, values, plain",
    [
        (pa.date32(), [0, -1, 19_000], lambda v: struct.pack("<i", v)),
        (pa.date64(), [86_400_000, -1, -86_400_001, 5 * 86_400_000 + 7],
         lambda v: struct.pack("<i", int(v / 86_400_000))),  # days, truncated toward zero
        (pa.time32("ms"), [0, 86_399_999], lambda v: struct.pack("<i", v)),
        (pa.time32("s"), [0, 86_399], lambda v: struct.pack("<i", v * 1000)),
        (pa.time64("us"), [0, 86_399_999_999], lambda v: struct.pack("<q", v)),
        (pa.time64("ns"), [1, 86_399_999_999_999], lambda v: struct.pack("<q", v)),
        (pa.timestamp("s"), [0, -1, 1_700_000_000], lambda v: struct.pack("<q", v * 1000)),
        (pa.timestamp("ms"), [0, -1, 1_700_000_000_000], lambda v: struct.pack("<q", v)),
        (pa.timestamp("us", tz="UTC"), [0, 2**62], lambda v: struct.pack("<q", v)),
        (pa.timestamp("ns"), [0, -(2**63) + 1], lambda v: struct.pack("<q", v)),
        (pa.duration("s"), [0, -5, 10**12], lambda v: struct.pack("<q", v)),
        (pa.decimal128(9, 2), [decimal.Decimal("1.50"), decimal.Decimal("-2.25"), decimal.Decimal("9999999.99")],
         lambda v: int(v.scaleb(2)).to_bytes(4, "big", signed=True)),
        (pa.decimal128(20, 0), [decimal.Decimal(-(10**19))], lambda v: int(v).to_bytes(9, "big", signed=True)),
        (pa.decimal256(40, 3), [decimal.Decimal("-1.001")], lambda v: int(v.scaleb(3)).to_bytes(17, "big", signed=True)),
    ],
    ids=["date32", "date64", "time32ms", "time32s", "time64us", "time64ns", "ts-s", "ts-ms", "ts-us-tz", "ts-ns",
         "duration", "dec9", "dec20", "dec256"],
)
def test_temporal_and_decimal(arrow_type, values, plain):
    got = parquet_xxh64(pa.array(values, arrow_type))
    assert got.tolist() == oracle([plain(v) for v in values])
    assert [plain_encode(v, arrow_type) for v in values] == [plain(v) for v in values]


def test_nulls_produce_no_hash_and_alignment_variant():
    a = pa.array([1, None, 3, None], pa.int32())
    assert parquet_xxh64(a).tolist() == oracle([struct.pack("<i", 1), struct.pack("<i", 3)])
    h, valid = parquet_xxh64_with_validity(a)
    assert valid.tolist() == [True, False, True, False]
    assert h.tolist() == [oracle([struct.pack("<i", 1)])[0], 0, oracle([struct.pack("<i", 3)])[0], 0]
    s = pa.array(["a", None, ""])
    assert parquet_xxh64(s).tolist() == oracle([b"a", b""])
    assert parquet_xxh64(pa.nulls(5)).tolist() == []
    assert parquet_xxh64_with_validity(pa.nulls(2))[1].tolist() == [False, False]
    assert parquet_xxh64(pa.array([], pa.string())).tolist() == []


def test_slices_chunks_and_dictionaries():
    v = _ints("int32", 100, 12)
    a = pa.array(v)
    assert parquet_xxh64(a.slice(7, 50)).tolist() == parquet_xxh64(a).tolist()[7:57]
    s = pa.array(_strings(50, 13))
    assert parquet_xxh64(s.slice(10, 30)).tolist() == parquet_xxh64(s).tolist()[10:40]
    fsb = pa.array([bytes([i]) * 4 for i in range(20)], pa.binary(4))
    assert parquet_xxh64(fsb.slice(3, 5)).tolist() == parquet_xxh64(fsb).tolist()[3:8]
    ch = pa.chunked_array([s.slice(0, 10), s.slice(10, 0), s.slice(10)])
    assert parquet_xxh64(ch).tolist() == parquet_xxh64(s).tolist()
    assert parquet_xxh64(pa.chunked_array([], pa.int64())).tolist() == []
    # dictionary: hashed as its values; NULL index or NULL dictionary entry -> NULL
    d = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 2, 0], pa.int8()), pa.array(["x", "yy", None]))
    h, valid = parquet_xxh64_with_validity(d)
    assert valid.tolist() == [True, True, False, False, True]
    assert parquet_xxh64(d).tolist() == oracle([b"x", b"yy", b"x"])
    assert parquet_xxh64(pa.array(["q", "r", "q"]).dictionary_encode().slice(1)).tolist() == oracle([b"r", b"q"])


def test_numpy_and_list_inputs():
    assert parquet_xxh64(np.array([1, 2], dtype=np.int64)).tolist() == oracle([struct.pack("<q", 1), struct.pack("<q", 2)])
    assert parquet_xxh64(["a", None]).tolist() == oracle([b"a"])


@pytest.mark.parametrize(
    "value, arrow_type, plain",
    [
        (-1, pa.int8(), b"\xff\xff\xff\xff"),
        (255, pa.uint8(), b"\xff\x00\x00\x00"),
        (2**32 - 1, pa.uint32(), b"\xff\xff\xff\xff"),
        (-2, pa.int64(), b"\xfe" + b"\xff" * 7),
        (1.0, pa.float32(), b"\x00\x00\x80\x3f"),
        (-0.0, pa.float64(), b"\x00" * 7 + b"\x80"),
        ("héllo", pa.string(), "héllo".encode()),
        ("a", pa.dictionary(pa.int32(), pa.string()), b"a"),
        (b"\x00\x01", pa.binary(2), b"\x00\x01"),
        (datetime.date(1970, 1, 2), pa.date32(), b"\x01\x00\x00\x00"),
        (datetime.datetime(1970, 1, 1, 0, 0, 1), pa.timestamp("s"), struct.pack("<q", 1000)),
        (pa.scalar(7, pa.int16()), pa.int16(), b"\x07\x00\x00\x00"),
    ],
    ids=["int8", "uint8", "uint32", "int64", "float", "-0.0", "utf8", "dict", "fsb", "date", "ts-s", "scalar"],
)
def test_plain_encode(value, arrow_type, plain):
    assert plain_encode(value, arrow_type) == plain
    # and the query side hashes what the data side hashes
    assert xxhash.xxh64_intdigest(plain) == parquet_xxh64(pa.array([value.as_py() if isinstance(value, pa.Scalar) else value], arrow_type))[0]


@pytest.mark.parametrize(
    "value, arrow_type",
    [(None, pa.int32()), (128, pa.int8()), (-1, pa.uint32()), ("x", pa.int64()), (1, "int64"), (True, pa.bool_())],
    ids=["null", "overflow", "negative-unsigned", "str-for-int", "type-not-DataType", "bool"],
)
def test_plain_encode_errors(value, arrow_type):
    with pytest.raises(SkipidxError):
        plain_encode(value, arrow_type)


@pytest.mark.parametrize(
    "arrow_type, physical",
    [(pa.int8(), "INT32"), (pa.uint32(), "INT32"), (pa.uint64(), "INT64"), (pa.float32(), "FLOAT"),
     (pa.float64(), "DOUBLE"), (pa.string(), "BYTE_ARRAY"), (pa.binary(3), "FIXED_LEN_BYTE_ARRAY"),
     (pa.timestamp("ns"), "INT64"), (pa.date32(), "INT32"), (pa.dictionary(pa.int8(), pa.large_string()), "BYTE_ARRAY")],
    ids=lambda x: str(x),
)
def test_physical_type(arrow_type, physical):
    assert physical_type(arrow_type) == physical


@pytest.mark.parametrize(
    "values",
    [pa.array([True, False]), pa.array([[1], [2]]), pa.array([{"a": 1}]),
     pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())), "not an array", 5, {"a": 1}],
    ids=["bool", "list", "struct", "map", "str", "int", "dict"],
)
def test_unsupported_inputs(values):
    with pytest.raises(SkipidxError):
        parquet_xxh64(values)
    with pytest.raises(SkipidxError):
        parquet_xxh64_with_validity(values)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.0, "0", True], ids=["neg", "2**64", "float", "str", "bool"])
def test_bad_seed(seed):
    with pytest.raises(SkipidxError):
        xxh64_array(pa.array([1]), seed)
    with pytest.raises(SkipidxError):
        xxh64_array_with_validity(pa.array([1]), seed)


def test_mixed_list_input_is_an_error():
    with pytest.raises(SkipidxError):
        parquet_xxh64([1, "a"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=80)), max_size=60), st.integers(0, 2**64 - 1))
def test_property_binary_any_seed(values, seed):
    arr = pa.array(values, pa.binary())
    got = xxh64_array(arr, seed)
    assert got.tolist() == oracle([v for v in values if v is not None], seed)
    h, valid = xxh64_array_with_validity(arr, seed)
    assert valid.tolist() == [v is not None for v in values]
    assert h[valid].tolist() == got.tolist() and not h[~valid].any()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=40))
def test_property_text(values):
    assert parquet_xxh64(pa.array(values, pa.string())).tolist() == oracle([v.encode("utf-8") for v in values])


# ------------------------------------------------------------------ cityhash

def test_cityhash64_is_clickhouse_v102():
    from clickhouse_cityhash.cityhash import CityHash64

    values = ["", "abc", "hello world", "x" * 100]
    got = cityhash64(pa.array(values + [None]))
    assert got.tolist() == [CityHash64(v.encode()) for v in values]
    assert cityhash64("abc") == CityHash64(b"abc") == cityhash64(b"abc")
    with pytest.raises(SkipidxError):
        cityhash64(pa.array([1, 2]))


@pytest.mark.chdb
def test_cityhash64_equals_chdb():
    chdb = pytest.importorskip("chdb")
    values = ["", "a", "abc", "hello world", "日本語のテキスト", "x" * 200]
    sql = "SELECT " + ", ".join(f"toString(cityHash64('{v}'))" for v in values)
    res = chdb_oracle.query(sql, "CSV").bytes().decode().strip().replace('"', "").split(",")
    assert [int(x) for x in res] == cityhash64(pa.array(values)).tolist()


# ------------------------------------------------------------------ kernel

def test_xxh64_span_unaligned_and_strided_buffers():
    """The kernel's wide loads: every start alignment and every tail length; strided input reads byte-wise."""
    from skipidx.core._kernels.xxh64 import xxh64_span

    buf = np.random.default_rng(8).integers(0, 256, size=200, dtype=np.uint8)
    for start in range(8):
        for length in list(range(0, 70)) + [100, 150]:
            got = int(xxh64_span(buf, start, length, np.uint64(7)))
            assert got == xxhash.xxh64_intdigest(buf[start:start + length].tobytes(), seed=7), (start, length)
    strided = buf[::2]
    assert not strided.flags.c_contiguous
    for length in (3, 8, 13, 40, 99):
        assert int(xxh64_span(strided, 1, length, np.uint64(0))) == xxhash.xxh64_intdigest(
            strided[1:1 + length].tobytes())
