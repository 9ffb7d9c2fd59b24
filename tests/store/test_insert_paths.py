"""The plain insert path's shortcuts: the already-sorted check over chunks and temporal
types, floor truncation of finer timestamps with NULLs, and a Parquet import that
never imports pandas (pyarrow's converters would, ~0.3 s of a fresh process)."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

import skipidx
from skipidx.core.types import cast_to, parse_type
from skipidx.store.conform import non_decreasing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_TYPES = [pa.int64(), pa.uint64(), pa.int32(), pa.int16(), pa.float64(), pa.timestamp("s"), pa.timestamp("ms"),
          pa.date32(), pa.date64(), pa.time32("s"), pa.time64("us"), pa.duration("ms")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=0, max_size=40), st.lists(st.integers(0, 40), max_size=4),
       st.sampled_from(_TYPES))
def test_non_decreasing_over_chunks_equals_numpy(steps, cuts, t):
    vals = np.cumsum(np.array(steps, dtype=np.int64)) + 50
    if pa.types.is_unsigned_integer(t):
        vals = np.abs(vals)
    storage = pa.array(vals, pa.int32() if t.bit_width == 32 else pa.int64())
    arr = storage.cast(pa.float64()) if pa.types.is_floating(t) else (
        storage.cast(t) if pa.types.is_integer(t) else storage.view(t))
    if pa.types.is_date64(t):
        arr = pa.array(vals * 86_400_000, pa.int64()).view(t)
    bounds = sorted({min(c, len(vals)) for c in cuts} | {0, len(vals)})
    col = pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds, bounds[1:])] or [arr], type=t)
    expect = bool(np.all(np.diff(vals) >= 0)) if len(vals) > 1 else True
    assert non_decreasing(pa.table({"k": col})) == expect


def test_non_decreasing_refuses_what_it_cannot_tell():
    assert not non_decreasing(pa.table({"k": pa.array([1, None, 3])}))
    assert not non_decreasing(pa.table({"k": pa.array([1.0, float("nan"), 3.0])}))
    assert not non_decreasing(pa.table({"k": pa.array(["a", "b"])}))
    assert not non_decreasing(pa.table({"a": [1, 2], "b": [1, 2]}))
    # a descent exactly at a chunk boundary
    assert not non_decreasing(pa.table({"k": pa.chunked_array([[1, 2, 5], [4, 6]])}))
    assert non_decreasing(pa.table({"k": pa.chunked_array([[1, 2, 5], [], [5, 6]])}))


def test_finer_timestamps_floor_to_seconds_with_nulls():
    ms = [-1500, -1, 0, 999, 1000, None, 1_700_000_000_123]
    arr = pa.array(ms, pa.int64()).view(pa.timestamp("ms"))
    out = cast_to(parse_type("Nullable(DateTime64(1))"), arr, "ts")
    assert out.cast(pa.int64()).to_pylist() == [-1500, -100, 0, 900, 1000, None, 1_700_000_000_100]
    ok = pa.array([0, 999, 1000, None, 1_700_000_000_999], pa.int64()).view(pa.timestamp("ms"))
    out = cast_to(parse_type("Nullable(DateTime)"), ok, "ts")
    assert out.cast(pa.int64()).to_pylist() == [0, 0, 1, None, 1_700_000_000]
    out = cast_to(parse_type("DateTime"), ok.fill_null(pa.scalar(0, pa.timestamp("ms"))), "ts")
    assert out.cast(pa.int64()).to_pylist() == [0, 0, 1, 0, 1_700_000_000]


def test_parquet_import_imports_no_pandas(tmp_path):
    n = 5000
    src = str(tmp_path / "src.parquet")
    pq.write_table(pa.table({
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1500, pa.int64()).view(pa.timestamp("ms")),
        "s": pa.array([f"v{i % 7}" for i in range(n)]),
        "n": pa.array([None if i % 3 else i for i in range(n)], pa.uint16()),
    }), src)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        import skipidx
        db = skipidx.connect({str(tmp_path / 'db')!r})
        db.sql("CREATE TABLE t (ts DateTime, s LowCardinality(String), n Nullable(UInt16)) "
               "ENGINE = MergeTree ORDER BY ts")
        before = "pandas" in sys.modules
        db.sql("INSERT INTO t FROM INFILE {src!r} FORMAT Parquet")
        print(before, "pandas" in sys.modules, db.sql("SELECT count(), max(ts) FROM t").fetchall())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, rows = out.stdout.split(maxsplit=2)
    assert before == "False" and after == "False", out.stdout
    assert rows.strip() == f"[({n}, datetime.datetime(1970, 1, 1, 2, 4, 58))]"


@pytest.mark.parametrize("kind", ["iterator", "reader"])
def test_as_batches_keeps_no_reference_to_a_yielded_chunk(kind):
    """A streamed insert's chunk is freed as soon as its part is written (the next chunk
    is read into the same pages; peak memory is one chunk, not two)."""
    from skipidx.store.table import as_batches

    def batches():
        for i in range(6):
            yield pa.record_batch({"x": pa.array(range(i * 500, i * 500 + 500), pa.int64())})

    src = batches() if kind == "iterator" else pa.RecordBatchReader.from_batches(
        pa.schema([("x", pa.int64())]), batches())
    gen = as_batches(src, 1000)
    seen = []
    for _ in range(3):
        chunk = next(gen)
        seen.extend(chunk.column("x").to_pylist())
        held = pa.total_allocated_bytes()
        size = chunk.nbytes
        del chunk
        assert held - pa.total_allocated_bytes() >= size   # nothing else kept it
    assert seen == list(range(3000))
    assert next(gen, None) is None



def _data_files(db_dir: str, table: str) -> list[str]:
    import glob

    return sorted(glob.glob(os.path.join(db_dir, table, "parts", "*", "data.parquet")))


def test_statistics_written_for_key_fixed_width_and_low_cardinality(tmp_path):
    """Row-group min/max for the ORDER BY key (a String here), fixed-width and
    LowCardinality columns and non-string array leaves; none for the other String,
    FixedString and string-array columns. The rows read back unchanged."""
    import duckdb

    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (k String, n UInt32, f Float64, d Date, lc LowCardinality(String), s String, "
           "fs FixedString(3), a Array(String), ai Array(UInt16), ns Nullable(String)) "
           "ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 64")
    n = 300
    data = pa.table({
        "k": [f"k{i:04d}" for i in range(n)], "n": pa.array(range(n), pa.uint32()),
        "f": [i / 7 for i in range(n)], "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)]),
        "lc": [("x", "y", "z")[i % 3] for i in range(n)], "s": [f"msg {i * 7919 % 1000}" for i in range(n)],
        "fs": [b"abc" if i % 2 else b"xyz" for i in range(n)], "a": [[f"t{i}", "u"] for i in range(n)],
        "ai": [[i % 5, 9] for i in range(n)], "ns": [None if i % 4 == 0 else f"v{i}" for i in range(n)],
    })
    db.insert("t", data)
    [path] = _data_files(str(tmp_path / "db"), "t")
    md = pq.read_metadata(path)
    assert md.num_row_groups == 5
    with_stats = set()
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if c.statistics is not None and c.statistics.has_min_max:
                with_stats.add(c.path_in_schema)
    assert with_stats == {"k", "n", "f", "d", "lc", "ai.list.element"}
    assert md.row_group(1).column(0).statistics.min == "k0064"
    want = data.sort_by("k")
    got = pq.read_table(path)
    assert got.select(["k", "n", "lc", "s", "a", "ai", "ns"]).equals(
        want.select(["k", "n", "lc", "s", "a", "ai", "ns"]).cast(got.select(["k", "n", "lc", "s", "a", "ai", "ns"]).schema))
    rows = duckdb.sql(f"SELECT k, s, lc, ns, fs FROM '{path}' WHERE k >= 'k0290' ORDER BY k").fetchall()
    assert rows == [(f"k{i:04d}", f"msg {i * 7919 % 1000}", ("x", "y", "z")[i % 3],
                     None if i % 4 == 0 else f"v{i}", b"abc" if i % 2 else b"xyz") for i in range(290, 300)]
    assert db.sql("SELECT count() FROM t WHERE k = 'k0100'").fetchall() == [(1,)]
    assert db.sql("SELECT count() FROM t WHERE k = 'k0100'").stats.granules_selected == 1


def _lc_tables(tmp, name_a="a", name_b="b", extra=""):
    db = skipidx.connect(str(tmp))
    for t in (name_a, name_b):
        db.sql(f"CREATE TABLE {t} (k Int32, id UInt32, lc LowCardinality(String), "
               f"ln LowCardinality(Nullable(String)), s String{extra}) ENGINE = MergeTree ORDER BY k "
               "SETTINGS index_granularity = 16, max_part_rows = 64")
    return db


def _part_files(db_dir, table):
    files = _data_files(db_dir, table)
    return [pq.read_table(f) for f in files], [pq.read_metadata(f) for f in files]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=200),
       st.lists(st.integers(0, 200), max_size=5), st.lists(st.permutations(range(5)), min_size=1, max_size=3),
       st.booleans())
def test_low_cardinality_dictionaries_written_as_given_read_back_as_before(tmp_path_factory, rows, cuts, perms,
                                                                           sorted_keys):
    """A LowCardinality column inserted as Arrow dictionaries (chunks of different
    dictionaries, unused entries, NULLs, unsorted keys) gives data files that pyarrow
    reads back equal (values, schema, key-value metadata, Parquet schema) to the same
    rows inserted as plain strings, and the same query answers."""
    from skipidx.store.conform import conform, dictionary_passthrough_columns

    tmp = tmp_path_factory.mktemp("lc")
    db = _lc_tables(tmp)
    vocab = ["api", "auth", "billing", "cart", "db"]
    if sorted_keys:
        rows = sorted(rows)
    n = len(rows)
    plain = pa.table({
        "k": pa.array([r[0] for r in rows], pa.int32()), "id": pa.array(range(n), pa.uint32()),
        "lc": [vocab[r[1]] for r in rows], "ln": [None if r[2] == 4 else vocab[r[2]] for r in rows],
        "s": [f"m{i}" for i in range(n)]})
    bounds = sorted({min(c, n) for c in cuts} | {0, n})
    batches = []
    for j, (a, b) in enumerate(zip(bounds, bounds[1:])):
        perm = perms[j % len(perms)]
        dictionary = pa.array([vocab[p] for p in perm])
        pos = {v: i for i, v in enumerate(dictionary.to_pylist())}
        piece = plain.slice(a, b - a)
        cols = {}
        for name in ("lc", "ln"):
            idx = pa.array([None if v is None else pos[v] for v in piece.column(name).to_pylist()], pa.int32())
            cols[name] = pa.DictionaryArray.from_arrays(idx, dictionary)
        batches.append(pa.record_batch([piece.column("k").combine_chunks(), piece.column("id").combine_chunks(),
                                        cols["lc"], cols["ln"], piece.column("s").combine_chunks()],
                                       names=plain.column_names))
    meta = db.catalog.table("a").meta
    assert dictionary_passthrough_columns(meta) == ["lc", "ln"]
    got = conform(meta, pa.Table.from_batches(batches), ["lc", "ln"])
    assert got.column("lc").to_pylist() == plain.column("lc").to_pylist()
    assert got.column("ln").to_pylist() == plain.column("ln").to_pylist()
    db.insert("a", pa.RecordBatchReader.from_batches(batches[0].schema, batches))
    db.insert("b", plain)
    ta, ma = _part_files(str(tmp), "a")
    tb, mb = _part_files(str(tmp), "b")
    assert len(ta) == len(tb)
    for x, y, mx, my in zip(ta, tb, ma, mb):
        assert x.equals(y) and x.schema.equals(y.schema, check_metadata=True)
        assert mx.metadata == my.metadata and mx.schema.equals(my.schema)
    q = "SELECT lc, ln, count(), min(k), max(id) FROM {} GROUP BY lc, ln ORDER BY lc, ln"
    assert db.sql(q.format("a")).fetchall() == db.sql(q.format("b")).fetchall()
    db.close()


def test_low_cardinality_passthrough_from_a_parquet_file(tmp_path):
    """INSERT FROM INFILE reads a LowCardinality column as dictionaries and writes them as
    they are; the data file reads back (pyarrow, DuckDB) as the rows inserted as plain
    strings; a NULL in the non-Nullable one becomes '' as before; a dictionary with entries
    a granule does not use, or an indexed / ORDER BY column, is written decoded."""
    import duckdb

    n = 3000
    rng = np.random.default_rng(7)
    vocab = np.array(["DEBUG", "INFO", "WARN", "ERROR"])
    src = pa.table({
        "k": pa.array(np.sort(rng.integers(0, 10**6, n)), pa.int32()), "id": pa.array(range(n), pa.uint32()),
        "lc": pa.array(vocab[rng.integers(0, 4, n)]).to_pylist()[:-1] + [None],
        "ln": [None if i % 5 == 0 else f"v{i % 3}" for i in range(n)],
        "s": [f"rare{i}" if i < 20 else f"x{i % 2}" for i in range(n)]})
    path = str(tmp_path / "src.parquet")
    pq.write_table(src, path, row_group_size=1000)
    db = _lc_tables(tmp_path / "db", extra=", INDEX si s TYPE bloom_filter GRANULARITY 1")
    db.sql("CREATE TABLE c (k Int32, id UInt32, lc LowCardinality(String), ln LowCardinality(Nullable(String)), "
           "s LowCardinality(String)) ENGINE = MergeTree ORDER BY lc SETTINGS index_granularity = 16")
    from skipidx.store.ingest import _dictionary_reads

    assert _dictionary_reads(path, db.catalog.table("a").meta) == ["lc", "ln"]
    assert _dictionary_reads(path, db.catalog.table("c").meta) == ["ln", "s"]
    db.sql(f"INSERT INTO a FROM INFILE '{path}' FORMAT Parquet")
    filled = src.set_column(2, "lc", pa.array(src.column("lc").to_pylist()[:-1] + [""]))
    db.insert("b", filled)
    ta, ma = _part_files(str(tmp_path / "db"), "a")
    tb, mb = _part_files(str(tmp_path / "db"), "b")
    assert len(tb) == 47 and len(ta) in (47, 48)   # the batch with the NULL filled in is decoded: a chunk ends there
    assert pa.concat_tables(ta).sort_by("id").equals(pa.concat_tables(tb).sort_by("id"))
    assert all(m.metadata == mb[0].metadata and m.schema.equals(mb[0].schema) for m in ma + mb)
    q = "SELECT * FROM '{}' ORDER BY id"
    got = duckdb.sql(q.format(tmp_path / "db" / "a" / "parts" / "*" / "data.parquet")).fetchall()
    assert got == duckdb.sql(q.format(tmp_path / "db" / "b" / "parts" / "*" / "data.parquet")).fetchall()
    assert len(got) == n and got[-1][2] == ""
    assert db.sql("SELECT count() FROM a WHERE lc = ''").fetchall() == [(1,)]
    assert db.sql("SELECT count() FROM a WHERE s = 'rare3'").fetchall() == [(1,)]
    # ORDER BY lc and s with unused entries per granule: read decoded, written as before
    db.sql(f"INSERT INTO c FROM INFILE '{path}' FORMAT Parquet")
    assert db.sql("SELECT lc, count() FROM c GROUP BY lc ORDER BY lc").fetchall() == \
        db.sql("SELECT lc, count() FROM b GROUP BY lc ORDER BY lc").fetchall()
    assert db.sql("SELECT s FROM c WHERE id < 3 ORDER BY id").fetchall() == [("rare0",), ("rare1",), ("rare2",)]


def test_part_writer_takes_chunks_dictionary_or_not(tmp_path):
    """A part whose first chunk has a LowCardinality column as dictionaries and a later one
    as strings (and the reverse) is written in one Arrow type and reads back whole."""
    from skipidx.store.commit import new_part_name, stage_dir
    from skipidx.store.writer import PartWriter

    db = _lc_tables(tmp_path / "db")
    meta = db.catalog.table("a").meta
    rows = pa.table({"k": pa.array(range(64), pa.int32()), "id": pa.array(range(64), pa.uint32()),
                     "lc": [("p", "q")[i % 2] for i in range(64)],
                     "ln": [None if i % 3 == 0 else "z" for i in range(64)], "s": ["t"] * 64})
    enc = rows.set_column(2, "lc", pc_dictionary(rows.column("lc"))).set_column(3, "ln", pc_dictionary(rows.column("ln")))
    for first, second in ((enc, rows), (rows, enc)):
        name = new_part_name(0)
        staged = stage_dir(db.catalog.table("a").path, name)
        w = PartWriter(staged.path, meta, name, threads=1)
        w.write(first.slice(0, 32))
        w.write(second.slice(32))
        w.finish()
        back = pq.read_table(os.path.join(staged.path, "data.parquet"))
        assert back.column("lc").to_pylist() == rows.column("lc").to_pylist()
        assert back.column("ln").to_pylist() == rows.column("ln").to_pylist()
        assert back.schema.field("lc").type == pa.string()
        staged.discard()


def pc_dictionary(col):
    import pyarrow.compute as pc

    return pc.dictionary_encode(col)


def test_low_cardinality_passthrough_keeps_every_type_of_the_file(tmp_path):
    """With a LowCardinality column written from Arrow dictionaries the file stores the
    table's own Arrow schema, so every other type (dates, DateTime64 with a zone, Decimal,
    UUID, FixedString, Enum, Array, Bool) reads back as when all columns were plain."""
    import pyarrow.compute as pc

    db = skipidx.connect(str(tmp_path / "db"))
    ddl = ("(k UInt64, i8 Int8, f Float32, b Bool, d Date, t DateTime, t64 DateTime64(3, 'UTC'), "
           "dec Decimal(10, 2), u UUID, fs FixedString(4), e Enum8('a' = 1, 'b' = 2), arr Array(Int32), "
           "lc LowCardinality(String)) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 8")
    for name in ("src", "x", "y"):
        db.sql(f"CREATE TABLE {name} {ddl}")
    import decimal
    import uuid

    n = 50
    db.insert("src", pa.table({
        "k": pa.array(range(n), pa.uint64()), "i8": pa.array([i % 100 - 50 for i in range(n)], pa.int8()),
        "f": pa.array([i / 3 for i in range(n)], pa.float32()), "b": [i % 2 == 0 for i in range(n)],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)],
        "t": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=61 * i) for i in range(n)], pa.timestamp("s")),
        "t64": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123000) + dt.timedelta(seconds=i) for i in range(n)],
                        pa.timestamp("ms", "UTC")),
        "dec": pa.array([decimal.Decimal(i * 13) / 100 for i in range(n)], pa.decimal128(10, 2)),
        "u": [str(uuid.UUID(int=i * 7919 + 1)) for i in range(n)], "fs": [f"ab{i % 10}" for i in range(n)],
        "e": ["a" if i % 3 == 0 else "b" for i in range(n)], "arr": pa.array([[i, 1] for i in range(n)], pa.list_(pa.int32())),
        "lc": [("x", "y", "z")[i % 3] for i in range(n)]}))
    data = db.sql("SELECT * FROM src ORDER BY k").to_arrow()
    db.insert("x", data.set_column(data.schema.get_field_index("lc"), "lc", pc.dictionary_encode(data.column("lc"))))
    db.insert("y", data)
    [fx], [fy] = _data_files(str(tmp_path / "db"), "x"), _data_files(str(tmp_path / "db"), "y")
    mx, my = pq.read_metadata(fx), pq.read_metadata(fy)
    assert mx.metadata == my.metadata and mx.schema.equals(my.schema)
    assert pq.read_table(fx).equals(pq.read_table(fy))
    assert db.sql("SELECT * FROM x ORDER BY k").to_arrow().equals(db.sql("SELECT * FROM y ORDER BY k").to_arrow())


def test_manifest_layout_equals_the_file_footer(tmp_path):
    """The manifest's marks, row-group byte spans and key statistics (taken from the
    writer's own footer) equal what the data file's footer read back says."""
    import json

    from skipidx.store.manifest import key_stats_from_footer
    from skipidx.store.writer import _row_group_spans

    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (k UInt32, s String, lc LowCardinality(String)) ENGINE = MergeTree ORDER BY k "
           "SETTINGS index_granularity = 32, max_part_rows = 1000")
    n = 2500
    db.insert("t", pa.table({"k": pa.array(np.arange(n)[::-1].copy(), pa.uint32()),
                             "s": [f"s{i % 97}" for i in range(n)], "lc": [("a", "b")[i % 2] for i in range(n)]}))
    files = _data_files(str(tmp_path / "db"), "t")
    assert len(files) == 3
    meta = db.catalog.table("t").meta
    for f in files:
        man = json.load(open(os.path.join(os.path.dirname(f), "manifest.json")))
        md = pq.read_metadata(f)
        rows = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
        assert man["marks"] == np.concatenate([[0], np.cumsum(rows)]).tolist()
        assert man["row_groups"] == _row_group_spans(md)
        assert man["key_stats"] == json.loads(json.dumps(key_stats_from_footer(md, meta)))


@pytest.mark.parametrize("threads", [1, 2])
def test_later_parts_of_an_insert_take_the_first_parts_encodings(tmp_path, threads):
    """An insert's first part (>= PLAN_MIN_ROWS rows) chooses the encodings of its other
    parts, whatever the threads; a smaller first part leaves each part to choose."""
    import json

    from skipidx.store.writer import PLAN_MIN_ROWS

    rng = np.random.default_rng(3)

    def encodings(table, part_rows):
        # the first part's v ascends (DELTA), the others' v is random (PLAIN when alone)
        v = np.concatenate([np.arange(part_rows, dtype=np.uint64),
                            rng.integers(0, 2**63, 2 * part_rows, dtype=np.uint64)])
        data = pa.table({"k": pa.array(np.arange(3 * part_rows, dtype=np.uint64)), "v": pa.array(v)})
        db = skipidx.connect(str(tmp_path / f"db{table}"))
        db.sql(f"CREATE TABLE {table} (k UInt64, v UInt64) ENGINE = MergeTree ORDER BY k "
               f"SETTINGS max_part_rows = {part_rows}, background_merges = 0")
        db.catalog.table(table).insert(data, threads=threads)
        out = {}
        for f in _data_files(str(tmp_path / f"db{table}"), table):
            man = json.load(open(os.path.join(os.path.dirname(f), "manifest.json")))
            out[pq.read_table(f, columns=["k"]).column(0)[0].as_py()] = man.get("encodings", {})
        assert db.sql(f"SELECT count(), sum(v) FROM {table}").fetchall() == [(3 * part_rows, int(v.sum()))]
        return [out[k] for k in sorted(out)]

    first, *rest = encodings("a", PLAN_MIN_ROWS)
    assert first == {"k": "DELTA_BINARY_PACKED", "v": "DELTA_BINARY_PACKED"}
    assert rest == [first, first]
    small = encodings("b", 4096)
    assert small[0] == first and small[1] == small[2] == {"k": "DELTA_BINARY_PACKED"}
