"""Export of a bloom_filter index as a Lance BLOOMFILTER index that Lance itself reads."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import SkipidxError

lance = pytest.importorskip("lance")


def test_export_lance_reads_our_filters(tmp_path):
    from lance.file import LanceFileReader

    from skipidx.apps.lance_export import export_lance

    with skipidx.connect() as db:
        db.sql("CREATE TABLE t (id UInt64, s Nullable(String), INDEX b s TYPE bloom_filter(0.01), "
               "INDEX tk s TYPE tokenbf_v1(256, 2, 0)) ORDER BY id SETTINGS index_granularity = 512")
        for k in range(2):
            ids = np.arange(k * 3000, (k + 1) * 3000)
            db.insert("t", pa.table({"id": pa.array(ids, pa.uint64()),
                                     "s": pa.array([f"v{i % 1700}" if i % 97 else None for i in ids])}))
        with pytest.raises(SkipidxError, match="whole-value"):
            export_lance(db, "t", "tk", str(tmp_path / "x.lance"))
        out = export_lance(db, "t", "b", str(tmp_path / "ds.lance"))
        assert out["fragments"] == 2
        ds = lance.dataset(str(tmp_path / "ds.lance"))
        for v in ("v17", "v1699", "absent"):
            want = db.sql(f"SELECT count() FROM t WHERE s = '{v}'").fetchall()[0][0]
            assert ds.to_table(filter=f"s = '{v}'").num_rows == want
        assert ds.to_table(filter="s IS NULL").num_rows == db.sql("SELECT count() FROM t WHERE s IS NULL").fetchall()[0][0]
        assert "ScalarIndexQuery" in ds.scanner(filter="s = 'v17'").explain_plan(True)
        # the index file Lance reads holds skipidx's filters, in Lance's zone schema
        lt = LanceFileReader(out["index_file"]).read_all().to_table()
        assert lt.column_names == ["fragment_id", "zone_start", "zone_length", "has_null", "bloom_filter_data"]
        snap = db.catalog.table("t").snapshot()
        with snap:
            ours = [b for p in snap.parts for b in p.load_index("b").filter_array().to_pylist()]
        assert lt.column("bloom_filter_data").to_pylist() == ours
