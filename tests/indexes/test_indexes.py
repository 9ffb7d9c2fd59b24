"""Index types: validators, builds (golden and against independent oracles), the Lance zone tables.

Oracles: H1's ``skipidx.core.sbbf.SBBF`` (insert one zone's hashes by itself), the
``xxhash`` package (token hashes), the tokenizers' ``tokenize`` (the tokens
themselves), and the generic (hash_column) build path for the fused kernels.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings, strategies as st

from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.indexes.base import INDEX_TYPES, IndexDef, get_index_type
from skipidx.indexes.bloom import SATURATION_FPP, SBBFAggregator
from skipidx.core.sizing import num_bytes as num_bytes_for_ndv
from skipidx.apps.research.indexes import putze_min_bytes
from skipidx.core.sbbf import SBBF, optimal_num_bytes


def make(type_name, args=(), kwargs=(), column_type=pa.string(), expr_func=None, name="idx"):
    d = IndexDef(name, "c", expr_func, type_name, tuple(args), tuple(kwargs))
    return get_index_type(type_name)(d, column_type)


def zones_of(n, size):
    zs = np.arange(0, n, size, dtype=np.int64)
    return zs, np.minimum(size, n - zs).astype(np.int64)


# --------------------------------------------------------------- validators

BAD_DDL = [
    ("minmax", (1,), (), pa.int64(), "takes no parameters"),
    ("minmax", (), (), pa.list_(pa.int64()), "does not support column type"),
    ("set", (), (), pa.int64(), "exactly one argument"),
    ("set", (-1,), (), pa.int64(), "max_rows must be >= 0"),
    ("set", (1.5,), (), pa.int64(), "max_rows must be an unsigned integer"),
    ("set", (True,), (), pa.int64(), "max_rows must be an unsigned integer"),
    ("bloom_filter", (0,), (), pa.string(), "must be in (0, 1)"),
    ("bloom_filter", (1,), (), pa.string(), "must be in (0, 1)"),
    ("bloom_filter", (1.5,), (), pa.string(), "must be in (0, 1)"),
    ("bloom_filter", ("x",), (), pa.string(), "must be a number"),
    ("bloom_filter", (0.1, 0.2), (), pa.string(), "at most one argument"),
    ("bloom_filter", (), (), pa.bool_(), "cannot index column type bool"),
    ("tokenbf_v1", (32, 3), (), pa.string(), "exactly 3 arguments"),
    ("tokenbf_v1", (0, 3, 0), (), pa.string(), "size of bloom filter (bytes) must be in [1,"),
    ("tokenbf_v1", (32, 0, 0), (), pa.string(), "number of hash functions must be in [1, 255]"),
    ("tokenbf_v1", (32, 3, -1), (), pa.string(), "seed must be in [0,"),
    ("tokenbf_v1", (32.5, 3, 0), (), pa.string(), "must be an unsigned integer"),
    ("tokenbf_v1", (32, 3, 0), (), pa.uint64(), "can only be used with String"),
    ("tokenbf_v1", (2**28, 3, 0), (), pa.string(), "size of bloom filter (bytes) must be in [1, 134217728]"),
    ("tokenbf_v1", (32, 3, 0), (("k", 1),), pa.string(), "no key = value parameters"),
    ("ngrambf_v1", (3, 256, 2), (), pa.string(), "exactly 4 arguments"),
    ("ngrambf_v1", (0, 256, 2, 0), (), pa.string(), "ngram length must be in [1, 255]"),
    ("ngrambf_v1", (3, 256, 2, 0), (), pa.int32(), "can only be used with String"),
    ("sbbf", (), (), pa.string(), "needs a tokenizer name"),
    ("sbbf", ("nope",), (), pa.string(), "unknown tokenizer 'nope'"),
    ("sbbf", ("ngram",), (("n", 0),), pa.string(), "ngram"),
    ("sbbf", ("token",), (("fpp", 0.0),), pa.string(), "fpp must be in (0, 1)"),
    ("sbbf", ("token",), (("seed", -3),), pa.string(), "seed must be in [0,"),
    ("sbbf", ("token",), (("bogus", 1),), pa.string(), "token"),
    ("sbbf", ("token", "ngram"), (), pa.string(), "one positional argument"),
    ("sbbf", ("token",), (("tokenizer", "ngram"),), pa.string(), "given twice"),
    ("sbbf", ("token",), (), pa.int64(), "cannot index column type int64"),
    ("sbbf", ("token",), (("size_rule", "pow2"),), pa.string(), "size_rule must be one of 'exact', 'parquet', 'lance'"),
    ("sbbf", ("token",), (("size_rule", 1),), pa.string(), "size_rule must be one of"),
]


@pytest.mark.parametrize("type_name,args,kwargs,column_type,message", BAD_DDL,
                         ids=[f"{t}{a}{dict(k) or ''}-{c}" for t, a, k, c, _ in BAD_DDL])
def test_validator_rejects(type_name, args, kwargs, column_type, message):
    with pytest.raises(SkipidxError) as e:
        make(type_name, args, kwargs, column_type, name="my_idx")
    assert "'my_idx'" in str(e.value), f"the error must name the index: {e.value}"
    assert message in str(e.value), f"expected {message!r} in {e.value}"


GOOD_DDL = [
    ("minmax", (), (), pa.float64(), {}),
    ("set", (0,), (), pa.string(), {"max_rows": 0}),
    ("set", (100,), (), pa.dictionary(pa.int32(), pa.string()), {"max_rows": 100}),
    ("bloom_filter", (), (), pa.string(),
     {"fpp": 0.025, "seed": 0, "sizing": "ndv", "tokenizer": "value", "tokenizer_params": {}}),
    ("bloom_filter", (0.01,), (), pa.uint64(),
     {"fpp": 0.01, "seed": 0, "sizing": "ndv", "tokenizer": "value", "tokenizer_params": {}}),
    ("tokenbf_v1", (32768, 3, 0), (), pa.string(),
     {"bytes": 32768, "hashes": 3, "seed": 0, "sizing": "fixed", "tokenizer": "token", "tokenizer_params": {}}),
    ("tokenbf_v1", (100, 2, 7), (), pa.large_string(),
     {"bytes": 128, "hashes": 2, "seed": 7, "sizing": "fixed", "tokenizer": "token", "tokenizer_params": {}}),
    ("ngrambf_v1", (3, 65536, 2, 0), (), pa.string(),
     {"n": 3, "bytes": 65536, "hashes": 2, "seed": 0, "sizing": "fixed", "tokenizer": "ngram",
      "tokenizer_params": {"n": 3}}),
    ("sbbf", ("token",), (), pa.string(),
     {"fpp": 0.01, "seed": 0, "sizing": "ndv", "size_rule": "exact", "tokenizer": "token", "tokenizer_params": {}}),
    ("sbbf", ("ngram",), (("n", 4), ("fpp", 0.05)), pa.binary(),
     {"fpp": 0.05, "seed": 0, "sizing": "ndv", "size_rule": "exact", "tokenizer": "ngram",
      "tokenizer_params": {"n": 4}}),
    ("sbbf", (b"value",), (("seed", 9),), pa.int32(),
     {"fpp": 0.01, "seed": 9, "sizing": "ndv", "size_rule": "exact", "tokenizer": "value", "tokenizer_params": {}}),
    ("sbbf", (), (("tokenizer", "token"), ("size_rule", "parquet")), pa.string(),
     {"fpp": 0.01, "seed": 0, "sizing": "ndv", "size_rule": "parquet", "tokenizer": "token", "tokenizer_params": {}}),
    ("sbbf", ("token",), (("size_rule", b"lance"),), pa.string(),
     {"fpp": 0.01, "seed": 0, "sizing": "ndv", "size_rule": "lance", "tokenizer": "token", "tokenizer_params": {}}),
]


@pytest.mark.parametrize("type_name,args,kwargs,column_type,params", GOOD_DDL,
                         ids=[f"{t}{a}{dict(k) or ''}-{c}" for t, a, k, c, _ in GOOD_DDL])
def test_validator_normalizes(type_name, args, kwargs, column_type, params):
    d = IndexDef("i", "c", None, type_name, args, kwargs)
    got = get_index_type(type_name).validate(d, column_type)
    assert got == params
    json.dumps(got)  # stored as JSON


def test_registry_has_the_builtins():
    for name in ("minmax", "set", "bloom_filter", "tokenbf_v1", "ngrambf_v1", "sbbf"):
        assert get_index_type(name).name == name
    assert set(INDEX_TYPES) >= {"minmax", "set", "bloom_filter", "tokenbf_v1", "ngrambf_v1", "sbbf"}
    with pytest.raises(SkipidxError, match="unknown index type 'bloomfilter'"):
        get_index_type("bloomfilter")


# ----------------------------------------------------------------- minmax

def test_minmax_golden():
    vals = pa.array([3.0, None, 1.0, float("nan"), None, None, None, float("nan"), 7.5, -0.0], pa.float64())
    g = make("minmax", column_type=pa.float64()).aggregator().build(vals, np.array([0, 3, 5, 7]),
                                                                      np.array([3, 2, 2, 3]))
    assert g.min.to_pylist() == [1.0, None, None, -0.0]
    assert g.max.to_pylist() == [3.0, None, None, 7.5]
    assert g.null_count.tolist() == [1, 1, 2, 0]
    assert g.nan_count.tolist() == [0, 1, 0, 1]
    assert g.has_null.tolist() == [True, True, True, False]


def test_minmax_strings_bytewise():
    vals = pa.array(["b", "ä", "a", "Z", "", None], pa.string())
    g = make("minmax").aggregator().build(vals, np.array([0, 3]), np.array([3, 3]))
    assert g.min.to_pylist() == ["a", ""]
    assert g.max.to_pylist() == ["ä", "Z"]   # 0xC3 > 'b' bytewise


# -------------------------------------------------------------------- set

def test_set_golden_and_overflow():
    vals = pa.array([1, 1, 2, None, 5, 6, 7, 8, None, None], pa.int64())
    g = make("set", (3,), column_type=pa.int64()).aggregator().build(vals, np.array([0, 4, 8]),
                                                                      np.array([4, 4, 2]))
    assert g.sets.to_pylist() == [[1, 2], None, []]
    assert g.overflow.tolist() == [False, True, False]
    g0 = make("set", (0,), column_type=pa.int64()).aggregator().build(vals, np.array([0, 4, 8]),
                                                                       np.array([4, 4, 2]))
    assert g0.sets.to_pylist() == [[1, 2], [5, 6, 7, 8], []]


def test_set_lowcardinality_strings():
    vals = pa.array(["x", "y", "x", None, "z"]).dictionary_encode()
    g = make("set", (10,), column_type=vals.type).aggregator().build(vals, np.array([0, 3]), np.array([3, 2]))
    assert [sorted(s) for s in g.sets.to_pylist()] == [["x", "y"], ["z"]]
    assert g.sets.type == pa.list_(pa.string())


# ------------------------------------------------------------ SBBF types

def zone_oracle(tokenizer, values, zs, zl, seed, num_bytes):
    """Each zone's filter built independently: tokenize, xxhash, SBBF.insert_hashes."""
    out = []
    for s, n, nb in zip(zs, zl, num_bytes):
        toks = tokenizer.tokenize(values.slice(int(s), int(n))).to_pylist()
        f = SBBF(int(nb))
        f.insert_hashes(np.array([xxhash.xxh64_intdigest(t, seed=seed) for t in toks], dtype=np.uint64))
        out.append((f.to_bytes(), len(set(toks))))
    return out


TEXT = pa.array(["Hello, world!", "", None, "café au lait", "a_b-c.d", "東京 タワー ok", "x" * 40,
                 "timeout after 30s", None, "über Zürich 😀ok", "ab", "abc abc abc"] * 3, pa.string())

SBBF_CASES = [
    ("tokenbf_v1", (256, 3, 0), ()),
    ("tokenbf_v1", (100, 2, 12345), ()),
    ("ngrambf_v1", (3, 512, 2, 0), ()),
    ("ngrambf_v1", (1, 64, 2, 3), ()),
    ("sbbf", ("token",), ()),
    ("sbbf", ("ngram",), (("n", 4), ("seed", 99))),
    ("sbbf", ("ngram",), (("n", 2), ("fpp", 0.3))),
    ("sbbf", ("token",), (("size_rule", "parquet"),)),
    ("sbbf", ("ngram",), (("n", 3), ("size_rule", "lance"))),
    ("sbbf", ("ngram",), (("n", 4), ("min_n", 2))),
]


@pytest.mark.parametrize("type_name,args,kwargs", SBBF_CASES,
                         ids=[f"{t}{a}{dict(k) or ''}" for t, a, k in SBBF_CASES])
@pytest.mark.parametrize("zone", [1, 5, 12, 36], ids=lambda z: f"zone{z}")
def test_sbbf_zones_equal_independent_oracle(type_name, args, kwargs, zone):
    idx = make(type_name, args, kwargs)
    zs, zl = zones_of(len(TEXT), zone)
    g = idx.aggregator().build(TEXT, zs, zl)
    tok = idx.tokenizer
    if idx.params["sizing"] == "fixed":
        sizes = [idx.params["bytes"]] * len(zs)
    else:
        counts = [len(set(tok.tokenize(TEXT.slice(int(s), int(n))).to_pylist())) for s, n in zip(zs, zl)]
        rule = idx.params.get("size_rule", "parquet")
        if rule == "exact":   # the research bench's scalar bisection over SBBF.fpp_estimate
            sizes = [putze_min_bytes(c, idx.params["fpp"]) for c in counts]
        else:
            sizes = [optimal_num_bytes(max(c, 1), idx.params["fpp"], rule) if c else 32 for c in counts]
    want = zone_oracle(tok, TEXT, zs, zl, idx.params["seed"], sizes)
    for z, (b, ndv) in enumerate(want):
        assert g.filter_bytes(z) == b, f"zone {z}: filter differs from the oracle"
        if g.ndv is not None:
            assert g.ndv[z] == ndv, f"zone {z}: ndv {g.ndv[z]} != {ndv}"
    assert g.null_count.tolist() == [int(TEXT.slice(int(s), int(n)).null_count) for s, n in zip(zs, zl)]


texts = st.lists(st.one_of(st.none(), st.text(alphabet="ab cé東-_😀", max_size=12),
                           st.binary(max_size=10)), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(texts, st.integers(1, 9), st.sampled_from(SBBF_CASES), st.sampled_from(["string", "binary", "large"]))
def test_fused_equals_generic(values, zone, case, kind):
    """The fused kernels build exactly what hash_column + the zone kernels build (incl. invalid UTF-8)."""
    vals = [v.encode() if isinstance(v, str) else v for v in values]
    t = {"string": pa.binary(), "binary": pa.binary(), "large": pa.large_binary()}[kind]
    arr = pa.array(vals, t)
    type_name, args, kwargs = case
    idx = make(type_name, args, kwargs, column_type=t)
    zs, zl = zones_of(len(arr), zone)
    a = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=True).build(arr, zs, zl)
    b = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=False).build(arr, zs, zl)
    assert np.array_equal(a.words, b.words)
    assert np.array_equal(a.num_blocks, b.num_blocks)
    assert (a.ndv is None) == (b.ndv is None) and (a.ndv is None or np.array_equal(a.ndv, b.ndv))


def test_fused_on_sliced_and_chunked_input():
    idx = make("sbbf", ("ngram",), (("n", 3),))
    base = pa.chunked_array([TEXT.slice(0, 10), TEXT.slice(10)])
    sliced = TEXT.slice(5, 20)
    for arr in (base, sliced):
        flat = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else pa.array(arr.to_pylist())
        zs, zl = zones_of(len(flat), 4)
        g1 = idx.aggregator().build(arr, zs, zl)
        g2 = idx.aggregator().build(flat, zs, zl)
        assert np.array_equal(g1.words, g2.words)


def test_adaptive_sizing_matches_sbbf_for_ndv():
    for fpp in (0.001, 0.01, 0.025, 0.3):
        ndv = np.array([0, 1, 2, 7, 100, 1000, 23_800, 250_000, 10**7])
        got = num_bytes_for_ndv(ndv, fpp)
        want = [32 if n == 0 else SBBF.for_ndv(int(n), fpp).num_bytes for n in ndv]
        assert got.tolist() == want, f"fpp={fpp}"


def test_adaptive_filters_do_not_saturate():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in rng.integers(0, 10**6, 40_000)]
    arr = pa.array([" ".join(words[i:i + 10]) for i in range(0, 40_000, 10)])
    zs, zl = zones_of(len(arr), 1000)
    g = make("sbbf", ("token",), (("fpp", 0.01),)).aggregator().build(arr, zs, zl)
    assert g.fpp_estimate.max() < 0.02, g.fpp_estimate
    assert not g.saturated.any()
    tiny = make("tokenbf_v1", (32, 3, 0)).aggregator().build(arr, zs, zl)
    assert tiny.saturated.all() and tiny.fpp_estimate.min() > SATURATION_FPP
    assert tiny.fill_ratio.min() > 0.99


def test_empty_part_and_all_null_zone():
    idx = make("sbbf", ("token",))
    g = idx.aggregator().build(pa.array([], pa.string()), np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(g) == 0 and g.words.size == 0
    back = idx.granules_from_arrow(g.to_arrow("p"))
    assert len(back) == 0
    g = idx.aggregator().build(pa.array([None, None, "a"], pa.string()), np.array([0, 2]), np.array([2, 1]))
    assert g.ndv.tolist() == [0, 1] and g.num_bytes.tolist() == [32, 32]
    assert g.has_null.tolist() == [True, False]


def test_zones_must_tile_the_rows():
    idx = make("minmax", column_type=pa.int64())
    with pytest.raises(ValueError, match="tile"):
        idx.aggregator().build(pa.array([1, 2, 3]), np.array([0, 2]), np.array([1, 1]))


# ------------------------------------------------------- Lance zone tables

ROUND_TRIP = [
    ("minmax", (), (), pa.array([5, None, -3, 9, None, None], pa.int64())),
    ("minmax", (), (), pa.array(["b", "", None, "ü", "a", None], pa.string())),
    ("minmax", (), (), pa.array([1.5, float("nan"), None, None, None, 2.0], pa.float64())),
    ("minmax", (), (), pa.array([0, 86400 * 3, None, 5, 6, 7], pa.timestamp("s"))),
    ("set", (2,), (), pa.array(["b", "", None, "ü", "a", "c"], pa.string())),
    ("set", (0,), (), pa.array([1, 1, None, None, None, 2], pa.uint16())),
    ("bloom_filter", (), (), pa.array(["b", "", None, "ü", "a", "c"], pa.string())),
    ("bloom_filter", (0.1,), (), pa.array([1, 2, None, 3, 4, 4], pa.int32())),
    ("tokenbf_v1", (64, 3, 0), (), pa.array(["b c", "", None, "ü x", "a", None], pa.string())),
    ("ngrambf_v1", (2, 64, 3, 1), (), pa.array(["b c", "", None, "ü x", "a", None], pa.large_string())),
    ("sbbf", ("ngram",), (("n", 3),), pa.array(["abcd", "", None, "üxyz", "a", None], pa.string())),
]


@pytest.mark.parametrize("type_name,args,kwargs,values", ROUND_TRIP,
                         ids=[f"{t}{a}{dict(k) or ''}-{v.type}" for t, a, k, v in ROUND_TRIP])
def test_round_trip(type_name, args, kwargs, values):
    idx = make(type_name, args, kwargs, column_type=values.type)
    zs, zl = np.array([0, 2, 3]), np.array([2, 1, 3])
    g = idx.aggregator().build(values, zs, zl)
    t = g.to_arrow("part_7")
    import xxhash

    # Lance's zone schema: fragment_id UInt64 (xxh64 of the part name; the name in the metadata)
    assert t.column_names[:5] == ["fragment_id", "zone_start", "zone_length", "has_null", "null_count"]
    assert t.schema.field("fragment_id").type == pa.uint64()
    assert t.column("fragment_id").to_pylist() == [xxhash.xxh64_intdigest(b"part_7")] * 3
    assert t.schema.metadata[b"skipidx.part"] == b"part_7"
    if type_name in ("bloom_filter", "tokenbf_v1", "ngrambf_v1", "sbbf"):
        md = t.schema.metadata
        assert b"bloomfilter_item" in md and 0 <= float(md[b"bloomfilter_probability"]) <= 1
    assert t.column("zone_start").to_pylist() == [0, 2, 3]
    assert t.column("zone_length").to_pylist() == [2, 1, 3]
    md = t.schema.metadata
    assert md[b"skipidx.index_type"] == type_name.encode()
    assert json.loads(md[b"skipidx.params"]) == json.loads(json.dumps(idx.validate(idx.definition, values.type)))
    assert md[b"bloomfilter_item"] == b"3"
    back = idx.granules_from_arrow(t)
    t2 = back.to_arrow("part_7")
    assert t2.equals(t, check_metadata=True), "to_arrow(from_arrow(t)) must give t back"
    if type_name in ("bloom_filter", "tokenbf_v1", "ngrambf_v1", "sbbf"):
        assert md[b"skipidx.tokenizer"] == idx.params["tokenizer"].encode()
        assert md[b"skipidx.tokenizer_version"] == str(idx.tokenizer.version).encode()
        assert t.schema.field("bloom_filter_data").type == pa.binary()
        if idx.params["sizing"] == "ndv":
            assert float(md[b"bloomfilter_probability"]) == idx.params["fpp"]


def _sbbf_table():
    idx = make("sbbf", ("token",))
    g = idx.aggregator().build(pa.array(["a b", "c", None, "d e f"]), np.array([0, 2]), np.array([2, 2]))
    return idx, g.to_arrow("p")


def _replace(t, name, arr):
    i = t.schema.get_field_index(name)
    return t.set_column(i, pa.field(name, arr.type), arr)


CORRUPT = [
    ("missing column", lambda t: t.drop_columns(["bloom_filter_data"]), "missing column 'bloom_filter_data'"),
    ("wrong zone type", lambda t: _replace(t, "zone_start", t.column("zone_start").cast(pa.int64())),
     "has type int64"),
    ("short filter", lambda t: _replace(t, "bloom_filter_data", pa.array([b"\0" * 32, b"\0" * 31])),
     "whole number of 32-byte blocks"),
    ("resized filter", lambda t: _replace(t, "bloom_filter_data", pa.array([b"\0" * 32, b"\0" * 64])),
     "filter sizes do not match"),
    ("ndv tampered", lambda t: _replace(t, "ndv", pa.array([2, 5000], pa.uint64())), "filter sizes do not match"),
    ("gap in zones", lambda t: _replace(t, "zone_start", pa.array([0, 3], pa.uint64())), "not contiguous"),
    ("null count", lambda t: _replace(t, "null_count", pa.array([0, 0], pa.uint64())), "inconsistent"),
    ("fill ratio", lambda t: _replace(t, "fill_ratio", pa.array([0.1, 7.0])), "out of range"),
    ("wrong type", lambda t: t.replace_schema_metadata({**t.schema.metadata, b"skipidx.index_type": b"minmax"}),
     "index type 'minmax'"),
    ("future version", lambda t: t.replace_schema_metadata({**t.schema.metadata, b"skipidx.format_version": b"9"}),
     "format version 9"),
    ("bad params", lambda t: t.replace_schema_metadata({**t.schema.metadata, b"skipidx.params": b"{"}),
     "bad params"),
    ("other params", lambda t: t.replace_schema_metadata(
        {**t.schema.metadata, b"skipidx.params": json.dumps({"fpp": 0.5}).encode()}), "built with params"),
    ("tokenizer version", lambda t: t.replace_schema_metadata(
        {**t.schema.metadata, b"skipidx.tokenizer_version": b"0"}), "version 0"),
    ("no metadata", lambda t: t.replace_schema_metadata(None), "index type None"),
]


@pytest.mark.parametrize("damage,message", [(d, m) for _, d, m in CORRUPT], ids=[c[0] for c in CORRUPT])
def test_corrupt_tables_are_rejected(damage, message):
    idx, t = _sbbf_table()
    with pytest.raises(CorruptionError) as e:
        idx.granules_from_arrow(damage(t))
    assert message in str(e.value), str(e.value)


def test_corrupt_minmax_and_set_tables():
    mm = make("minmax", column_type=pa.int64())
    t = mm.aggregator().build(pa.array([1, None, 3]), np.array([0, 2]), np.array([2, 1])).to_arrow("p")
    with pytest.raises(CorruptionError, match="has type string"):
        mm.granules_from_arrow(_replace(t, "min", pa.array(["a", "b"])))
    with pytest.raises(CorruptionError, match="min/max missing"):
        mm.granules_from_arrow(_replace(t, "max", pa.array([None, 3], pa.int64())))
    st_ = make("set", (1,), column_type=pa.int64())
    t = st_.aggregator().build(pa.array([1, 1, 3]), np.array([0, 2]), np.array([2, 1])).to_arrow("p")
    with pytest.raises(CorruptionError, match="larger than its zone allows"):
        st_.granules_from_arrow(_replace(t, "values", pa.array([[1, 2], [3]], pa.list_(pa.int64()))))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), min_size=1, max_size=40),
       zone=st.integers(1, 7), kind=st.sampled_from(["int64", "float64", "timestamp", "date32", "uint8"]))
def test_minmax_numpy_path_equals_hash_aggregate(values, zone, kind):
    """minmax's reduceat path (fixed-width types) gives exactly the hash-aggregate's bounds."""
    from skipidx.indexes.minmax import _numeric_view, _reduce_generic

    if kind == "float64":
        arr = pa.array([None if v is None else (float("nan") if v % 5 == 0 else v / 7) for v in values],
                       pa.float64())
    elif kind == "uint8":
        arr = pa.array([None if v is None else v % 256 for v in values], pa.uint8())
    elif kind == "date32":
        arr = pa.array([None if v is None else v % 100_000 for v in values], pa.int32()).cast(pa.date32())
    else:
        arr = pa.array(values, pa.int64())
        if kind == "timestamp":
            arr = arr.view(pa.timestamp("ms"))
    zs, zl = zones_of(len(arr), zone)
    g = make("minmax", column_type=arr.type).aggregator().build(arr, zs, zl)
    has_vals = g.value_count > 0
    lo, hi = _reduce_generic(arr, zs, zl, has_vals)
    assert _numeric_view(arr) is not None
    assert g.min.equals(lo) and g.max.equals(hi), (g.min, lo, g.max, hi)


@pytest.mark.parametrize("case", SBBF_CASES, ids=[f"{t}{a}{dict(k) or ''}" for t, a, k in SBBF_CASES])
def test_many_slices_on_threads_equal_one_slice(case, monkeypatch):
    """Builds cut into many zone slices (run on the thread pool) equal the one-slice build."""
    import skipidx.indexes.bloom as bloom

    type_name, args, kwargs = case
    arr = pa.array((TEXT.to_pylist() * 4)[3:], pa.string())
    zs, zl = zones_of(len(arr), 5)
    idx = make(type_name, args, kwargs)
    whole = {f: SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=f).build(arr, zs, zl)
             for f in (True, False)}
    monkeypatch.setattr(bloom, "CHUNK_BYTES", 40)
    monkeypatch.setattr(bloom, "BUILD_THREADS", 3)
    for fused in (True, False):
        g = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=fused).build(arr, zs, zl)
        assert np.array_equal(g.words, whole[fused].words), f"fused={fused}"
        assert np.array_equal(g.words, whole[not fused].words)
        assert (g.ndv is None) or np.array_equal(g.ndv, whole[fused].ndv)


@pytest.mark.parametrize("type_name,args,kwargs,values", ROUND_TRIP[:8])
def test_reads_files_written_before_fragment_id(type_name, args, kwargs, values):
    """An index file with the old ``part`` string column (before Lance's fragment_id) still reads."""
    idx = make(type_name, args, kwargs, column_type=values.type)
    g = idx.aggregator().build(values, np.array([0, 2, 3]), np.array([2, 1, 3]))
    t = g.to_arrow("part_7")
    old = t.set_column(0, pa.field("part", pa.string(), nullable=False), pa.array(["part_7"] * 3, pa.string()))
    g2 = idx.granules_from_arrow(old)
    assert g2.zone_start.tolist() == [0, 2, 3] and g2.has_null.tolist() == g.has_null.tolist()
