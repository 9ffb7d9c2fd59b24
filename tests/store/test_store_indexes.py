"""The store with the real index types (skipidx.indexes): every type is built
per part, zone-chunked builds equal one-shot builds, files survive merges and
MATERIALIZE, and the bloom_filter index equals the Parquet bloom filter
pyarrow writes for the same granule."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _store_helpers import make_meta
from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.store.catalog import Catalog
from skipidx.store.writer import index_values

INDEXES = [
    IndexDef("mm", "id", None, "minmax", (), (), 2),
    IndexDef("st", "lvl", None, "set", (10,), (), 1),
    IndexDef("bf", "trace", None, "bloom_filter", (0.01,), (), 1),
    IndexDef("tok", "msg", None, "tokenbf_v1", (512, 3, 0), (), 1),
    IndexDef("ng", "msg", "lower", "ngrambf_v1", (3, 1024, 2, 0), (), 4),
    IndexDef("ad", "msg", None, "sbbf", ("token",), (("fpp", 0.01),), 2),
]


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["Timeout", "user", "Zürich", "東京", "db", "retry", "OK", "kraken", "error"])
    msg = [" ".join(words[rng.integers(0, len(words), 6)]) for _ in range(n)]
    return pa.table({
        "id": pa.array(rng.permutation(n).astype(np.uint64) + seed * 10_000),
        "lvl": pa.array([None if i % 11 == 0 else ("INFO", "WARN", "ERROR")[i % 3] for i in range(n)]),
        "trace": pa.array([f"{x:016x}" for x in rng.integers(0, 2**62, n)]),
        "msg": pa.array(msg),
    })


def _same(a: pa.Table, b: pa.Table, name: str) -> None:
    """Equal tables; a set index's values per zone compare as sets (their
    order depends on what else the aggregator saw, not on the zone)."""
    if "values" in a.column_names and a.schema.field("values").type == b.schema.field("values").type:
        va = [sorted(x, key=repr) if x is not None else None for x in a.column("values").to_pylist()]
        vb = [sorted(x, key=repr) if x is not None else None for x in b.column("values").to_pylist()]
        assert va == vb, name
        a, b = a.drop_columns(["values"]), b.drop_columns(["values"])
    assert a.equals(b, check_metadata=True), name


def _table(tmp_path, gran=64):
    meta = make_meta("t", [("id", "UInt64"), ("lvl", "Nullable(String)"), ("trace", "String"), ("msg", "String")],
                     ["id"], gran, INDEXES)
    return Catalog(str(tmp_path)).create_table(meta)


def _one_shot(part, im) -> pa.Table:
    col = part.meta.column(im.definition.column)
    inst = get_index_type(im.definition.type_name)(im.definition, col.type.arrow_type)
    values = index_values(im, part.read([im.definition.column]).column(0).combine_chunks())
    zs, zl = part.index_zones(im.name)
    return inst.aggregator().build(values, zs, zl).to_arrow(part.name)


@pytest.mark.parametrize("chunk_rows", [1 << 20, 200], ids=["one-chunk", "many-chunks"])
def test_every_index_type_round_trips(tmp_path, monkeypatch, chunk_rows):
    import skipidx.store.writer as part_mod

    monkeypatch.setattr(part_mod, "INDEX_CHUNK_ROWS", chunk_rows)
    table = _table(tmp_path)
    table.insert(_rows(1000, 1))
    with table.snapshot() as snap:
        [p] = snap.parts
        for im in snap.meta.indexes:
            g = p.load_index(im.name)
            zs, zl = p.index_zones(im.name)
            assert np.array_equal(g.zone_start, zs) and np.array_equal(g.zone_length, zl)
            on_disk = pa.ipc.open_file(os.path.join(p.path, f"idx.{im.name}.arrow")).read_all()
            _same(on_disk, _one_shot(p, im), im.name)
            assert on_disk.schema.metadata[b"skipidx.index_type"] == im.definition.type_name.encode()


def test_indexes_after_merge_and_materialize(tmp_path):
    table = _table(tmp_path, gran=32)
    for i in range(4):
        table.insert(_rows(150, i + 2))
    table.add_index(IndexDef("late", "trace", None, "bloom_filter", (), (), 1))
    assert table.materialize_index("late") == 4
    table.optimize(final=True)
    with table.snapshot() as snap:
        [p] = snap.parts
        assert p.num_rows == 600
        for im in snap.meta.indexes:
            assert p.has_index(im.name)
            on_disk = pa.ipc.open_file(os.path.join(p.path, f"idx.{im.name}.arrow")).read_all()
            _same(on_disk, _one_shot(p, im), im.name)


def test_bloom_filter_granule_equals_pyarrow_parquet_filter(tmp_path):
    """Per granule: our bloom_filter bytes == the filter pyarrow writes into a
    Parquet row group of the same values with the same size (ndv, fpp)."""
    from skipidx.core.parquet_bloom import read_bloom_filter

    table = _table(tmp_path, gran=100)
    table.insert(_rows(300, 7))
    with table.snapshot() as snap:
        [p] = snap.parts
        g = pa.ipc.open_file(os.path.join(p.path, "idx.bf.arrow")).read_all()
        filters = g.column("bloom_filter_data").to_pylist()
        for i in range(p.n_granules):
            vals = p.read(["trace"], [(i, i + 1)])
            path = str(tmp_path / f"g{i}.parquet")
            pq.write_table(vals, path, row_group_size=1000,
                           bloom_filter_options={"trace": {"ndv": len(set(vals.column(0).to_pylist())), "fpp": 0.01}})
            ref = read_bloom_filter(path, 0, "trace")
            assert ref is not None
            assert filters[i] == ref.to_bytes(), f"granule {i}"
