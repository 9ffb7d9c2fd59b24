"""The scan's id-lookup fast paths give exactly the answers of the plain paths.

- WHERE subtrees over one dictionary-read String column are evaluated on the
  dictionary values (``evaluate._on_dictionary``): every function, NULLs in
  the indices and in the dictionary, several chunks with their own
  dictionaries, sliced chunks -- equal to evaluating the decoded column.
- End to end: a table whose low-cardinality String columns are written
  dictionary-encoded answers the same with dictionary reads on and off.
- IN on fixed-width columns (the bitmap kernel) equals ``pc.is_in`` with
  ClickHouse's NULL rules, for every integer width, extreme values and long lists.
- The scan's job split.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.expr import evaluate as E
from skipidx.expr import kernels as F
from skipidx.execution import scan as S
from skipidx.expr.binder import bind_where
from skipidx.sql.parser import parse_expression

DDL = """CREATE TABLE t (id UInt64, s Nullable(String), k String, n Int64)
    ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 128"""

#: values drawn for s and k: tokens, separators, case, non-ASCII, empty, LIKE metacharacters
ALPHABET = ["", "a", "A b", "abc", "ab_c", "x%y", "hello world", "Hello-World", "ÄÖ ü", "tok tok",
            "error 42", "ERROR", "z" * 20, "a.b", "\\x"]

#: WHERE templates over s (nullable) and k; {v} and {w} are constants from ALPHABET
WHERES = [
    "s = '{v}'", "s != '{v}'", "s < '{v}'", "s >= '{v}'", "s IN ('{v}', '{w}')", "s NOT IN ('{v}', '{w}')",
    "s IN ('{v}', NULL)", "s NOT IN ('{v}', NULL)",
    "s LIKE '%{v}%'", "s NOT LIKE '{v}%'", "s ILIKE '%{v}'", "s NOT ILIKE '{v}'",
    "hasToken(s, 'tok')", "hasTokenCaseInsensitive(s, 'error')", "hasTokenOrNull(s, 'world')",
    "startsWith(s, '{v}')", "endsWith(s, '{v}')", "multiSearchAny(s, ['{v}', '{w}'])", "match(s, '^a.*c$')",
    "lower(s) = lower('{v}')", "upper(s) != '{v}'", "length(s) > 3", "length(s) % 2 = 1",
    "s IS NULL", "s IS NOT NULL", "isNull(s) OR s = '{v}'", "NOT (s = '{v}')",
    "s = '{v}' OR k = '{w}'", "s = '{v}' AND NOT (k LIKE '%a%')", "s = k", "s != k AND n > 3",
    "lower(s) = k", "(s = '{v}' OR n < 2) AND k IN ('{w}', 'abc')", "NOT (s IS NULL) AND length(k) = n",
]


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("'", "\\'")


@pytest.fixture(scope="module")
def meta():
    with skipidx.connect() as d:
        d.sql(DDL)
        snap = d.catalog.table("t").snapshot()
        with snap:
            yield snap.meta


def _dict_chunks(values: list, cuts: list[int], null_in_dictionary: bool) -> pa.ChunkedArray:
    """`values` as dictionary chunks cut at `cuts` (each its own dictionary; one
    chunk sliced out of a larger array so it has an offset)."""
    chunks = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = values[a:b]
        arr = pa.array(["pad"] + part, pa.string()).dictionary_encode().slice(1)
        if null_in_dictionary and len(part):
            # a NULL *value* in the dictionary too (Arrow allows both kinds of NULL)
            d = pa.concat_arrays([arr.dictionary, pa.nulls(1, pa.string())])
            idx = arr.indices.to_pylist()
            idx = [len(d) - 1 if (v is None and i % 2) else x for i, (v, x) in enumerate(zip(part, idx))]
            arr = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), d)
        chunks.append(arr)
    return pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), pa.string()))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_dictionary_evaluation_equals_decoded(meta, data):
    n = data.draw(st.integers(1, 60), label="rows")
    s = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(ALPHABET[:6])), min_size=n, max_size=n), label="s")
    k = data.draw(st.lists(st.sampled_from(ALPHABET), min_size=n, max_size=n), label="k")
    nums = data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n), label="n")
    inner = sorted(data.draw(st.sets(st.integers(0, n), max_size=3), label="cuts"))
    cuts = [0] + inner + [n]
    null_in_dict = data.draw(st.booleans(), label="null in dictionary")
    v, w = data.draw(st.sampled_from(ALPHABET), label="v"), data.draw(st.sampled_from(ALPHABET), label="w")
    sql = data.draw(st.sampled_from(WHERES), label="where").format(v=_esc(v), w=_esc(w))
    e = bind_where(meta, parse_expression(sql))
    plain = pa.table({"id": pa.array(range(n), pa.uint64()), "s": pa.array(s, pa.string()),
                      "k": pa.array(k, pa.string()), "n": pa.array(nums, pa.int64())})
    encoded = plain.set_column(1, "s", _dict_chunks(s, cuts, null_in_dict))
    if data.draw(st.booleans(), label="k dictionary too"):
        encoded = encoded.set_column(2, "k", _dict_chunks(k, cuts, False))
    old = E.DICT_EVAL_MAX_RATIO
    E.DICT_EVAL_MAX_RATIO = 100.0   # always on the dictionary, however small the sample
    try:
        got = E.evaluate(e, encoded)
        got_mask = E.where_mask(e, encoded)
    finally:
        E.DICT_EVAL_MAX_RATIO = old
    want = E.evaluate(e, plain)
    assert got.type == want.type, f"{sql}: type {got.type} vs {want.type}"
    assert got.to_pylist() == want.to_pylist(), f"{sql}: dictionary evaluation differs from decoded"
    want_mask = E.where_mask(e, plain)
    assert (got_mask is None) == (want_mask is None) and (
        got_mask is None or got_mask.to_pylist() == want_mask.to_pylist()), f"{sql}: masks differ"


def test_large_dictionaries_fall_back_to_decoded(meta):
    e = bind_where(meta, parse_expression("s = 'a'"))
    col = pa.chunked_array([pa.array(["a", "b", None, "c"]).dictionary_encode()])
    assert E._on_dictionary(e, col, "s") is None, "4 distinct of 4 rows: not worth a dictionary evaluation"
    got = E.evaluate(e, pa.table({"id": pa.array([1, 2, 3, 4], pa.uint64()), "s": col,
                                  "k": pa.array(["", "", "", ""]), "n": pa.array([0, 0, 0, 0])}))
    assert got.to_pylist() == [True, False, None, False]


# ---------------------------------------------------------------- end to end
def _table_rows(lo: int, n: int) -> pa.Table:
    rng = np.random.default_rng(lo)
    s = [None if x == 0 else ALPHABET[x] for x in rng.integers(0, len(ALPHABET), n).tolist()]
    return pa.table({"id": pa.array(np.arange(lo, lo + n), pa.uint64()), "s": pa.array(s, pa.string()),
                     "k": pa.array([ALPHABET[x] for x in rng.integers(0, 8, n).tolist()]),
                     "n": pa.array(rng.integers(0, 7, n), pa.int64())})


@pytest.fixture(scope="module")
def db():
    with skipidx.connect() as d:
        d.sql(DDL)
        d.insert("t", _table_rows(0, 2000))
        d.insert("t", _table_rows(2000, 1500))
        yield d


@pytest.mark.parametrize("where", WHERES, ids=lambda w: w[:40])
def test_sql_with_and_without_dictionary_reads(db, where, monkeypatch):
    snap = db.catalog.table("t").snapshot()
    with snap:
        assert all({"s", "k"} <= p.dictionary_columns for p in snap.parts), "s, k should be dictionary-written"
    sql_where = where.format(v=_esc("abc"), w=_esc("A b"))
    queries = [f"SELECT count(), sum(id) FROM t WHERE {sql_where}",
               f"SELECT id, s, k FROM t WHERE {sql_where} ORDER BY id LIMIT 50",
               f"SELECT s, count() FROM t WHERE {sql_where} GROUP BY s ORDER BY s"]
    calls = []
    real = E._on_dictionary
    monkeypatch.setattr(E, "_on_dictionary", lambda *a: calls.append(a[2]) or real(*a))
    with_dict = [db.sql(q).to_arrow() for q in queries]
    if where not in ("s = k", "s != k AND n > 3", "lower(s) = k"):   # those compare s with another column
        assert "s" in calls, f"{where}: no subtree was evaluated on the dictionary of s"
    monkeypatch.setattr(S, "DICTIONARY_READS", False)
    plain = [db.sql(q).to_arrow() for q in queries]
    for q, a, b in zip(queries, with_dict, plain):
        assert a.schema == b.schema, f"{q}: schema {a.schema} vs {b.schema}"
        assert a.to_pylist() == b.to_pylist(), f"{q}: answers differ with dictionary reads"


# ---------------------------------------------------------------- IN kernel
INT_TYPES = [pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32(), pa.int64(), pa.uint64()]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_in_kernel_matches_reference(data):
    typ = data.draw(st.sampled_from(INT_TYPES + [pa.date32(), pa.timestamp("ms")]), label="type")
    store = typ if pa.types.is_integer(typ) else pa.int32() if pa.types.is_date(typ) else pa.int64()
    info = np.iinfo(store.to_pandas_dtype())
    lo, hi = (int(info.min), int(info.max)) if store == typ else (-50_000, 2_000_000)  # dates Python can hold
    edge = [lo, hi, 0, 1, hi - 1]
    val = st.one_of(st.sampled_from(edge), st.integers(lo, hi), st.integers(-3, 3).filter(lambda x: lo <= x <= hi))
    values = data.draw(st.lists(st.one_of(st.none(), val), max_size=200), label="values")
    n_list = data.draw(st.sampled_from([1, 3, 10, 64, 300, 1100]), label="list length")
    wanted = data.draw(st.lists(val, min_size=1, max_size=n_list), label="list")
    if values and data.draw(st.booleans(), label="list from the values"):
        wanted += [v for v in values[:n_list] if v is not None]
    negated = data.draw(st.booleans(), label="negated")
    raw = pa.array(values, store)
    arr = raw if store == typ else raw.view(typ)
    off = data.draw(st.integers(0, len(values)), label="slice")
    arr = pa.chunked_array([arr.slice(0, off), arr.slice(off)], type=typ)
    lst = wanted if store == typ else pa.array(wanted, store).view(typ).to_pylist()
    got = F.is_in(arr, lst, negated=negated)
    ref = pc.is_in(raw, value_set=pa.array(wanted, store))
    want = [None if v is None else bool(h) != negated for v, h in zip(values, ref.to_pylist())]
    assert got.to_pylist() == want, f"IN over {typ}: {len(wanted)} values"
    assert [len(c) for c in got.chunks] == [len(c) for c in arr.chunks]


def test_in_kernel_adversarial_hash_collisions():
    # values that share their low bits (a weak hash would send all rows to the slow path): still exact
    vals = (np.arange(5000, dtype=np.uint64) << np.uint64(20))
    arr = pa.array(vals)
    wanted = [int(vals[7]), int(vals[4999]), 12345]
    got = F.is_in(arr, wanted).to_numpy(zero_copy_only=False)
    assert got.sum() == 2 and got[7] and got[4999]


# ---------------------------------------------------------------- job split
class _Sel:
    def __init__(self, ranges):
        self.ranges = ranges


@pytest.mark.parametrize("ranges,threads,want", [
    ([(0, 40)], 2, 10),          # 4 jobs of 10 (was 16 + 16 + 8)
    ([(0, 3), (10, 14)], 2, 4),  # 7 granules: 4 + 3
    ([(0, 1)], 2, 1),
    ([(0, 1221)], 2, 16),        # a full scan keeps jobs of at most 16
    ([(0, 33)], 2, 9),           # 4 jobs
    ([(0, 40)], 1, 14),          # one thread: 3 jobs
    ([], 2, 16),
], ids=["40", "7", "1", "1221", "33", "40-one-thread", "none"])
def test_job_granules(ranges, threads, want, monkeypatch):
    monkeypatch.setattr(S, "SCAN_THREADS", threads)
    assert S.job_granules([_Sel(ranges)]) == want
    total = sum(b - a for a, b in ranges)
    if total:
        jobs = list(S.split_ranges(ranges, want))
        assert sum(b - a for j in jobs for a, b in j) == total
        assert max(sum(b - a for a, b in j) for j in jobs) <= S.SCAN_JOB_GRANULES


def test_small_scans_run_in_the_calling_thread(db, monkeypatch):
    """A scan of little data (kept granules x their columns' bytes) is read in
    one job in this thread; a large one goes to the pool in even jobs."""
    snap = db.catalog.table("t").snapshot()
    with snap:
        parts = snap.parts
        per = {c: parts[0].granule_bytes([c]) for c in ("id", "s", "k", "n")}
        assert all(v > 0 for v in per.values()), per
        assert parts[0].granule_bytes(["id", "k"]) == pytest.approx(per["id"] + per["k"])
        sels = [_Sel([(0, p.n_granules)]) for p in parts]
        for sel, p in zip(sels, parts):
            sel.part = p
        assert S._small_scan(sels, ["id", "s"]), "a few KiB: this thread"
        assert S._small_scan(sels, []), "no columns: nothing is read"
        monkeypatch.setattr(S, "SCAN_INLINE_BYTES", 1)
        assert not S._small_scan(sels, ["id", "s"])
        assert S._small_scan([_Sel([(0, 1)])], ["id"]), "one granule: this thread whatever its size"
    # answers are the same either way
    q = "SELECT count(), sum(id) FROM t WHERE s IN ('abc', 'A b') OR n = 3"
    pool = db.sql(q).fetchall()
    monkeypatch.setattr(S, "SCAN_INLINE_BYTES", 1 << 40)
    assert db.sql(q).fetchall() == pool
