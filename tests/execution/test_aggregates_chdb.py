"""skipidx.execution.aggregates vs chDB: values and result types, whole table and GROUP BY.

The table goes to chDB as Parquet; required (nullable=False) Arrow fields are
ClickHouse non-Nullable columns, optional ones Nullable, so both empty-input
rules (type default vs NULL) are exercised.
"""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import datetime
import math

import numpy as np
import pyarrow as pa
import pytest

from functions_corpus import chdb_error, write_parquet
from skipidx.core.errors import SkipidxError
from skipidx.execution.aggregates import aggregate, result_type

chdb = pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SEED = 424242
N = 4000

_CH_TYPES = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
             "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float": "Float32", "double": "Float64",
             "string": "String", "binary": "String", "large_string": "String", "bool": "Bool",
             "date32[day]": "Date32"}


@pytest.fixture(scope="module")
def agg_data(tmp_path_factory):
    rnd = np.random.default_rng(SEED)
    null = rnd.random(N) < 0.1
    allnull_group = rnd.integers(0, 30, N)
    f64 = rnd.normal(0, 1e3, N)
    f64[rnd.random(N) < 0.01] = np.nan
    i64 = rnd.integers(-2**40, 2**40, N)
    i64[:2] = [2**63 - 1, 2**63 - 1]  # wraps in sum, as in ClickHouse
    words = np.array(["alpha", "beta", "gamma", "", "\u00e9t\u00e9", "zeta", "Alpha", "\U0001F600"])
    fields = {
        "k": (pa.array(rnd.integers(0, 30, N).astype(np.int32)), False),
        "nk": (pa.array([f"g{v}" for v in rnd.integers(0, 12, N)], mask=rnd.random(N) < 0.05), True),
        "i8": (pa.array(rnd.integers(-128, 128, N).astype(np.int8)), False),
        "u8": (pa.array(rnd.integers(0, 256, N).astype(np.uint8)), False),
        "i32": (pa.array(rnd.integers(-2**31, 2**31, N).astype(np.int32)), False),
        "i64": (pa.array(i64), False),
        "u64": (pa.array(rnd.integers(0, 2**62, N).astype(np.uint64) * np.uint64(3)), False),
        "f32": (pa.array(rnd.normal(0, 10, N).astype(np.float32)), False),
        "f64": (pa.array(f64), False),
        "s": (pa.array(words[rnd.integers(0, len(words), N)]), False),
        "ni32": (pa.array(rnd.integers(-1000, 1000, N).astype(np.int32), mask=null | (allnull_group == 7)), True),
        "nf64": (pa.array(rnd.normal(0, 1, N), mask=null), True),
        "ns": (pa.array(words[rnd.integers(0, len(words), N)], mask=null), True),
        "d": (pa.array(rnd.integers(19000, 19100, N).astype(np.int32)).cast(pa.date32()), False),
        "b": (pa.array(rnd.random(N) < 0.3), False),
    }
    # ni32 is NULL on every row of group k == 7: its sum/avg/min there must be NULL.
    fields["k"] = (pa.array(allnull_group.astype(np.int32)), False)
    schema = pa.schema([pa.field(n, a.type, nullable=nl) for n, (a, nl) in fields.items()])
    table = pa.Table.from_arrays([a for a, _ in fields.values()], schema=schema)
    path = write_parquet(table, tmp_path_factory.mktemp("agg") / "agg.parquet")
    return table, path


def _ch(path: str, select: str, where: str = "", group: str = "") -> pa.Table:
    sql = f"SELECT {select} FROM file('{path}', Parquet) {where} {group} SETTINGS max_threads = 1"
    return chdb_oracle.query(sql, "ArrowTable")


def _same_value(x, y, func: str) -> bool:
    if isinstance(x, bytes) or isinstance(y, bytes):
        xb = x.encode() if isinstance(x, str) else x
        yb = y.encode() if isinstance(y, str) else y
        return xb == yb
    if isinstance(x, float) or isinstance(y, float):
        if x is None or y is None:
            return x is y
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        # Float sums depend on summation order (Arrow pairwise, ClickHouse unrolled).
        return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y)) if func in ("sum", "avg") else x == y
    if isinstance(x, datetime.date) or isinstance(y, datetime.date):
        return x == y
    return x == y


_FUNCS = ["count", "sum", "avg", "min", "max", "uniqExact", "any"]
_COLS = ["i8", "u8", "i32", "i64", "u64", "f32", "f64", "s", "ni32", "nf64", "ns", "d", "b"]


def _cases():
    for c in _COLS:
        for f in _FUNCS:
            if (f == "sum" and c in ("s", "ns", "d")) or (f == "avg" and c in ("s", "ns")):
                continue
            if f in ("sum", "avg", "min", "max", "any") and c == "b":
                continue  # Bool reads back from chDB as Bool/UInt8 but Arrow keeps bool; covered by sum below
            yield f, c
    yield "sum", "b"


def _check(mine: pa.Table, theirs: pa.Table, specs, label: str) -> None:
    assert mine.num_rows == theirs.num_rows, f"{label}: {mine.num_rows} rows vs chDB {theirs.num_rows}"
    for i, (f, c, out) in enumerate(specs):
        got = mine.column(out).to_pylist()
        want = theirs.column(out).to_pylist()
        bad = [r for r, (x, y) in enumerate(zip(got, want)) if not _same_value(x, y, f)]
        assert not bad, f"{label}: {f}({c}) differs on rows {bad[:5]}: {[got[r] for r in bad[:3]]} vs chDB {[want[r] for r in bad[:3]]}"


def _specs():
    specs = [("count", None, "cnt")]
    specs += [(f, c, f"{f}_{c}") for f, c in _cases()]
    return specs


def _ch_select(specs) -> str:
    return ", ".join(f"{f}({'' if c is None else c}) AS {out}" for f, c, out in specs)


@pytest.mark.parametrize("where", ["", "WHERE i8 > 0", "WHERE i8 > 1000"], ids=["all", "half", "empty"])
def test_whole_table_aggregates_match_chdb(agg_data, where):
    table, path = agg_data
    specs = _specs()
    theirs = _ch(path, _ch_select(specs), where=where)
    t = table
    if where == "WHERE i8 > 0":
        t = table.filter(pa.compute.greater(table.column("i8"), 0))
    elif where == "WHERE i8 > 1000":
        t = table.slice(0, 0)
    mine = aggregate(t, [], specs)
    _check(mine, theirs, specs, f"whole table {where or 'all rows'}")


@pytest.mark.parametrize("keys", [["k"], ["nk"], ["k", "nk"], ["s"], ["b", "k"]], ids=lambda k: ",".join(k))
def test_group_by_aggregates_match_chdb(agg_data, keys):
    table, path = agg_data
    specs = _specs()
    kl = ", ".join(keys)
    theirs = _ch(path, f"{kl}, {_ch_select(specs)}", group=f"GROUP BY {kl} ORDER BY {kl}")
    mine = aggregate(table, keys, specs)
    mine = mine.take(pa.compute.sort_indices(mine, sort_keys=[(k, "ascending", "at_end") for k in keys]))
    for k in keys:
        got = mine.column(k).to_pylist()
        want = theirs.column(k).to_pylist()
        assert [_same_value(x, y, "key") for x, y in zip(got, want)] == [True] * len(want) and len(got) == len(want), \
            f"GROUP BY {kl}: keys differ"
    _check(mine, theirs, specs, f"GROUP BY {kl}")


def test_result_types_match_chdb(agg_data):
    table, path = agg_data
    specs = _specs()
    sel = ", ".join(f"toTypeName({f}({'' if c is None else c})) AS {out}" for f, c, out in specs)
    theirs = _ch(path, sel)
    mine = aggregate(table, [], specs)
    for f, c, out in specs:
        want = theirs.column(out).to_pylist()[0]
        want = want.decode() if isinstance(want, bytes) else want
        base = want.removeprefix("Nullable(").removesuffix(")")
        assert _CH_TYPES[str(mine.schema.field(out).type)] == base, f"{f}({c}): {mine.schema.field(out).type} vs {want}"
        if c is not None and f not in ("count", "uniqExact"):
            assert want.startswith("Nullable(") == table.schema.field(c).nullable, f"{f}({c}): nullability {want}"
        assert result_type(f, None if c is None else table.schema.field(c).type) == mine.schema.field(out).type


@pytest.mark.parametrize("spec,message", [
    (("median", "i8", "m"), "Unknown aggregate function median"),
    (("sum", "s", "x"), "Illegal type"),
    (("avg", "s", "x"), "Illegal type"),
    (("sum", "nope", "x"), "Unknown column nope"),
    (("min", None, "x"), "needs an argument"),
], ids=["unknown-func", "sum-string", "avg-string", "unknown-col", "min-no-arg"])
def test_bad_aggregates_raise_skipidx_error(agg_data, spec, message):
    table, path = agg_data
    f, c, _ = spec
    if c not in (None, "nope") and f != "median":
        assert chdb_error(f"SELECT {f}({c}) FROM file('{path}', Parquet)") is not None, "chDB accepts it"
    with pytest.raises(SkipidxError, match=message):
        aggregate(table, [], [spec])


def test_group_by_unknown_key_and_duplicate_output_raise(agg_data):
    table, _ = agg_data
    with pytest.raises(SkipidxError, match="Unknown GROUP BY column zz"):
        aggregate(table, ["zz"], [("count", None, "c")])
    with pytest.raises(SkipidxError, match="duplicate output column name c"):
        aggregate(table, [], [("count", None, "c"), ("sum", "i8", "c")])


def test_group_by_empty_input_gives_no_rows_like_chdb(agg_data):
    table, path = agg_data
    theirs = _ch(path, "k, count() AS c, sum(i8) AS s", where="WHERE i8 > 1000", group="GROUP BY k")
    mine = aggregate(table.slice(0, 0), ["k"], [("count", None, "c"), ("sum", "i8", "s")])
    assert theirs.num_rows == 0 and mine.num_rows == 0
    assert mine.schema.field("c").type == pa.uint64() and mine.schema.field("s").type == pa.int64()


def test_dictionary_and_chunked_columns(agg_data):
    table, _ = agg_data
    plain = aggregate(table, ["nk"], [("min", "s", "mn"), ("uniqExact", "s", "u"), ("count", None, "c")])
    enc = table.set_column(table.schema.get_field_index("s"), pa.field("s", pa.dictionary(pa.int32(), pa.string()),
                                                                          nullable=False),
                           table.column("s").dictionary_encode())
    enc = pa.Table.from_batches(enc.to_batches(max_chunksize=333))
    other = aggregate(enc, ["nk"], [("min", "s", "mn"), ("uniqExact", "s", "u"), ("count", None, "c")])
    key = [("nk", "ascending")]
    a = plain.take(pa.compute.sort_indices(plain, sort_keys=key)).to_pylist()
    b = other.take(pa.compute.sort_indices(other, sort_keys=key)).to_pylist()
    assert a == b, "dictionary-encoded, chunked input must aggregate like the plain column"


@pytest.mark.parametrize("keys", [[], ["k"], ["nk", "b"]], ids=["whole", "k", "nk,b"])
def test_partial_states_merge_to_chdb_answer(agg_data, keys):
    from skipidx.execution.aggregates import Aggregator

    table, path = agg_data
    specs = _specs()
    kl = ", ".join(keys)
    group = f"GROUP BY {kl} ORDER BY {kl}" if keys else ""
    theirs = _ch(path, f"{kl + ', ' if keys else ''}{_ch_select(specs)}", group=group)
    # Two aggregators over two halves, fed in uneven batches, then merged in order.
    first, second = Aggregator(table.schema, keys, specs), Aggregator(table.schema, keys, specs)
    for i, batch in enumerate(table.to_batches(max_chunksize=333)):
        (first if i < 5 else second).update(batch)
    first.update(table.slice(0, 0))
    first.merge(second)
    mine = first.result()
    if keys:
        mine = mine.take(pa.compute.sort_indices(mine, sort_keys=[(k, "ascending", "at_end") for k in keys]))
    _check(mine, theirs, specs, f"Aggregator {kl or 'whole table'}")
    assert mine.schema == aggregate(table, keys, specs).schema, "partial path must give the one-shot schema"


def test_aggregator_empty_and_mismatch(agg_data):
    from skipidx.execution.aggregates import Aggregator

    table, _ = agg_data
    specs = [("count", None, "c"), ("min", "i8", "m"), ("min", "ni32", "nm")]
    assert Aggregator(table.schema, [], specs).result().to_pylist() == [{"c": 0, "m": 0, "nm": None}]
    with pytest.raises(SkipidxError, match="Unknown column"):
        Aggregator(table.schema, [], [("sum", "nope", "x")])
    a = Aggregator(table.schema, [], specs)
    with pytest.raises(SkipidxError, match="schema differs"):
        a.update(pa.table({"x": [1]}))
    with pytest.raises(SkipidxError, match="different queries"):
        a.merge(Aggregator(table.schema, ["k"], specs))
