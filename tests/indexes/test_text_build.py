"""The text index build: slices on threads equal one pass, byte for byte; the load-time
walk of the postings rejects damaged blocks."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from skipidx.core.errors import CorruptionError
from skipidx.indexes import text as T
from skipidx.indexes.base import IndexDef, get_index_type


def _values(n: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "al", "a", "", "пример", "x1", "alphabet", "kraken sighted", "\xff"]
    out = []
    for _ in range(n):
        if rng.random() < 0.05:
            out.append(None)
        else:
            out.append(" ".join(rng.choice(words, int(rng.integers(0, 6)))) + str(int(rng.integers(0, 50))))
    return pa.array(out, pa.string())


def _index(tok: str):
    return get_index_type("text")(IndexDef("i", "s", None, "text", (), (("tokenizer", tok),
                                                                        ("dictionary_block_size", 5))), pa.string())


@pytest.mark.parametrize("tok", ["splitByNonAlpha", "ngrams(3)", "sparseGrams(3, 12)", "array"])
def test_slices_on_threads_equal_one_pass(tok, monkeypatch):
    vals = _values(700, 3)
    zs, zl = np.arange(0, 700, 64), np.minimum(64, 700 - np.arange(0, 700, 64))
    idx = _index(tok)
    one = idx.aggregator(1).build(vals, zs, zl).to_arrow("p")
    monkeypatch.setattr(T, "SLICE_ROWS", 37)
    monkeypatch.setattr(T, "MERGE_RANGE_TOKENS", 3)   # key ranges merged and blocks encoded on threads
    monkeypatch.setattr(T, "ENCODE_RANGE_BLOCKS", 1)
    many = idx.aggregator(2).build(vals, zs, zl).to_arrow("p")
    assert many.equals(one, check_metadata=True)
    # and added in several chunks
    agg = idx.aggregator(3)
    for a in range(0, 700, 192):
        b = min(a + 192, 700)
        k = (zs >= a) & (zs < b)
        agg.add(vals.slice(a, b - a), zs[k] - a, zl[k], a)
    assert agg.finish().to_arrow("p").equals(one, check_metadata=True)
    g = idx.granules_from_arrow(one)
    want = [i for i, v in enumerate(vals.to_pylist()) if v is not None and tok == "splitByNonAlpha"
            and "alpha" in v.replace("alphabet", "").split()]
    if tok == "splitByNonAlpha":
        assert g.rows_of(b"alpha").tolist() == want


@pytest.mark.parametrize("seed", range(4))
def test_hashed_build_equals_bucketed_and_reference(seed):
    """The two build kernels (one hash table of distinct tokens; buckets by first bytes) give
    the same dictionary and postings, equal to a dict of token -> sorted distinct rows: tokens
    empty, of one byte, sharing 8- and 16-byte prefixes (past the sort's prefix word), with
    0x00 and 0xff bytes, repeated in a row; tables grown several times."""
    from skipidx.indexes import text_postings as TP

    rng = np.random.default_rng(seed)
    vocab = [b"", b"a", b"\x00", b"\xff", b"\x00\x00", b"abcdefgh", b"abcdefghi", b"abcdefgh\x00",
             b"abcdefghabcdefgh", b"abcdefghabcdefgh\xff", b"abcdefghabcdefgi"]
    vocab += [bytes(rng.integers(0, 256, int(rng.integers(1, 24)), dtype=np.uint8)) for _ in range(3000)]
    n = 20000
    pick = rng.integers(0, len(vocab), n) if seed % 2 else np.minimum(rng.zipf(1.3, n) - 1, len(vocab) - 1)
    rows = np.sort(rng.integers(0, n // 5, n)).astype(np.int64)
    toks = [vocab[i] for i in pick]
    ends = np.cumsum([len(t) for t in toks]).astype(np.int64)
    starts = ends - np.array([len(t) for t in toks], np.int64)
    data = np.frombuffer(b"".join(toks) + b"\x00", np.uint8)
    ref: dict[bytes, set] = {}
    for t, r in zip(toks, rows.tolist()):
        ref.setdefault(t, set()).add(r)
    want_toks = sorted(ref)
    for build in (TP.build_postings_hashed, TP.build_postings):
        ts, te, po, pr = build(data, starts, ends, rows)
        assert [data[a:b].tobytes() for a, b in zip(ts, te)] == want_toks
        assert [pr[po[i]:po[i + 1]].tolist() for i in range(len(want_toks))] == [sorted(ref[t]) for t in want_toks]


def test_damaged_postings_rejected():
    idx = _index("splitByNonAlpha")
    vals = _values(300, 5)
    t = idx.aggregator(1).build(vals, np.array([0, 150]), np.array([150, 150])).to_arrow("p")
    idx.granules_from_arrow(t)
    col = t.column("postings").combine_chunks()
    offs = np.frombuffer(col.buffers()[1], np.int64)[:len(col) + 1]
    data = bytearray(np.frombuffer(col.buffers()[2], np.uint8)[offs[0]:offs[-1]].tobytes())
    bad = 0
    for pos in range(0, len(data), max(1, len(data) // 40)):
        d = bytearray(data)
        d[pos] ^= 0x80
        arr = pa.Array.from_buffers(pa.large_binary(), len(col), [None, pa.py_buffer((offs - offs[0]).tobytes()),
                                                                  pa.py_buffer(bytes(d))])
        try:
            g = idx.granules_from_arrow(t.set_column(3, "postings", arr))
        except CorruptionError:
            bad += 1
            continue
        # accepted: every posting still decodes to sorted rows inside the part
        td, to, pr, po = g.decode_all()
        assert pr.shape[0] == 0 or (pr.min() >= 0 and pr.max() < 300)
    assert bad > 0


def test_threaded_merge_with_interleaved_rows_equals_one_pass(monkeypatch):
    """OPTIMIZE's path: parts' rows interleave in the merged part; key ranges merged on threads."""
    vals = _values(600, 8)
    idx = _index("sparseGrams(3, 12)")
    zs, zl = np.arange(0, 600, 50), np.full(12, 50)
    want = idx.aggregator(1).build(vals, zs, zl).to_arrow("p")
    rng = np.random.default_rng(1)
    perm = rng.permutation(600)
    srcs, maps = [], []
    for k in range(3):
        rows = np.sort(perm[k * 200:(k + 1) * 200])
        srcs.append(idx.aggregator(1).build(vals.take(pa.array(rows)), np.array([0]), np.array([200])))
        maps.append(rows.astype(np.int64))
    monkeypatch.setattr(T, "MERGE_RANGE_TOKENS", 2)
    monkeypatch.setattr(T, "ENCODE_RANGE_BLOCKS", 1)
    agg = idx.aggregator(4)
    agg.use_merged([idx.granules_from_arrow(g.to_arrow("p")) for g in srcs], maps)
    agg.add(vals, zs, zl, 0)
    assert agg.finish().to_arrow("p").equals(want, check_metadata=True)


@pytest.mark.parametrize("layout", ["interleaved", "consecutive", "mixed"])
@pytest.mark.parametrize("tok,threads", [("sparseGrams(3, 12)", 1), ("sparseGrams(3, 12)", 2),
                                         ("sparseGrams(3, 12)", 5), ("splitByNonAlpha", 3), ("ngrams(3)", 8),
                                         ("array", 4)])
def test_merge_encoded_on_key_ranges_equals_one_pass(tok, threads, layout, monkeypatch):
    """OPTIMIZE's merge of encoded dictionaries cut into key ranges (each source entered
    mid-dictionary at a block found by its first tokens; blocks recut once the ranges'
    token counts are known) equals the one-pass build byte for byte, including ranges
    that begin or end inside a block and sources with no token in a range; parts whose
    rows land as one run (consecutive: a token of one part keeps its posting's bytes but
    the first row) and parts whose rows interleave, alone and mixed (threads 1: one pass)."""
    vals = _values(900, 21)
    idx = _index(tok)
    zs, zl = np.arange(0, 900, 60), np.full(15, 60)
    want = idx.aggregator(1).build(vals, zs, zl).to_arrow("p")
    perm = np.random.default_rng(threads).permutation(900)
    if layout == "consecutive":
        perm = np.arange(900)
    elif layout == "mixed":   # the first two parts consecutive, the others interleaved
        perm = np.concatenate([np.arange(400), 400 + np.random.default_rng(threads).permutation(500)])
    cuts = [0, 90, 400, 410, 900]          # parts of very different sizes, one of 10 rows
    srcs, maps = [], []
    for a, b in zip(cuts, cuts[1:]):
        rows = np.sort(perm[a:b])
        g = idx.aggregator(1).build(vals.take(pa.array(rows)), np.array([0]), np.array([b - a]))
        srcs.append(idx.granules_from_arrow(g.to_arrow("p")))
        maps.append(rows.astype(np.int64))
    monkeypatch.setattr(T, "MERGE_RANGE_BLOCKS", 1)

    def one_pass(*a):
        raise AssertionError("the one-pass merge ran instead of key ranges")

    if threads > 1:
        monkeypatch.setattr(T.TP, "merge_encoded", one_pass)
    agg = idx.aggregator(threads)
    agg.use_merged(srcs, maps)
    agg.add(vals, zs, zl, 0)
    got = agg.finish().to_arrow("p")
    assert got.equals(want, check_metadata=True)


@pytest.mark.parametrize("seed", range(3))
def test_merge_of_consecutive_parts_concatenates_postings_as_a_rebuild(seed, monkeypatch):
    """Parts of consecutive keys: a token several parts hold gets its postings concatenated
    without decoding (each part's bitmap moved to its bit offset, delta bytes copied) and the
    smaller form chosen as a rebuild chooses it: tokens dense in one part and rare in another,
    far apart or adjacent, in 1-4 parts of very different sizes; one pass and key ranges."""
    rng = np.random.default_rng(seed)
    n = 3000
    dens = [0.0, 0.0005, 0.01, 0.2, 0.6, 0.97]
    cuts = [0, 7, 900, 950, n]
    rows = [[] for _ in range(n)]
    for j in range(120):
        for a, b in zip(cuts, cuts[1:]):
            p = dens[int(rng.integers(0, len(dens)))]
            for r in np.flatnonzero(rng.random(b - a) < p):
                rows[a + int(r)].append(f"t{j}")
    vals = pa.array([" ".join(r) for r in rows], pa.string())
    idx = _index("splitByNonAlpha")
    zs = np.arange(0, n, 100)
    zl = np.minimum(100, n - zs)
    want = idx.aggregator(1).build(vals, zs, zl).to_arrow("p")
    srcs, maps = [], []
    for a, b in zip(cuts, cuts[1:]):
        g = idx.aggregator(1).build(vals.slice(a, b - a), np.array([0]), np.array([b - a]))
        srcs.append(idx.granules_from_arrow(g.to_arrow("p")))
        maps.append(np.arange(a, b, dtype=np.int64))
    for threads in (1, 3):
        monkeypatch.setattr(T, "MERGE_RANGE_BLOCKS", 1)
        agg = idx.aggregator(threads)
        order = [3, 1, 0, 2] if threads == 3 else [0, 1, 2, 3]   # sources in any order
        agg.use_merged([srcs[i] for i in order], [maps[i] for i in order])
        agg.add(vals, zs, zl, 0)
        assert agg.finish().to_arrow("p").equals(want, check_metadata=True)


def test_concatenated_posting_form_at_the_bound():
    """A token of two consecutive parts whose first posting is a bitmap with a 2-byte delta
    inside: the merged bitmap (127 bytes) is not smaller than the delta form's lower bound
    (127) but is smaller than its exact size (128), so the bitmap's deltas must be counted."""
    n = 2000
    rows = [[] for _ in range(n)]
    for r in list(range(124)) + [300, 1003]:
        rows[r].append("u")
    rows[5].append("v")
    rows[1500].append("v")
    vals = pa.array([" ".join(r) for r in rows], pa.string())
    idx = _index("splitByNonAlpha")
    zs = np.arange(0, n, 100)
    zl = np.full(20, 100)
    want = idx.aggregator(1).build(vals, zs, zl)
    assert want.rows_of(b"u").tolist() == list(range(124)) + [300, 1003]
    srcs = [idx.granules_from_arrow(idx.aggregator(1).build(vals.slice(a, 1000), np.array([0]),
                                                            np.array([1000])).to_arrow("p")) for a in (0, 1000)]
    agg = idx.aggregator(1)
    agg.use_merged(srcs, [np.arange(0, 1000, dtype=np.int64), np.arange(1000, 2000, dtype=np.int64)])
    agg.add(vals, zs, zl, 0)
    assert agg.finish().to_arrow("p").equals(want.to_arrow("p"), check_metadata=True)


def test_one_core_builds_and_merges_in_one_pass(monkeypatch):
    """A process allowed one core (its CPU affinity) takes one thread: no slices on threads,
    no key ranges in the merge (they only add work there)."""
    import os

    monkeypatch.delenv("SKIPIDX_BUILD_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(T, "MERGE_RANGE_BLOCKS", 1)

    def ranges(*a):
        raise AssertionError("key ranges with one core")

    monkeypatch.setattr(T, "_merge_encoded_ranges", ranges)
    idx = _index("splitByNonAlpha")
    agg = idx.aggregator()
    assert agg.threads == 1
    vals = _values(400, 2)
    zs, zl = np.array([0, 200]), np.array([200, 200])
    want = idx.aggregator(1).build(vals, zs, zl).to_arrow("p")
    srcs = [idx.granules_from_arrow(idx.aggregator(1).build(vals.slice(a, 200), np.array([0]),
                                                            np.array([200])).to_arrow("p")) for a in (0, 200)]
    agg.use_merged(srcs, [np.arange(0, 200, dtype=np.int64), np.arange(200, 400, dtype=np.int64)])
    agg.add(vals, zs, zl, 0)
    assert agg.finish().to_arrow("p").equals(want, check_metadata=True)
