"""Export a table with a ``bloom_filter`` index as a Lance dataset whose BLOOMFILTER
scalar index holds skipidx's filters (``pylance`` needed: ``pip install pylance``).

Lance's bloom-filter index is the same object skipidx keeps: one Split Block
Bloom Filter per zone over xxh64 of the value's Parquet PLAIN bytes, in a file
with the zone schema (``fragment_id, zone_start, zone_length, has_null,
bloom_filter_data``; ``bloomfilter_item``/``bloomfilter_probability`` in the
metadata). So the export writes each part as one Lance fragment (same rows,
same order), lets Lance register a BLOOMFILTER index on the column, and then
replaces the index file's zones with the part's own filters (zone bounds
relative to the fragment, as Lance's are). Lance then prunes with skipidx's
filters.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError

LANCE_FIELDS = [
    pa.field("fragment_id", pa.uint64(), nullable=False),
    pa.field("zone_start", pa.uint64(), nullable=False),
    pa.field("zone_length", pa.uint64(), nullable=False),
    pa.field("has_null", pa.bool_(), nullable=False),
    pa.field("bloom_filter_data", pa.binary(), nullable=False),
]


def export_lance(db: Any, table: str, index: str, uri: str) -> dict:
    """Write `table` to the Lance dataset `uri` (which must not exist) with index `index`
    (a ``bloom_filter`` index on a column) as its BLOOMFILTER index. Returns a summary."""
    try:
        import lance
        from lance.file import LanceFileWriter
    except ImportError:
        raise SkipidxError("export to Lance needs the pylance package (pip install pylance)") from None
    if os.path.exists(uri):
        raise SkipidxError(f"{uri!r} exists: export writes a new Lance dataset")
    t = db.catalog.table(table)
    with t.snapshot() as snap:
        im = snap.meta.index(index)
        if im.definition.type_name != "bloom_filter" or im.definition.expr_func is not None:
            raise SkipidxError(f"index {index!r} is {im.definition.type_name} on {im.definition.expr_sql}: "
                               f"Lance's bloom filters are whole-value filters of a column (bloom_filter)")
        column = im.definition.column
        parts = list(snap.parts)
        if not parts:
            raise SkipidxError(f"table {table!r} has no rows to export")
        granules = []
        for i, p in enumerate(parts):
            data = p.read(snap.meta.column_names)
            lance.write_dataset(data, uri, mode="create" if i == 0 else "append", max_rows_per_file=max(1, len(data)))
            granules.append(p.load_index(index))
        ds = lance.dataset(uri)
        frags = [f.fragment_id for f in ds.get_fragments()]
        if len(frags) != len(parts):
            raise SkipidxError(f"Lance wrote {len(frags)} fragments for {len(parts)} parts")
        # Lance builds (uncommitted) and lays out the index; its file is then replaced by
        # skipidx's filters and the index committed with that file's size
        idx = ds.create_index_uncommitted(column, "BLOOMFILTER", fragment_ids=frags)
        path = os.path.join(uri, "_indices", str(idx.uuid), "bloomfilter.lance")
        if not os.path.exists(path):
            raise SkipidxError(f"Lance wrote no bloom-filter index file at {path}")
        cols: list[list] = [[], [], [], [], []]
        fpp = float(im.params.get("fpp", 0.025))
        for frag, g in zip(frags, granules):
            n = len(g)
            cols[0].append(np.full(n, frag, dtype=np.uint64))
            cols[1].append(np.asarray(g.zone_start, dtype=np.uint64))
            cols[2].append(np.asarray(g.zone_length, dtype=np.uint64))
            cols[3].append(np.asarray(g.has_null, dtype=bool))
            cols[4].append(g.filter_array().cast(pa.binary()))
        out = pa.table([pa.array(np.concatenate(cols[0])), pa.array(np.concatenate(cols[1])),
                        pa.array(np.concatenate(cols[2])), pa.array(np.concatenate(cols[3])),
                        pa.concat_arrays(cols[4])],
                       schema=pa.schema(LANCE_FIELDS, metadata={
                           b"bloomfilter_item": str(int(max(int(g.zone_length.max()) for g in granules))).encode(),
                           b"bloomfilter_probability": repr(fpp).encode(), b"null_bitmap": b"1"}))
        # Lance keeps the column's NULL rows in a global buffer its metadata points at
        # (null_bitmap): carried over from the file Lance built over the same rows
        from lance.file import LanceFileReader

        built = LanceFileReader(path)
        md = dict(built.read_all().to_table().schema.metadata or {})
        extra = []
        if b"null_bitmap" in md:
            extra.append(built.read_global_buffer(int(md[b"null_bitmap"])))
        del built
        os.remove(path)
        w = LanceFileWriter(path, out.schema)
        for buf in extra:
            w.add_global_buffer(buf)
        w.write_batch(out)
        w.close()
        import dataclasses

        from lance.dataset import IndexFile

        idx = dataclasses.replace(idx, files=[IndexFile(path="bloomfilter.lance", size_bytes=os.path.getsize(path))])
        lance.LanceDataset.commit(uri, lance.LanceOperation.CreateIndex([idx], []), read_version=ds.version)
        return {"uri": uri, "fragments": len(frags), "zones": out.num_rows, "index_file": path,
                "filter_bytes": int(sum(len(b) for b in out.column("bloom_filter_data").to_pylist()))}
