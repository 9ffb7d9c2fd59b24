"""Every sql_examples/*.sql on the demo dataset (1M rows, seed 42) gives its
expected output file, and every SELECT among them equals chDB's answer on the
same data (the .out files are checked against a real ClickHouse, not only
against ourselves).

Regenerate the .out files with ``skipidx demo --write-expected``.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from skipidx.apps import datagen
from conftest import DEMO_ROWS, DEMO_SEED  # the demo_db fixture is conftest's
from skipidx.apps.demo import default_examples_dir, render_results
from skipidx.sql import parse
from skipidx.sql.ast import Select

EXAMPLES = sorted(default_examples_dir().glob("*.sql"))
ROOT = default_examples_dir().parent


@pytest.fixture(scope="module")
def chdb_session(tmp_path_factory, chdb):
    _chdb = chdb
    d = tmp_path_factory.mktemp("chdb")
    path = d / "logs.parquet"
    writer = None
    for batch in datagen.generate(DEMO_ROWS, DEMO_SEED):
        if writer is None:
            writer = pq.ParquetWriter(str(path), batch.schema)
        writer.write_batch(batch)
    writer.close()
    dbname = _chdb.scratch_database("examples")
    _chdb.query(datagen.SCHEMA_SQL.format(table=f"{dbname}.logs", indexes="")
                + " SETTINGS index_granularity = 8192")
    _chdb.query(f"INSERT INTO {dbname}.logs SELECT * FROM file('{path}', Parquet)")

    class _InDb:  # runs the examples' unqualified SQL against this module's database
        def query(self, sql, fmt):
            _chdb.query(f"USE {dbname}")       # tables an example creates live there too
            try:
                return _chdb.query(sql.replace(" FROM logs", f" FROM {dbname}.logs"), fmt)
            finally:
                _chdb.query("USE default")

        def run(self, sql):  # a non-SELECT statement of an example, in this module's database
            _chdb.query(f"USE {dbname}")
            try:
                _chdb.query(sql)
            finally:
                _chdb.query("USE default")

    yield _InDb()
    _chdb.query(f"DROP DATABASE {dbname}")


def _norm(v):
    if isinstance(v, dt.datetime):  # chDB's Arrow output gives DateTime as epoch seconds
        return int((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)).timestamp())
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, bool):
        return int(v)
    return v


def test_examples_exist():
    assert len(EXAMPLES) >= 15, "sql_examples/ lost its demos"
    for p in EXAMPLES:
        assert p.with_suffix(".out").exists(), f"{p.name} has no expected output file"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_output(demo_db, path):
    got = render_results(demo_db.sql_all(path.read_text(encoding="utf-8")))
    want = path.with_suffix(".out").read_text(encoding="utf-8")
    assert got == want, f"{path.name}: output differs from {path.with_suffix('.out').name}:\n{got}"


@pytest.mark.chdb
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_matches_chdb(demo_db, chdb_session, path):
    text = path.read_text(encoding="utf-8")
    every = parse(text)
    if not any(isinstance(s, Select) for s in every):
        pytest.skip("no SELECT to compare (EXPLAIN is skipidx's own)")
    results = demo_db.sql_all(text)
    assert len(results) == len(every)
    for stmt, res in zip(every, results):
        if not isinstance(stmt, Select):
            # DDL, INSERT, SET of the example run in chDB too (file() paths as from the repository root)
            chdb_session.run(stmt.to_sql().replace("file('sql_examples/", f"file('{ROOT}/sql_examples/"))
            continue
        # chDB's copy of the table has no skip indexes: a forced index would fail there
        stmt = dataclasses.replace(stmt, settings=tuple(k for k in stmt.settings
                                                        if k.name != "force_data_skipping_indices"))
        fmt = stmt.format
        sql = dataclasses.replace(stmt, format=None, outfile=None).to_sql().replace(
            "file('sql_examples/", f"file('{ROOT}/sql_examples/")
        if fmt is not None:
            # a FORMAT clause: the text equals ClickHouse's bytes for that format
            from skipidx.apps.render import print_result

            buf = io.StringIO()
            print_result(res, out=buf, show_stats=False)
            assert buf.getvalue().encode() == chdb_session.query(sql, fmt).bytes(), f"{path.name}: {fmt}"
        want = chdb_session.query(sql, "ArrowTable")
        want_rows = [tuple(_norm(v) for v in r.values()) for r in want.to_pylist()]
        got_rows = [tuple(_norm(v) for v in r) for r in res.fetchall()]
        assert got_rows == want_rows, f"{path.name}: {sql}\n skipidx {got_rows[:5]}\n chDB    {want_rows[:5]}"
