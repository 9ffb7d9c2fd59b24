"""Parallel insert (conform + sort + write per worker), parallel part writes
(data file and each index at once) and parallel merges give exactly what the
serial paths give: the same parts in the same order, byte-identical files,
the same dictionary policy, the same errors."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.core.threads import available_cores, resolve_threads
from skipidx.store.manifest import MANIFEST
from skipidx.store.merge import _prefetched

DDL = """CREATE TABLE {name} (
    ts DateTime, level LowCardinality(String), host String, trace String, n Nullable(UInt32), msg String,
    INDEX tok msg TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1,
    INDEX ng msg TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 2,
    INDEX tr trace TYPE bloom_filter GRANULARITY 1,
    INDEX mm n TYPE minmax GRANULARITY 1,
    INDEX st host TYPE set(16) GRANULARITY 1,
    INDEX lo lower(msg) TYPE sbbf('token', fpp = 0.01) GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts
SETTINGS index_granularity = 64, max_part_rows = {part_rows}, background_merges = 0"""


def _data(n: int, seed: int) -> pa.Table:
    """Rows in shuffled time order (every chunk needs its sort), a repeating
    host (dictionary-encoded) and a unique trace (PLAIN)."""
    rng = np.random.default_rng(seed)
    ts = (rng.permutation(n) + 1_704_067_200).astype("datetime64[s]")
    words = np.array(["alpha", "Beta", "gamma", "delta", "eps", "zeta", "Kraken"])
    msg = [" ".join(words[rng.integers(0, len(words), 3)]) for _ in range(n)]
    return pa.table({
        "ts": pa.array(ts, pa.timestamp("s")),
        "level": pa.array(np.array(["INFO", "WARN", "ERROR"])[rng.integers(0, 3, n)]),
        "host": pa.array([f"h{i}" for i in rng.integers(0, 4, n)]),
        "trace": pa.array([f"t{i:08x}" for i in rng.permutation(n)]),
        "n": pa.array(rng.integers(0, 1000, n), pa.uint32(), mask=rng.random(n) < 0.1),
        "msg": pa.array(msg),
    })


def _parts(db, name: str) -> list:
    snap = db.catalog.table(name).snapshot()
    try:
        return list(snap.parts)
    finally:
        snap.close()


def _part_fingerprint(part) -> tuple:
    """What must not depend on threads: rows, marks, dictionary policy, and every file's bytes."""
    files = {}
    for f in sorted(os.listdir(part.path)):
        if f == MANIFEST:
            continue
        if f.endswith(".arrow"):
            # an index file names its part (and a fragment id from the name): compare it without them
            t = pa.ipc.open_file(os.path.join(part.path, f)).read_all()
            meta = {k: v for k, v in (t.schema.metadata or {}).items() if part.name.encode() not in v}
            files[f] = (t.drop_columns([c for c in ("part", "fragment_id") if c in t.column_names]), meta)
        else:
            with open(os.path.join(part.path, f), "rb") as fh:
                files[f] = fh.read()
    m = part.manifest
    return (m["rows"], tuple(m["marks"]), tuple(m.get("dictionary") or ()), tuple(sorted(m["indexes"])), files)


def _assert_same_tables(db, a: str, b: str) -> None:
    pa_, pb = _parts(db, a), _parts(db, b)
    assert len(pa_) == len(pb)
    for x, y in zip(pa_, pb):
        fx, fy = _part_fingerprint(x), _part_fingerprint(y)
        assert fx[:4] == fy[:4]
        assert fx[4].keys() == fy[4].keys()
        for f in fx[4]:
            if isinstance(fx[4][f], tuple):
                assert fx[4][f][0].equals(fy[4][f][0]) and fx[4][f][1] == fy[4][f][1], f"{f} differs"
            else:
                assert fx[4][f] == fy[4][f], f"{f} differs"
    ra = db.sql(f"SELECT * FROM {a}").to_arrow()
    rb = db.sql(f"SELECT * FROM {b}").to_arrow()
    assert ra.equals(rb)


def test_parallel_insert_equals_serial(tmp_path):
    data = _data(1000, 1)
    with skipidx.connect(str(tmp_path / "db")) as db:
        for name in ("serial", "par"):
            db.sql(DDL.format(name=name, part_rows=256))
        t_s, t_p = db.catalog.table("serial"), db.catalog.table("par")
        assert t_s.insert(data, threads=1) == 1000
        assert t_p.insert(data, threads=4) == 1000
        parts = _parts(db, "par")
        assert [p.num_rows for p in parts] == [256, 256, 256, 232]
        # each chunk is sorted on its own, in input order
        for p, off in zip(parts, range(0, 1000, 256)):
            want = data.slice(off, 256).sort_by("ts")
            got = p.read(["ts", "trace"])
            assert got.column("ts").to_pylist() == want.column("ts").to_pylist()
            assert got.column("trace").to_pylist() == want.column("trace").to_pylist()
        # the dictionary policy is decided per part from its own rows, as serially
        assert all(set(p.manifest["dictionary"]) >= {"level", "host"} for p in parts)
        assert all("trace" not in p.manifest["dictionary"] for p in parts)
        _assert_same_tables(db, "serial", "par")
        # pruning answers the same
        q = "SELECT count() FROM {} WHERE hasToken(msg, 'Kraken') AND trace IN ('t00000001', 't00000002')"
        assert db.sql(q.format("serial")).fetchall() == db.sql(q.format("par")).fetchall()


def test_parallel_insert_error_is_the_serial_one_and_writes_nothing(tmp_path):
    good = _data(900, 2)
    # a bad value (does not fit UInt32) in the third chunk only
    bad_n = pa.array(list(range(600)) + [2**40] + list(range(299)), pa.int64())
    bad = good.set_column(good.column_names.index("n"), "n", bad_n)
    msgs = []
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql(DDL.format(name="t", part_rows=256))
        t = db.catalog.table("t")
        for threads in (1, 3):
            with pytest.raises(SkipidxError) as ei:
                t.insert(bad, threads=threads)
            msgs.append(str(ei.value))
            assert db.sql("SELECT count() FROM t").fetchall() == [(0,)]
            assert not os.listdir(os.path.join(t.path, "tmp")) if os.path.isdir(os.path.join(t.path, "tmp")) \
                else True
        assert msgs[0] == msgs[1]
        assert t.insert(good, threads=3) == 900


def test_part_writer_threads_give_identical_files(tmp_path):
    data = _data(700, 3)
    with skipidx.connect(str(tmp_path / "db")) as db:
        for name in ("a", "b"):
            db.sql(DDL.format(name=name, part_rows=10_000))
        from skipidx.store.commit import commit_parts
        from skipidx.store.conform import conform, sort_rows
        from skipidx.store.writer import build_part

        for name, threads in (("a", 1), ("b", 6)):
            t = db.catalog.table(name)
            prepared = sort_rows(t.meta, conform(t.meta, data))
            staged = build_part(t.path, t.meta, prepared, prepare=False, threads=threads, build_threads=threads)
            commit_parts(t.path, [staged])
        _assert_same_tables(db, "a", "b")


@pytest.mark.parametrize("threads, ordered", [(2, False), (5, True)])
def test_parallel_merge_equals_serial(tmp_path, threads, ordered):
    data = _data(1100, 4)
    if ordered:
        # parts of consecutive key ranges, with equal keys across part boundaries:
        # the merge skips its sort and gather, and must keep part order for ties
        ts = (np.arange(1100) // 7 + 1_704_067_200).astype("datetime64[s]")
        data = data.set_column(0, "ts", pa.array(ts, pa.timestamp("s")))
    with skipidx.connect(str(tmp_path / "db")) as db:
        for name in ("serial", "par"):
            db.sql(DDL.format(name=name, part_rows=200))
            db.catalog.table(name).insert(data, threads=1)
            assert len(_parts(db, name)) == 6
        db.catalog.table("serial").optimize(final=True, threads=1)
        db.catalog.table("par").optimize(final=True, threads=threads)
        assert len(_parts(db, "par")) == 1
        _assert_same_tables(db, "serial", "par")
        got = db.sql("SELECT ts, trace FROM par").to_arrow()
        if ordered:   # ties keep insert order (a stable merge of ordered parts)
            assert got.column("trace").to_pylist() == data.column("trace").to_pylist()
        assert got.column("ts").to_pylist() == data.sort_by("ts").column("ts").to_pylist()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 400), part_rows=st.integers(1, 200), threads=st.integers(2, 4), seed=st.integers(0, 99))
def test_parallel_insert_any_chunking(tmp_path_factory, n, part_rows, threads, seed):
    data = _data(n, seed)
    d = tmp_path_factory.mktemp("h")
    with skipidx.connect(str(d / "db")) as db:
        db.sql(DDL.format(name="s", part_rows=part_rows))
        db.sql(DDL.format(name="p", part_rows=part_rows))
        # a stream of uneven batches, as a file import gives
        batches = [b for off in range(0, n, 97) for b in data.slice(off, 97).to_batches()]
        db.catalog.table("s").insert(iter(batches), threads=1)
        db.catalog.table("p").insert(iter(batches), threads=threads)
        _assert_same_tables(db, "s", "p")


def test_non_decreasing_key_check():
    from skipidx.store.conform import non_decreasing as _non_decreasing

    assert _non_decreasing(pa.table({"k": [1, 1, 2, 5]}))
    assert not _non_decreasing(pa.table({"k": [1, 3, 2]}))
    assert not _non_decreasing(pa.table({"k": [1, None, 2]}))            # NULLs: sorted by the sort
    assert not _non_decreasing(pa.table({"k": [1.0, float("nan"), 2.0]}))
    assert not _non_decreasing(pa.table({"k": ["a", "b"]}))               # strings: not checked here
    assert not _non_decreasing(pa.table({"k": [1, 2], "j": [2, 1]}))      # several keys: not checked here
    assert _non_decreasing(pa.table({"k": pa.chunked_array([[1, 2], [2, 3]])}))


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["Int32", "UInt64", "Float64", "Date", "DateTime", "Nullable(Int64)"]),
       values=st.lists(st.integers(-3, 3), max_size=40), nans=st.booleans(), presorted=st.booleans())
def test_sort_rows_fast_path_equals_the_sort(kind, values, nans, presorted):
    """sort_rows skips the sort only for input already in order; its result always
    equals a stable sort with NULLs last (and NaN after numbers, as Arrow sorts)."""
    import datetime as dt

    import pyarrow.compute as pc

    from skipidx.core.types import parse_type
    from skipidx.store.conform import sort_rows
    from skipidx.store.metadata import ColumnMeta, TableMeta

    vals = sorted(values) if presorted else values
    if kind.startswith("Nullable"):
        py = [None if v == 0 else v for v in vals]
    elif kind == "Float64":
        py = [float("nan") if nans and v == 0 else v / 2 for v in vals]
    elif kind == "Date":
        py = [dt.date(2024, 1, 10) + dt.timedelta(days=v) for v in vals]
    elif kind == "DateTime":
        py = [dt.datetime(2024, 1, 10) + dt.timedelta(seconds=v) for v in vals]
    elif kind == "UInt64":
        py = [v + 3 for v in vals]
    else:
        py = vals
    ctype = parse_type(kind)
    meta = TableMeta("t", [ColumnMeta("k", ctype), ColumnMeta("i", parse_type("UInt32"))], ["k"], 8192, [], {})
    t = pa.table({"k": pa.array(py, ctype.arrow_type), "i": pa.array(range(len(py)), pa.uint32())})
    want = t.take(pc.sort_indices(t, sort_keys=[("k", "ascending", "at_end")]))
    got = sort_rows(meta, t)
    assert got.column("i").to_pylist() == want.column("i").to_pylist()


def test_prefetched_keeps_order_and_raises_where_the_item_would_be():
    assert list(_prefetched(iter(range(50)))) == list(range(50))

    def gen():
        yield 1
        yield 2
        raise SkipidxError("boom")

    got = []
    with pytest.raises(SkipidxError, match="boom"):
        for x in _prefetched(gen()):
            got.append(x)
    assert got == [1, 2]
    # a consumer that stops early does not leave the producer blocked
    it = _prefetched(iter(range(10_000)))
    assert next(it) == 0
    it.close()


def test_threads_follow_settings_and_affinity(tmp_path, monkeypatch):
    assert resolve_threads(None) == resolve_threads(0) == available_cores()
    assert resolve_threads(3) == 3
    if hasattr(os, "sched_getaffinity"):
        assert available_cores() == len(os.sched_getaffinity(0))
    from skipidx.store import table as table_mod

    seen = []
    real_insert, real_opt = table_mod.Table._insert, table_mod.Table.optimize

    def spy_insert(self, data, max_part_rows, threads):
        seen.append(("insert", threads))
        return real_insert(self, data, max_part_rows, threads)

    def spy_opt(self, final=False, **kw):
        seen.append(("optimize", kw.get("threads")))
        return real_opt(self, final, **kw)

    monkeypatch.setattr(table_mod.Table, "_insert", spy_insert)
    monkeypatch.setattr(table_mod.Table, "optimize", spy_opt)
    src = str(tmp_path / "in.parquet")
    import pyarrow.parquet as pq

    pq.write_table(_data(300, 5), src)
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql(DDL.format(name="t", part_rows=100))
        db.sql(f"INSERT INTO t FROM INFILE '{src}' FORMAT Parquet")
        db.sql("SET max_threads = 2")
        db.insert("t", src)
        db.sql("SET max_insert_threads = 1")
        db.sql(f"INSERT INTO t FROM INFILE '{src}'")
        db.sql("OPTIMIZE TABLE t FINAL")
        assert db.sql("SELECT count() FROM t").fetchall() == [(900,)]
    assert seen == [("insert", None), ("insert", 2), ("insert", 1), ("optimize", 2)]
