"""The seeded file-mutation fuzzer (tests/_file_fuzz.py), small: damaged
state.json, manifests, index files and Parquet footers with recomputed
checksums give answers or SkipidxError -- in worker processes, so an abort
is caught. bench/fuzz_files.py runs 10,000 cases."""
from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import _file_fuzz  # noqa: E402
from skipidx.core.errors import CorruptionError  # noqa: E402
from skipidx.store.parquet_check import check_footer_bytes  # noqa: E402


def test_mutation_fuzz_small():
    s = _file_fuzz.run_cases(range(30), workers=1)
    assert s["cases"] == 30
    assert (s["non_skipidx_error"], s["crashes"], s["hangs"]) == (0, 0, 0), s["failures"][:3]
    assert s["statements_skipidx_error"] > 0 and s["statements_ok"] > 0


#: The cases of the first 10,000-case run (bench/fuzz_files.py) that raised
#: something else than SkipidxError: undecodable names in index files and
#: Parquet schemas, map keys that are structs in a footer, row-group spans
#: beyond the data file, invalid UTF-8 in a String column reaching fetchall.
FOUND_BY_THE_BENCH = [552, 612, 616, 1043, 1513, 2572, 3327, 3954, 4147, 4972, 4978, 5054, 6108, 6357, 6487,
                      6723, 7052, 7262, 7507, 7657, 9237,
                      8768]   # the second run's one: a schema element's name of another Thrift type


def test_mutation_fuzz_regressions():
    s = _file_fuzz.run_cases(FOUND_BY_THE_BENCH, workers=1)
    assert s["cases"] == len(FOUND_BY_THE_BENCH)
    assert (s["non_skipidx_error"], s["crashes"], s["hangs"]) == (0, 0, 0), s["failures"][:3]


def _footer_mutants():
    """Bit-flipped footers that pyarrow's read_metadata accepts but whose
    column-chunk accessors abort the process (found by the fuzzer)."""
    t = pa.table({"id": pa.array(range(600), pa.uint64()), "msg": [f"m{i}" if i % 3 else None for i in range(600)]})
    buf = io.BytesIO()
    pq.write_table(t, buf, row_group_size=32)
    raw = buf.getvalue()
    flen = int.from_bytes(raw[-8:-4], "little")
    lo = len(raw) - 8 - flen
    for seed in range(3000):
        rng = random.Random(seed)
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(lo, len(raw) - 8)
            b[i] ^= 1 << rng.randrange(8)
        try:
            pq.read_metadata(pa.BufferReader(bytes(b)))
        except Exception:   # noqa: BLE001 - pyarrow refuses it itself: not what we look for
            continue
        try:
            check_footer_bytes(bytes(b[lo:len(raw) - 8]), "f")
        except CorruptionError as e:
            yield bytes(b), e.message


def test_footer_check_catches_what_pyarrow_would_abort_on():
    """Footers the check refuses include ones pyarrow's accessor dies on (run
    in a child: the abort is what the check keeps out of the engine)."""
    code = textwrap.dedent("""
        import sys, pyarrow as pa, pyarrow.parquet as pq
        md = pq.read_metadata(pa.BufferReader(sys.stdin.buffer.read()))
        for i in range(md.num_row_groups):
            for j in range(md.num_columns):
                md.row_group(i).column(j).total_compressed_size
    """)
    kinds, died = set(), 0
    for n, (data, msg) in enumerate(_footer_mutants()):
        kinds.add("histogram" if "histogram" in msg else "type" if "physical type" in msg else "other")
        if n < 8:
            r = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True)
            died += r.returncode != 0
        if n >= 8 and {"histogram", "type"} <= kinds:
            break
    assert {"histogram", "type"} <= kinds
    assert died >= 1


def test_clean_footers_pass(tmp_path):
    for t in (pa.table({"a": pa.array([1, None, 3]), "b": pa.array([["x"], [], None])}),
              pa.table({"s": pa.array([{"x": 1, "y": "a"}, None])})):
        p = str(tmp_path / "f.parquet")
        pq.write_table(t, p, row_group_size=1)
        from skipidx.store.parquet_check import check_footer

        check_footer(p)


@pytest.mark.parametrize("dictionary", [False, True], ids=["plain", "dictionary"])
def test_non_utf8_string_in_a_data_file_names_the_part_and_file(tmp_path, dictionary):
    """A String value that is not UTF-8 in a data file whose checksums were
    recomputed: the read that meets it names the part and the file (the bytes
    would otherwise pass every kernel and fail only when fetched)."""
    import json

    import xxhash

    import skipidx
    from skipidx.store import commit as _commit
    from skipidx.store.part import clear_caches

    db = skipidx.connect(str(tmp_path / "db"))
    lc = "LowCardinality(String)" if dictionary else "String"
    db.sql(f"CREATE TABLE t (id UInt64, s {lc}) ORDER BY id "
           "SETTINGS compression = 'none', background_merges = 0")
    db.insert("t", pa.table({"id": pa.array(range(100), pa.uint64()),
                             "s": [f"v{i % 4}QQ\u00e9" for i in range(100)]}))
    tdir = tmp_path / "db" / "t"
    pname = _file_fuzz._load_state(str(tdir))["state"]["parts"][0]["name"]
    pdir = tdir / "parts" / pname
    fpath = pdir / "data.parquet"
    raw = fpath.read_bytes()
    assert b"QQ\xc3\xa9" in raw
    fpath.unlink()
    fpath.write_bytes(raw.replace(b"QQ\xc3\xa9", b"QQ\xff\xfe"))
    man = json.loads((pdir / "manifest.json").read_bytes())
    man["files"]["data.parquet"] = _file_fuzz._file_sum_json(str(fpath), man["files"]["data.parquet"]["block_size"])
    mraw = json.dumps(man).encode()
    (pdir / "manifest.json").unlink()
    (pdir / "manifest.json").write_bytes(mraw)
    doc = _file_fuzz._load_state(str(tdir))
    doc["state"]["parts"][0]["manifest_xxh3_128"] = xxhash.xxh3_128_hexdigest(mraw)
    _file_fuzz._write_state(str(tdir), doc)
    _commit.clear_state_cache()
    clear_caches()
    assert db.sql("SELECT count() FROM t WHERE id < 50").fetchall() == [(50,)]   # s is not read
    for sql in ("SELECT s FROM t", "SELECT count() FROM t WHERE s LIKE '%QQ%'"):
        with pytest.raises(CorruptionError) as ei:
            db.sql(sql).fetchall()
        assert ei.value.path == str(fpath) and pname in ei.value.message and "UTF-8" in ei.value.message
        assert "\\xff" not in str(ei.value)
    db.close()
