"""Storage: tables, parts, granules, marks, inserts, ALTER index, merges."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _store_helpers import ALL_TYPES, log_rows, log_table, make_meta, part_files, state_json, zdef
from skipidx.core.errors import SkipidxError
from skipidx.store.catalog import Catalog
from skipidx.store.commit import commit_parts
from skipidx.store.metadata import TableMeta
from skipidx.store.manifest import DATA_FILE
from skipidx.store.writer import build_part

# ---------------------------------------------------------------- data


def _values(tname: str, n: int, rng: np.random.Generator) -> pa.Array:
    """n values of ClickHouse type `tname` (no NULLs), extremes included."""
    base = tname.replace("LowCardinality(", "").rstrip(")")
    if base.startswith(("UInt", "Int")):
        info = np.iinfo(np.dtype(base.lower()))
        v = rng.integers(info.min, info.max, size=n, dtype=np.dtype(base.lower()), endpoint=True)
        v[:2] = [info.min, info.max][: min(2, n)]
        return pa.array(v)
    if base.startswith("Float"):
        v = rng.normal(size=n).astype(np.float32 if base == "Float32" else np.float64)
        specials = [np.inf, -np.inf, -0.0, np.nan]
        v[: min(4, n)] = specials[: min(4, n)]
        return pa.array(v, from_pandas=False)
    if base == "Bool":
        return pa.array(rng.integers(0, 2, n).astype(bool))
    if base == "String":
        pool = ["", "a", "é", "日本語", "tab\there", "emoji 🎉", "x" * 300, "NUL\x00byte"]
        return pa.array([pool[i % len(pool)] + str(i) * (i % 3) for i in range(n)])
    if base == "Date":
        days = rng.integers(0, 65535, n).astype(np.int32)
        days[: min(2, n)] = [0, 65535][: min(2, n)]
        return pa.array(days, pa.int32()).cast(pa.date32())
    if base == "DateTime":
        s = rng.integers(0, 2**32 - 1, n, endpoint=True).astype(np.int64)
        return pa.array(s).cast(pa.timestamp("s"))
    raise AssertionError(tname)


def _with_nulls(arr: pa.Array, rng) -> pa.Array:
    mask = rng.random(len(arr)) < 0.3
    return pc.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)


def _sorted(t: pa.Table, keys: list[str]) -> pa.Table:
    return t.take(pc.sort_indices(t, sort_keys=[(k, "ascending", "at_end") for k in keys])) if keys else t


# ---------------------------------------------------------------- round trips
ROUND_TRIP = [(t, nullable, rows, gran) for t in ALL_TYPES for nullable in (False, True)
              for rows, gran in ((5, 8192), (1000, 64))]


@pytest.mark.parametrize("tname,nullable,rows,gran", ROUND_TRIP,
                         ids=[f"{'Nullable ' if n else ''}{t}-{r}rows-g{g}" for t, n, r, g in ROUND_TRIP])
def test_round_trip_every_type(tmp_path, tname, nullable, rows, gran):
    rng = np.random.default_rng(len(tname) * 7 + rows)
    decl = tname
    if nullable:
        decl = f"LowCardinality(Nullable(String))" if tname.startswith("LowCardinality") else f"Nullable({tname})"
    vals = _values(tname, rows, rng)
    if nullable:
        vals = _with_nulls(vals, rng)
    key = pa.array(rng.permutation(rows).astype(np.int64))
    meta = make_meta("t", [("k", "Int64"), ("v", decl)], ["k"], gran, [zdef("zv", "v", 2)])
    cat = Catalog(str(tmp_path))
    table = cat.create_table(meta)
    data = pa.table({"k": key, "v": vals})
    assert table.insert(data) == rows
    expected = _sorted(data, ["k"])
    with table.snapshot() as snap:
        [part] = snap.parts
        got = part.read()
        assert got.schema == meta.arrow_schema()
        assert got.column("k").equals(expected.column("k"))
        assert got.column("v").to_pylist() == expected.column("v").to_pylist() or (
            tname.startswith("Float") and np.array_equal(got.column("v").to_numpy(zero_copy_only=False),
                                                         expected.column("v").to_numpy(zero_copy_only=False),
                                                         equal_nan=True))
        # pyarrow reads the part's Parquet file as is, with the same values
        raw = pq.read_table(os.path.join(part.path, DATA_FILE))
        assert raw.column("k").equals(expected.column("k"))
        # marks: every granule but the last is full
        n_gran = -(-rows // gran)
        assert part.n_granules == n_gran
        assert part.marks.tolist() == [min(i * gran, rows) for i in range(n_gran + 1)]
        g = part.load_index("zv")
        assert g.count.sum() == rows - vals.null_count
        assert g.has_null.any() == (vals.null_count > 0)


def test_granule_reads_equal_slices(tmp_path):
    _, table = log_table(str(tmp_path), granularity=100)
    data = log_rows(0, 1234)
    table.insert(data)
    expected = _sorted(data, ["id"])
    with table.snapshot() as snap:
        [p] = snap.parts
        assert p.n_granules == 13 and p.marks[-1] == 1234
        for ranges in ([(0, 1)], [(12, 13)], [(3, 5), (7, 8)], [(7, 8), (3, 5)], [(2, 4), (3, 6)], [(5, 5)], []):
            got = p.read(["id", "msg"], ranges)
            rows = sorted({r for a, b in ranges for r in range(int(p.marks[a]), int(p.marks[b]))})
            assert got.column("id").to_pylist() == [expected.column("id")[r].as_py() for r in rows], ranges
            assert got.column("msg").to_pylist() == [expected.column("msg")[r].as_py() for r in rows]
        assert p.read([], [(0, 2)]).num_rows == 200
        with pytest.raises(SkipidxError, match=r"out of \[0, 13\)"):
            p.read(["id"], [(12, 14)])
        with pytest.raises(SkipidxError, match="no column 'nope'"):
            p.read(["nope"])


@pytest.mark.parametrize("granularity", [1, 2, 4], ids=["G1", "G2", "G4"])
def test_index_granularity_zones(tmp_path, granularity):
    _, table = log_table(str(tmp_path), granularity=10, indexes=[zdef("z", "msg", granularity)])
    data = log_rows(0, 95)
    table.insert(data)
    with table.snapshot() as snap:
        [p] = snap.parts
        g = p.load_index("z")
        starts = list(range(0, 95, 10 * granularity))
        assert g.zone_start.tolist() == starts
        assert g.zone_length.tolist() == [min(s + 10 * granularity, 95) - s for s in starts]
        msgs = p.read(["msg"]).column("msg")
        lens = pc.binary_length(msgs).to_numpy()
        assert g.total.tolist() == [float(lens[s:s + 10 * granularity].sum()) for s in starts]
        # the index file is a plain Arrow IPC file in the Lance zone schema
        t = pa.ipc.open_file(os.path.join(p.path, "idx.z.arrow")).read_all()
        assert t.column_names[:4] == ["part", "zone_start", "zone_length", "has_null"]
        assert set(t.column("part").to_pylist()) == {p.name}


def test_lower_expression_index(tmp_path):
    _, table = log_table(str(tmp_path), granularity=10, indexes=[zdef("z", "msg", 1, expr_func="lower")])
    table.insert(pa.table({"id": pa.array([1, 2], pa.uint64()), "msg": ["ABC", "é"], "lvl": [None, "x"]}))
    with table.snapshot() as snap:
        g = snap.parts[0].load_index("z")
        assert g.total.tolist() == [5.0]


def test_index_build_is_chunked_for_big_parts(tmp_path, monkeypatch):
    """Parts larger than INDEX_CHUNK_ROWS are indexed zone-chunk by zone-chunk,
    with the same zones as in one go."""
    import skipidx.store.writer as part_mod

    monkeypatch.setattr(part_mod, "INDEX_CHUNK_ROWS", 50)
    _, table = log_table(str(tmp_path), granularity=10, indexes=[zdef("z", "msg", 2)])
    table.insert(log_rows(0, 333))
    with table.snapshot() as snap:
        p = snap.parts[0]
        g = p.load_index("z")
        assert g.zone_start.tolist() == list(range(0, 333, 20))
        lens = pc.binary_length(p.read(["msg"]).column("msg")).to_numpy()
        assert g.total.tolist() == [float(lens[s:s + 20].sum()) for s in range(0, 333, 20)]
        t = pa.ipc.open_file(os.path.join(p.path, "idx.z.arrow")).read_all()
        assert t.num_rows == 17


# ---------------------------------------------------------------- inserts
def test_insert_sorts_and_chunks_atomically(tmp_path):
    _, table = log_table(str(tmp_path), granularity=16, settings={"max_part_rows": 100})
    data = log_rows(0, 250)
    assert table.insert(data) == 250
    with table.snapshot() as snap:
        assert [p.num_rows for p in snap.parts] == [100, 100, 50]
        for p in snap.parts:
            ids = p.read(["id"]).column("id").to_numpy()
            assert np.all(np.diff(ids.astype(np.int64)) > 0), "each part is sorted by the key"
        got = snap.read(["id"]).column("id").to_numpy()
    assert sorted(got.tolist()) == list(range(250))
    assert state_json(table.path)["gen"] == 1, "one commit for all parts of one insert"


def test_insert_input_kinds(tmp_path):
    import pandas as pd

    _, table = log_table(str(tmp_path), granularity=16)
    t = log_rows(0, 40)
    assert table.insert(t.to_batches()[0]) == 40
    assert table.insert(pa.RecordBatchReader.from_batches(t.schema, log_rows(40, 30).to_batches(max_chunksize=7))) == 30
    df = log_rows(70, 20).to_pandas()
    assert table.insert(df) == 20
    assert table.insert(pd.DataFrame({"id": [90], "msg": ["x"], "lvl": [None]})) == 1
    assert table.insert(pa.table({"id": pa.array([], pa.uint64()), "msg": pa.array([], pa.string()),
                                  "lvl": pa.array([], pa.string())})) == 0
    assert sorted(table.read(["id"]).column("id").to_pylist()) == list(range(91))
    with pytest.raises(SkipidxError, match="cannot insert a list"):
        table.insert([1, 2])


SCHEMA_ERRORS = [
    ("missing", lambda t: t.drop_columns(["lvl"]), "missing columns: lvl"),
    ("extra", lambda t: t.append_column("zzz", pa.array([1] * t.num_rows)), "unknown columns: zzz"),
    ("mistyped", lambda t: t.set_column(1, "msg", pa.array(range(t.num_rows))), "'msg' is String, got values of type int64"),
    ("out_of_range", lambda t: t.set_column(0, "id", pa.array([-1] + list(range(1, t.num_rows)))),
     "'id' (UInt64): value out of range [0, 18446744073709551615]: -1"),
    ("null_in_non_nullable", lambda t: t.set_column(1, "msg", pa.array([None] + ["a"] * (t.num_rows - 1))),
     "'msg' (String): NULL in a non-Nullable column"),
    ("duplicate", lambda t: t.append_column("id", t.column("id")), "duplicate columns: id"),
]


@pytest.mark.parametrize("case,mutate,msg", SCHEMA_ERRORS, ids=[c[0] for c in SCHEMA_ERRORS])
def test_schema_errors_write_nothing(tmp_path, case, mutate, msg):
    _, table = log_table(str(tmp_path), granularity=16)
    table.insert(log_rows(0, 10))
    before = part_files(table.path)
    with pytest.raises(SkipidxError) as ei:
        table.insert(mutate(log_rows(10, 20)))
    assert msg in str(ei.value)
    assert part_files(table.path) == before
    assert [n for n in os.listdir(os.path.join(table.path, "tmp"))] == []
    assert table.num_rows == 10


def test_bad_value_in_a_later_chunk_writes_nothing(tmp_path):
    _, table = log_table(str(tmp_path), granularity=16, settings={"max_part_rows": 50})
    good = log_rows(0, 120)
    bad = pa.table({"id": pa.array([-7], pa.int64()), "msg": ["x"], "lvl": pa.array([None], pa.string())})
    good = good.cast(bad.schema)
    with pytest.raises(SkipidxError, match="out of range"):
        table.insert(pa.concat_tables([good, bad]))
    assert table.num_rows == 0
    assert os.listdir(os.path.join(table.path, "parts")) == []
    assert os.listdir(os.path.join(table.path, "tmp")) == []


def test_many_small_inserts_then_merge(tmp_path):
    # background merges off: this is OPTIMIZE FINAL's own test
    _, table = log_table(str(tmp_path), granularity=8, indexes=[zdef("z", "msg", 2)],
                         settings={"background_merges": 0})
    expected = []
    for i in range(30):
        t = log_rows(i * 7, 7 + i % 3, seed=i)
        table.insert(t)
        expected.extend(t.column("id").to_pylist())
    assert len(table.snapshot().parts) == 30
    merged = table.optimize(final=True)
    assert merged == 30
    with table.snapshot() as snap:
        [p] = snap.parts
        ids = p.read(["id"]).column("id").to_pylist()
        assert ids == sorted(expected)
        assert p.level == 1
        g = p.load_index("z")
        assert g.zone_start.tolist() == list(range(0, p.num_rows, 16))
        assert int(g.count.sum()) == p.num_rows
    assert table.optimize(final=True) == 0, "FINAL of one complete part does nothing"
    assert len(os.listdir(os.path.join(table.path, "parts"))) == 1, "merged-away parts are removed"


def test_optimize_without_final_respects_size(tmp_path):
    _, table = log_table(str(tmp_path), granularity=8, settings={"max_part_rows": 25})
    for i in range(6):
        table.insert(log_rows(i * 10, 10))
    assert table.optimize() == 6
    assert [p.num_rows for p in table.snapshot().parts] == [20, 20, 20]
    assert table.optimize() == 0
    assert sorted(table.read(["id"]).column("id").to_pylist()) == list(range(60))


# ---------------------------------------------------------------- ALTER
def test_add_materialize_drop_index(tmp_path):
    _, table = log_table(str(tmp_path), granularity=10, indexes=[])
    table.insert(log_rows(0, 50))
    table.insert(log_rows(50, 30))
    table.add_index(zdef("z", "msg", 2))
    assert table.add_index(zdef("z", "msg", 2), if_not_exists=True) is False
    with pytest.raises(SkipidxError, match="already has an index 'z'"):
        table.add_index(zdef("z", "msg"))
    with table.snapshot() as snap:
        assert [p.has_index("z") for p in snap.parts] == [False, False]
        with pytest.raises(SkipidxError, match="no materialized index 'z'"):
            snap.parts[0].load_index("z")
    # a new insert builds the declared index
    table.insert(log_rows(80, 5))
    with table.snapshot() as snap:
        assert [p.has_index("z") for p in snap.parts] == [False, False, True]
        inodes = {os.stat(os.path.join(p.path, DATA_FILE)).st_ino for p in snap.parts}
    assert table.materialize_index("z") == 2
    with table.snapshot() as snap:
        assert all(p.has_index("z") for p in snap.parts)
        for p in snap.parts:
            g = p.load_index("z")
            assert int(g.count.sum()) == p.num_rows
            # the data file is shared by a hard link, not rewritten
            assert os.stat(os.path.join(p.path, DATA_FILE)).st_ino in inodes
        assert snap.num_rows == 85
    assert table.materialize_index("z") == 0
    table.drop_index("z")
    with table.snapshot() as snap:
        assert snap.meta.indexes == []
        for p in snap.parts:
            assert not any(f.startswith("idx.") for f in os.listdir(p.path))
    assert table.drop_index("z", if_exists=True) is False
    with pytest.raises(SkipidxError, match="has no index 'z'"):
        table.drop_index("z")
    assert sorted(table.read(["id"]).column("id").to_pylist()) == list(range(85))


def test_redefined_index_does_not_trust_old_files(tmp_path):
    _, table = log_table(str(tmp_path), granularity=10, indexes=[zdef("z", "msg", 1)])
    table.insert(log_rows(0, 30))
    snap = table.snapshot()
    [p] = snap.parts
    assert p.has_index("z")
    # the same name, another definition: the part's file is for the old one
    meta2 = snap.meta.with_indexes([])
    commit_parts(table.path, [], meta=meta2)
    table.add_index(zdef("z", "msg", 2))
    snap.close()
    with table.snapshot() as s2:
        assert not s2.parts[0].has_index("z"), "fingerprint differs: the old file is not used"


def test_bad_index_definitions(tmp_path):
    _, table = log_table(str(tmp_path), granularity=10, indexes=[])
    with pytest.raises(SkipidxError, match="unknown index type"):
        table.add_index(dataclasses.replace(zdef("z", "msg"), type_name="nope_type"))
    with pytest.raises(SkipidxError, match="no column 'nope'"):
        table.add_index(zdef("z", "nope"))
    with pytest.raises(SkipidxError, match="invalid index name"):
        table.add_index(zdef("../evil", "msg"))
    with pytest.raises(SkipidxError, match="lower\\(\\) needs a String column"):
        table.add_index(zdef("z", "id", expr_func="lower"))


# ---------------------------------------------------------------- snapshots
def test_snapshot_keeps_retired_parts_until_closed(tmp_path):
    _, table = log_table(str(tmp_path), granularity=10)
    for i in range(3):
        table.insert(log_rows(i * 10, 10))
    old = table.snapshot()
    old_dirs = [p.path for p in old.parts]
    table.optimize(final=True)
    table.insert(log_rows(30, 5))   # another commit runs cleanup
    assert all(os.path.isdir(d) for d in old_dirs), "a pinned snapshot keeps its parts"
    assert sorted(old.read(["id"]).column("id").to_pylist()) == list(range(30))
    old.close()
    table.insert(log_rows(35, 5))
    assert not any(os.path.isdir(d) for d in old_dirs), "retired parts go once nobody reads them"
    assert state_json(table.path)["retired"] == []


# ---------------------------------------------------------------- catalog
def test_catalog_lifecycle(tmp_path):
    cat = Catalog(str(tmp_path / "db"))
    assert cat.list_tables() == []
    meta = make_meta("a", [("x", "Int32")], [])
    cat.create_table(meta)
    assert cat.create_table(meta, if_not_exists=True) is None
    with pytest.raises(SkipidxError, match="table 'a' already exists"):
        cat.create_table(meta)
    cat.create_table(make_meta("b_2", [("x", "Int32")], ["x"]))
    assert cat.list_tables() == ["a", "b_2"]
    with pytest.raises(SkipidxError, match="unknown table 'zz'; tables: a, b_2"):
        cat.table("zz")
    cat.table("a").insert(pa.table({"x": pa.array([1, 2], pa.int32())}))
    assert Catalog(str(tmp_path / "db")).table("a").num_rows == 2, "a reopened catalog sees the rows"
    assert cat.drop_table("a") is True
    assert cat.drop_table("a", if_exists=True) is False
    with pytest.raises(SkipidxError, match="unknown table 'a'"):
        cat.drop_table("a")
    assert cat.list_tables() == ["b_2"]
    assert sorted(os.listdir(tmp_path / "db")) == [".catalog.lock", "b_2"]


BAD_NAMES = ["", "../x", "a/b", "a.b", "1abc", "x" * 129, "a b", "é", "..", "/abs", "a\x00"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=[repr(n)[:20] for n in BAD_NAMES])
def test_names_cannot_escape(tmp_path, name):
    cat = Catalog(str(tmp_path / "db"))
    with pytest.raises(SkipidxError, match="invalid table name"):
        cat.create_table(TableMeta(name, make_meta("t", [("x", "Int8")], []).columns))
    with pytest.raises(SkipidxError, match="invalid table name"):
        cat.table(name)
    with pytest.raises(SkipidxError, match="invalid table name"):
        cat.drop_table(name)
    assert os.listdir(tmp_path) == ["db"]


META_ERRORS = [
    (dict(order_by=["nope"]), "ORDER BY column 'nope' is not a column"),
    (dict(index_granularity=0), "index_granularity must be"),
    (dict(settings={"bogus": 1}), "unknown setting 'bogus'"),
    (dict(settings={"max_part_rows": 0}), "max_part_rows must be an integer"),
    (dict(columns=[]), "at least one column"),
]


@pytest.mark.parametrize("change,msg", META_ERRORS, ids=[m for _, m in META_ERRORS])
def test_meta_validation(change, msg):
    base = make_meta("t", [("x", "Int8")], ["x"])
    d = dict(name=base.name, columns=base.columns, order_by=base.order_by,
             index_granularity=base.index_granularity, indexes=base.indexes, settings=base.settings)
    d.update(change)
    with pytest.raises(SkipidxError, match=msg):
        TableMeta(**d).validate()


def test_meta_json_round_trip_and_damage():
    meta = make_meta("t", [(f"c{i}", t) for i, t in enumerate(ALL_TYPES)] + [("n", "Nullable(Date)")], ["c0", "c3"],
                     128, [zdef("z1", "c11", 3, "lower"), zdef("z2", "c0")], {"max_part_rows": 1000})
    j = json.loads(json.dumps(meta.to_json()))
    assert TableMeta.from_json(j) == meta
    for key, bad in [("columns", "x"), ("index_granularity", True), ("indexes", [{"name": "../x"}]),
                     ("order_by", [1])]:
        jj = dict(j, **{key: bad})
        with pytest.raises(SkipidxError):
            TableMeta.from_json(jj)
    jj = dict(j)
    del jj["columns"]
    with pytest.raises(SkipidxError, match="missing field 'columns'"):
        TableMeta.from_json(jj)


# ---------------------------------------------------------------- staged parts
def test_build_part_without_catalog_and_commit_many(tmp_path):
    """The Spark path: tasks stage parts (detached), the driver commits them together."""
    _, table = log_table(str(tmp_path), granularity=10)
    meta = table.meta
    s1 = build_part(table.path, meta, log_rows(0, 25), detached=True)
    s2 = build_part(table.path, meta, log_rows(25, 15), detached=True)
    assert table.num_rows == 0
    from skipidx.store.commit import cleanup

    cleanup(table.path)   # detached staged parts survive cleanup (their writer is gone)
    assert os.path.isdir(s1.path) and os.path.isdir(s2.path)
    commit_parts(table.path, [s1.path, s2.path])
    assert table.num_rows == 40
    assert sorted(table.read(["id"]).column("id").to_pylist()) == list(range(40))
    with pytest.raises(SkipidxError, match="tmp/ directory"):
        commit_parts(table.path, [str(tmp_path)])


def test_staged_part_of_other_schema_is_refused(tmp_path):
    cat, table = log_table(str(tmp_path), granularity=10)
    other = cat.create_table(make_meta("o", [("id", "UInt64"), ("msg", "String")], ["id"], 10))
    s = build_part(table.path, other.meta, pa.table({"id": pa.array([1], pa.uint64()), "msg": ["x"]}))
    with pytest.raises(SkipidxError, match="do not match table 'logs' columns"):
        commit_parts(table.path, [s])
    assert table.num_rows == 0


# ---------------------------------------------------------------- oracles
def test_duckdb_and_pyarrow_read_parts_as_is(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    meta = make_meta("t", [("k", "Int64"), ("u8", "UInt8"), ("u64", "UInt64"), ("f", "Float32"), ("b", "Bool"),
                           ("s", "Nullable(String)"), ("lc", "LowCardinality(String)"), ("d", "Date"),
                           ("ts", "DateTime")], ["k"], 4)
    cat = Catalog(str(tmp_path))
    table = cat.create_table(meta)
    data = pa.table({
        "k": pa.array([3, 1, 2], pa.int64()), "u8": pa.array([255, 0, 7], pa.uint8()),
        "u64": pa.array([2**64 - 1, 0, 5], pa.uint64()), "f": pa.array([1.5, -0.0, 3.25], pa.float32()),
        "b": [True, False, True], "s": ["é", None, ""], "lc": ["a", "b", "a"],
        "d": pa.array([dt.date(2149, 6, 6), dt.date(1970, 1, 1), dt.date(2024, 2, 29)]),
        "ts": pa.array([dt.datetime(2106, 2, 7, 6, 28, 15), dt.datetime(1970, 1, 1), dt.datetime(2024, 5, 1, 12, 0, 1)],
                       pa.timestamp("s")),
    })
    table.insert(data)
    path = os.path.join(table.snapshot().parts[0].path, DATA_FILE)
    rows = duckdb.sql(f"SELECT k, u8, u64, f, b, s, lc, d, ts FROM read_parquet('{path}') ORDER BY k").fetchall()
    assert rows == [
        (1, 0, 0, -0.0, False, None, "b", dt.date(1970, 1, 1), dt.datetime(1970, 1, 1)),
        (2, 7, 5, 3.25, True, "", "a", dt.date(2024, 2, 29), dt.datetime(2024, 5, 1, 12, 0, 1)),
        (3, 255, 2**64 - 1, 1.5, True, "é", "a", dt.date(2149, 6, 6), dt.datetime(2106, 2, 7, 6, 28, 15)),
    ]
    pt = pq.read_table(path)
    # Parquet has no second-resolution timestamps: pyarrow reads DateTime back as ms
    assert pt.schema.field("ts").type == pa.timestamp("ms")
    assert pt.cast(meta.arrow_schema()).equals(_sorted(data, ["k"]).cast(meta.arrow_schema()))
    md = pq.ParquetFile(path).metadata
    assert md.row_group(0).sorting_columns == (pq.SortingColumn(0),)


MERGE_KEYS = [["k1", "k2"], ["k2"], []]


@pytest.mark.parametrize("order_by", MERGE_KEYS, ids=["k1,k2", "k2-nullable", "no-key"])
@pytest.mark.parametrize("chunk_rows", [8, 1 << 20], ids=["streamed", "one-chunk"])
def test_streaming_merge_equals_a_full_sort(tmp_path, monkeypatch, order_by, chunk_rows):
    """A merge streams in chunks (of whole index granules); the result is the
    stable sort of all parts' rows, whatever the chunk size, with duplicates,
    NULL keys, and parts of very different sizes."""
    import skipidx.store.writer as part_mod

    monkeypatch.setattr(part_mod, "INDEX_CHUNK_ROWS", chunk_rows)
    meta = make_meta("t", [("k1", "Int8"), ("k2", "Nullable(String)"), ("v", "UInt32")], order_by, 4,
                     [zdef("z", "v", 2), zdef("z3", "k2", 3)])
    # background merges off: this is OPTIMIZE FINAL's own test
    meta = TableMeta(meta.name, meta.columns, meta.order_by, meta.index_granularity, meta.indexes,
                     {"background_merges": 0})
    table = Catalog(str(tmp_path)).create_table(meta)
    rng = np.random.default_rng(5)
    start = 0
    for size in (1, 37, 5, 120, 2, 64):
        k1 = rng.integers(-3, 3, size).astype(np.int8)
        k2 = [None if x == 0 else f"s{x}" for x in rng.integers(0, 6, size)]
        v = np.arange(start, start + size, dtype=np.uint32)   # v tells rows apart: the sort must be stable
        table.insert(pa.table({"k1": pa.array(k1), "k2": pa.array(k2, pa.string()), "v": pa.array(v)}))
        start += size
    with table.snapshot() as snap:
        before = pa.concat_tables([p.read() for p in snap.parts])
    assert table.optimize(final=True) == 6
    with table.snapshot() as snap:
        [p] = snap.parts
        got = p.read()
        assert p.marks.tolist() == list(range(0, got.num_rows, 4)) + [got.num_rows]
        assert int(p.load_index("z").count.sum()) == got.num_rows
        assert p.load_index("z3").zone_start.tolist() == list(range(0, got.num_rows, 12))
    if order_by:
        expected = before.take(pc.sort_indices(before, sort_keys=[(k, "ascending", "at_end") for k in order_by]))
    else:
        expected = before
    assert got.equals(expected)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), max_size=12), max_rows=st.integers(1, 50),
       kind=st.sampled_from(["reader", "iterator", "table"]))
def test_as_batches_chunks_exactly(sizes, max_rows, kind):
    """Whatever the batch sizes, chunks hold every row once, in order, all
    full but the last (so each insert chunk fills a part)."""
    from skipidx.store.table import as_batches

    start, batches = 0, []
    for n in sizes:
        batches.append(pa.record_batch({"x": pa.array(range(start, start + n), pa.int64())}))
        start += n
    schema = pa.schema([("x", pa.int64())])
    if kind == "reader":
        data = pa.RecordBatchReader.from_batches(schema, batches)
    elif kind == "iterator":
        data = iter(batches)
    else:
        data = pa.Table.from_batches(batches, schema)
    chunks = [c for c in as_batches(data, max_rows) if c.num_rows]
    assert [v for c in chunks for v in c.column("x").to_pylist()] == list(range(start))
    assert all(c.num_rows == max_rows for c in chunks[:-1])
    assert all(c.num_rows <= max_rows for c in chunks)


@pytest.mark.parametrize("threads", [1, 2], ids=["1thread", "2threads"])
def test_failure_inside_a_part_build_writes_nothing(tmp_path, monkeypatch, threads):
    """An error while a worker writes one part (here: its index build) discards
    every staged part of the insert; nothing is published, tmp/ is empty."""
    import _store_helpers

    calls = []
    real = _store_helpers.ZCountAggregator.build

    def flaky(self, values, zs, zl):
        calls.append(len(values))
        if len(calls) == 2:
            raise SkipidxError("index build failed")
        return real(self, values, zs, zl)

    monkeypatch.setattr(_store_helpers.ZCountAggregator, "build", flaky)
    _, table = log_table(str(tmp_path), granularity=16, settings={"max_part_rows": 100})
    with pytest.raises(SkipidxError, match="index build failed"):
        table.insert(log_rows(0, 350), threads=threads)
    assert table.num_rows == 0
    assert os.listdir(os.path.join(table.path, "tmp")) == []
    assert os.listdir(os.path.join(table.path, "parts")) == []
