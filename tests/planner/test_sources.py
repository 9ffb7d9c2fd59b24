"""The pruner's granule-source protocol: both kinds of part implement it."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import skipidx
from skipidx.planner.sources import GranuleSource


def test_mergetree_parts_and_external_files_are_granule_sources(tmp_path):
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (id UInt64, INDEX i id TYPE minmax) ORDER BY id SETTINGS index_granularity = 8")
        db.insert("t", pa.table({"id": np.arange(40, dtype=np.uint64)}))
        with db.catalog.table("t").snapshot() as snap:
            part = snap.parts[0]
            assert isinstance(part, GranuleSource)
            md = part.data_metadata(["id"])
            assert md.num_row_groups == len(part.marks) - 1
            assert part.index_entry("i") is not None and part.index_entry("nope") is None
        pq.write_table(pa.table({"x": np.arange(30, dtype=np.int64)}), str(tmp_path / "f.parquet"),
                       row_group_size=10)
        db.sql(f"CREATE TABLE lake ENGINE = ParquetFiles('{tmp_path}/*.parquet')")
        snap = db.catalog.table("lake").snapshot()
        with snap:
            f = snap.parts[0]
            assert isinstance(f, GranuleSource)
            assert f.data_metadata().num_row_groups == 3
