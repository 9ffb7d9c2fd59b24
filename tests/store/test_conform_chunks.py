"""conform() casts a streamed input chunk by chunk (no copy into one array): the values,
types and errors are those of the same rows in one chunk, and the part written from
chunked rows is byte-identical to the one written from the same rows combined."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.store.conform import conform, sort_rows

DDL = """CREATE TABLE {name} (
    ts DateTime, level LowCardinality(String), n Nullable(UInt16), d Decimal(10, 2), fs FixedString(3),
    tags Array(String), e Enum8('a' = 1, 'b' = 2), msg String,
    INDEX ng msg TYPE ngrambf_v1(3, 256, 2, 0) GRANULARITY 1
) ENGINE = MergeTree ORDER BY ts SETTINGS index_granularity = 16, background_merges = 0"""


def _rows(n: int) -> pa.Table:
    return pa.table({
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=(i * 7919) % n, milliseconds=i % 1000)
                        for i in range(n)], pa.timestamp("ms")),
        "level": pa.array(["INFO", "WARN", "ERROR"][i % 3] for i in range(n)).dictionary_encode(),
        "n": pa.array([None if i % 5 == 0 else i for i in range(n)], pa.int64()),
        "d": pa.array([f"{i}.{i % 100:02d}" for i in range(n)]),
        "fs": pa.array([f"x{i % 10}" for i in range(n)]),
        "tags": pa.array([[f"t{i % 4}"] * (i % 3) for i in range(n)]),
        "e": pa.array(["a" if i % 2 else "b" for i in range(n)]),
        "msg": pa.array([f"GET /api/{i % 13} é{i}" for i in range(n)], pa.large_string()),
    })


def _chunked(t: pa.Table, sizes: list[int]) -> pa.Table:
    out, off = [], 0
    for s in sizes:
        out.append(t.slice(off, s))
        off += s
    out.append(t.slice(off))
    return pa.concat_tables(out)


def test_chunked_conform_equals_combined(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql(DDL.format(name="t"))
        meta = db.catalog.table("t").meta
        rows = _rows(300)
        chunked = _chunked(rows, [7, 64, 1, 100])
        assert chunked.column("msg").num_chunks == 5
        a = conform(meta, rows.combine_chunks())
        b = conform(meta, chunked)
        assert b.column("msg").num_chunks == 5   # not copied into one array
        assert a.schema == b.schema and a.equals(b)
        assert sort_rows(meta, a).equals(sort_rows(meta, b))


@pytest.mark.parametrize("col, bad", [("n", pa.array([70000], pa.int64())), ("n", pa.array([-1], pa.int64())),
                                      ("e", pa.array(["zz"])), ("fs", pa.array(["toolong"]))])
def test_a_bad_value_in_a_later_chunk_gives_the_unchunked_error(tmp_path, col, bad):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql(DDL.format(name="t"))
        meta = db.catalog.table("t").meta
        rows = _rows(200)
        i = rows.column_names.index(col)
        vals = pa.concat_arrays([rows.column(col).combine_chunks().slice(0, 150), bad,
                                 rows.column(col).combine_chunks().slice(151)])
        rows = rows.set_column(i, col, vals)
        errs = []
        for t in (rows.combine_chunks(), _chunked(rows, [50, 50, 49])):
            with pytest.raises(SkipidxError) as ei:
                conform(meta, t)
            errs.append(str(ei.value))
        assert errs[0] == errs[1]


def test_part_from_chunked_rows_is_byte_identical(tmp_path):
    rows = _rows(500)
    with skipidx.connect(str(tmp_path / "db")) as db:
        for name, data in (("one", rows.combine_chunks()), ("many", _chunked(rows, [33, 64, 128, 5]))):
            db.sql(DDL.format(name=name))
            db.catalog.table(name).insert(data, threads=1)
        files = []
        for name in ("one", "many"):
            with db.catalog.table(name).snapshot() as snap:
                (part,) = snap.parts
                got = {}
                for f in sorted(os.listdir(part.path)):
                    if f.endswith(".parquet"):
                        with open(os.path.join(part.path, f), "rb") as fh:
                            got[f] = fh.read()
                    elif f.endswith(".arrow"):
                        t = pa.ipc.open_file(os.path.join(part.path, f)).read_all()
                        got[f] = t.drop_columns([c for c in ("part", "fragment_id") if c in t.column_names])
                files.append(got)
        assert files[0].keys() == files[1].keys() and any(k.endswith(".parquet") for k in files[0])
        for k in files[0]:
            assert files[0][k] == files[1][k] if isinstance(files[0][k], bytes) else files[0][k].equals(files[1][k])
        assert db.sql("SELECT * FROM one ORDER BY ts, msg").to_arrow().equals(
            db.sql("SELECT * FROM many ORDER BY ts, msg").to_arrow())
