"""The zoo's ClickHouse side: the same rows, granules and WHEREs in chDB.

The column (plus ``__row``) goes into a MergeTree ``ORDER BY __row`` with
``index_granularity = G`` and ``index_granularity_bytes = 0`` (fixed-row
granules: ClickHouse's granules are the zoo's, row for row), merged to one
part. Each index is added with ``ALTER TABLE ... ADD INDEX`` and built alone
by ``MATERIALIZE INDEX`` (``mutations_sync = 2``; its wall time is the build
time). Sizes come from ``system.data_skipping_indices``: a Bloom-filter
index's bytes are its uncompressed bitsets (the zoo's filters are counted
raw), a text index's its compressed bytes on disk (the engine's text index
is counted by its files); both are kept.

Granules kept: ``EXPLAIN indexes = 1 SELECT count() ... WHERE w`` with every
other index ignored (``ignore_data_skipping_indices``), the query condition
cache and the text index's direct read off; an index without a ``Skip``
entry took no part and kept every granule. The ideal per WHERE is
``uniqExact(intDiv(__row, G))`` with skip indexes off, and must equal the
zoo's own (else the two sides did not see the same data). Probe time: the
same ``SELECT count()`` per WHERE after one warm-up query, summed.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa

from skipidx.apps.research.chdb_compare import _q, parse_explain_skip
from skipidx.core.errors import SkipidxError


def chdb_zoo_rows(values: pa.Array | pa.ChunkedArray, wheres: Sequence[str], specs: Sequence[tuple[str, str, str]],
                  *, corpus: str, tokenizer: str, rows_per_granule: int, ideal: int, keys: int,
                  row: Callable[..., Any]) -> list[Any]:
    """One `row` (the zoo's ZooRow, passed in so the two modules do not import each
    other) per (index name, TYPE clause, family) of `specs`, over column ``msg``."""
    import pyarrow.parquet as pq

    from skipidx.apps.research import chdb_session as _chdb

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    g = int(rows_per_granule)
    root = tempfile.mkdtemp(prefix="skipidx_zoo_chdb_")
    s = _chdb.session()
    dbn = _chdb.scratch_database("zoo")
    try:
        path = os.path.join(root, "data.parquet")
        pq.write_table(pa.table({"__row": pa.array(np.arange(len(values), dtype=np.uint64)),
                                 "msg": values.cast(pa.string())}), path)
        _q(s, f"CREATE TABLE {dbn}.t (__row UInt64, msg String) ENGINE = MergeTree ORDER BY __row "
              f"SETTINGS index_granularity = {g}, index_granularity_bytes = 0")
        _q(s, f"INSERT INTO {dbn}.t SELECT __row, msg FROM file('{path}', Parquet)")
        _q(s, f"OPTIMIZE TABLE {dbn}.t FINAL")
        build: dict[str, float] = {}
        for name, tsql, _fam in specs:
            _q(s, f"ALTER TABLE {dbn}.t ADD INDEX {name} msg TYPE {tsql}")
            t0 = time.perf_counter()
            _q(s, f"ALTER TABLE {dbn}.t MATERIALIZE INDEX {name} SETTINGS mutations_sync = 2")
            build[name] = time.perf_counter() - t0
        sizes = {}
        for line in _q(s, "SELECT name, data_uncompressed_bytes, data_compressed_bytes FROM "
                          f"system.data_skipping_indices WHERE database = '{dbn}' AND table = 't'",
                       "TSVRaw").strip().splitlines():
            nm, unc, comp = line.split("\t")
            sizes[nm] = (int(unc), int(comp))
        base = "use_query_condition_cache = 0, query_plan_direct_read_from_text_index = 0"
        ch_ideal = sum(int(_q(s, f"SELECT uniqExact(intDiv(__row, {g})) FROM {dbn}.t WHERE {w} "
                                 "SETTINGS use_skip_indexes = 0, use_query_condition_cache = 0").strip())
                       for w in wheres)
        if ch_ideal != int(ideal):
            raise SkipidxError(f"chDB's ideal ({ch_ideal} granules) differs from the zoo's ({ideal}) on {corpus} "
                               f"/ {tokenizer}: the two sides did not see the same data")
        total = int(_q(s, f"SELECT count() FROM system.parts WHERE database = '{dbn}' AND table = 't' AND active")
                    .strip())
        if total != 1:
            raise SkipidxError(f"chDB table has {total} parts after OPTIMIZE FINAL; expected 1")
        n_granules = (len(values) + g - 1) // g
        names = [n for n, _, _ in specs]
        rows = []
        for name, tsql, fam in specs:
            others = ",".join(n for n in names if n != name)
            st = base + (f", ignore_data_skipping_indices = '{others}'" if others else "")
            kept = 0
            for w in wheres:
                got = parse_explain_skip(_q(s, f"EXPLAIN indexes = 1 SELECT count() FROM {dbn}.t WHERE {w} "
                                               f"SETTINGS {st}", "TSVRaw"))
                kept += got.get(name, (n_granules, n_granules))[0]
            if wheres:
                _q(s, f"SELECT count() FROM {dbn}.t WHERE {wheres[0]} SETTINGS {st}")   # warm-up
            t0 = time.perf_counter()
            for w in wheres:
                _q(s, f"SELECT count() FROM {dbn}.t WHERE {w} SETTINGS {st}")
            probe_s = time.perf_counter() - t0
            unc, comp = sizes.get(name, (0, 0))
            nbytes = comp if tsql.startswith("text") else unc
            rows.append(row(corpus, tokenizer, fam, f"chDB {tsql}", nbytes, 8.0 * nbytes / max(keys, 1),
                               build[name], probe_s, kept, int(ideal), kept / max(int(ideal), 1), 0, 0, 0.0, 0.0,
                               0.0, 0.0, queries=len(wheres), engine="chDB", bytes_compressed=comp))
        return rows
    finally:
        try:
            _q(s, f"DROP DATABASE IF EXISTS {dbn}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
