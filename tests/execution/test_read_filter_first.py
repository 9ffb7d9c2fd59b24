"""The filter-first read (execution/scan.read_filter_first) and the store's generation pin
that the Spark reader uses: same rows as reading everything and filtering."""
from __future__ import annotations

import fcntl
import os

import numpy as np
import pyarrow as pa
import pytest

import skipidx
from skipidx.execution.scan import read_filter_first, row_mask
from skipidx.expr.binder import bind_where
from skipidx.sql.parser import parse_expression
from skipidx.expr.visitors import columns_of
from skipidx.store.commit import READERS_DIR, pin_generation, read_state


@pytest.fixture
def db(tmp_path):
    d = skipidx.connect(str(tmp_path / "db"))
    d.sql("CREATE TABLE t (id UInt64, k String, v Float64) ORDER BY id SETTINGS index_granularity = 16")
    rng = np.random.default_rng(7)
    n = 1000
    d.insert("t", pa.table({"id": np.arange(n, dtype=np.uint64),
                            "k": [f"k{int(x)}" for x in rng.integers(0, 40, n)],
                            "v": rng.random(n)}))
    yield d
    d.close()


@pytest.mark.parametrize("where", ["k = 'k3'", "k IN ('k1', 'k39') OR id < 5", "k = 'none'", "id >= 0",
                                   "v > 0.99"])
def test_filter_first_equals_read_all_then_filter(db, where):
    snap = db.catalog.table("t").snapshot()
    with snap:
        meta = snap.meta
        bound = bind_where(meta, parse_expression(where))
        order = meta.column_names
        for part in snap.parts:
            n = len(part.marks) - 1
            for batch in ([(0, n)], [(1, 3), (5, n)]):
                full = part.read(order, batch)
                m = row_mask(bound, full)
                want = full if m is None else full.filter(pa.array(m))
                first = [c for c in order if c in columns_of(bound)]
                rest = [c for c in order if c not in first]
                got = read_filter_first(part, batch, bound, first, rest, order)
                if got is None:
                    assert want.num_rows == 0
                else:
                    assert got.equals(want)


def test_pin_generation_holds_a_shared_lock(db):
    table_dir = db.catalog.table("t").path
    gen = read_state(table_dir).gen
    fd = pin_generation(table_dir, gen)
    try:
        probe = os.open(os.path.join(table_dir, READERS_DIR, f"{gen}.lock"), os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)   # a cleanup's exclusive probe fails
        finally:
            os.close(probe)
    finally:
        os.close(fd)
