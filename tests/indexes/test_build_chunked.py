"""An SBBF build over a chunked string column (a streamed insert's blocks) takes each slice
from its chunk instead of copying the column into one array: the index table (filters, ndv,
fill, group summaries) is the one built from the same values in one array."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import skipidx.store  # noqa: F401  (registers the caches of the store)
from skipidx.indexes import bloom
from skipidx.indexes.base import IndexDef, get_index_type

ROWS = [None if i % 13 == 0 else f"svc-{i % 7} GET /v{i % 5}/items/{i % 251} é{i % 3} took {i % 97}ms"
        for i in range(4000)]
CASES = [("tokenbf_v1", (512, 3, 0), ()), ("ngrambf_v1", (3, 1024, 2, 0), ()), ("bloom_filter", (), ()),
         ("sbbf", ("ngram",), (("n", 4),)), ("sbbf", ("token",), ())]


def _chunked(arr: pa.Array, sizes: list[int]) -> pa.ChunkedArray:
    out, off = [], 0
    for s in sizes:
        out.append(arr.slice(off, s))
        off += s
    out.append(arr.slice(off))
    return pa.chunked_array(out, type=arr.type)


@pytest.mark.parametrize("case", CASES, ids=[f"{t}{a}" for t, a, _ in CASES])
@pytest.mark.parametrize("typ", [pa.string(), pa.large_binary()])
@pytest.mark.parametrize("fused, threads, zone", [(None, 1, 64), (None, 3, 16), (False, 2, 16)])
def test_chunked_build_equals_combined(case, typ, fused, threads, zone, monkeypatch):
    monkeypatch.setattr(bloom, "CHUNK_BYTES", 9000)   # many slices, most of them across chunks
    t, args, kwargs = case
    idx = get_index_type(t)(IndexDef("i", "c", None, t, tuple(args), tuple(kwargs)), typ)
    arr = pa.array([None if r is None else r.encode() if typ == pa.large_binary() else r for r in ROWS], typ)
    # uneven blocks, an empty one, and a block boundary inside most zones
    chunked = _chunked(arr, [1000, 0, 333, 1, 1700])
    # (zones of 16 rows: 250 zones, enough for group summaries)
    zs = np.arange(0, len(arr), zone, dtype=np.int64)
    zl = np.minimum(zone, len(arr) - zs)
    agg_a = bloom.SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused, threads=threads)
    agg_b = bloom.SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused, threads=threads)
    ga, gb = agg_a.build(arr, zs, zl), agg_b.build(chunked, zs, zl)
    assert (ga.summary is not None) == (zone == 16) == (gb.summary is not None)
    a, b = ga.to_arrow("p"), gb.to_arrow("p")
    assert a.equals(b) and a.schema.metadata == b.schema.metadata
    assert agg_b.takes_chunked
