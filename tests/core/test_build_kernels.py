"""The distinct-set kernels of the adaptive SBBF build (skipidx.core._kernels.build).

The set is reused zone after zone (cleared by walking the zone's distinct
list, or zeroed whole when the zone filled it), grows while a zone fills it,
and lives in scratch buffers reused by every slice a build thread runs. These
tests cut zones whose distinct counts jump (tiny, huge, tiny, the same huge
tokens again) so every one of those paths runs, and check each zone's
distinct count and filter bytes against an oracle built zone by zone with
Python sets, the ``xxhash`` package and ``SBBF.insert_hashes``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash

import skipidx.indexes.bloom as bloom
from skipidx.core import sizing
from skipidx.core._kernels import build as kb
from skipidx_tokenizers import _filters as tk
from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.indexes.bloom import SBBFAggregator
from skipidx.core.sbbf import SBBF, exact_num_bytes, optimal_num_bytes

ZONE = 64


_ALNUM = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)


def _zone_rows(kind: int, z: int) -> list[str | None]:
    """64 rows of one zone: 0 tiny vocabulary, 1 ~19k distinct words (and ~17k trigrams), 2 ~6k,
    3 zone 1's rows again."""
    if kind == 0:
        return ["a b c", None, "a a"] * 21 + ["b"]
    width = 300 if kind in (1, 3) else 100
    rng = np.random.default_rng(1 if kind == 3 else z)   # seeded: kind 3 repeats zone 1
    letters = _ALNUM[rng.integers(0, _ALNUM.shape[0], size=(ZONE, width, 7))]
    return [" ".join(w.tobytes().decode() for w in row) for row in letters]


#: zone kinds in order: growth from the smallest set, walk-clear after a tiny
#: zone, full zeroing after a big one, a big zone repeating an earlier one's
#: tokens (a stale slot would undercount it), and a last partial zone
KINDS = [0, 1, 0, 2, 1, 3, 0, 2, 0]
ROWS = [r for z, k in enumerate(KINDS) for r in _zone_rows(k, z)] + ["tail " + _zone_rows(1, 1)[0][:20]]


def _make(type_name, args=(), kwargs=(), column_type=pa.string()):
    d = IndexDef("i", "c", None, type_name, tuple(args), tuple(kwargs))
    return get_index_type(type_name)(d, column_type)


def _oracle(idx, arr, zs, zl):
    """(filter bytes, ndv) per zone, each zone on its own."""
    tok, p = idx.tokenizer, idx.params
    out = []
    for s, n in zip(zs, zl):
        toks = set(tok.tokenize(arr.slice(int(s), int(n))).to_pylist())
        if p["sizing"] == "fixed":
            nb = p["bytes"]
        elif p.get("size_rule", "parquet") == "exact":
            nb = int(exact_num_bytes([len(toks)], p["fpp"])[0])
        else:
            nb = optimal_num_bytes(max(len(toks), 1), p["fpp"], p.get("size_rule", "parquet")) if toks else 32
        f = SBBF(nb)
        f.insert_hashes(np.array([xxhash.xxh64_intdigest(t, seed=p["seed"]) for t in toks], dtype=np.uint64))
        out.append((f.to_bytes(), len(toks)))
    return out


CASES = [
    ("sbbf", ("token",), ()),
    ("sbbf", ("token",), (("size_rule", "parquet"),)),
    ("sbbf", ("ngram",), (("n", 3),)),
    ("ngrambf_v1", (3, 4096, 2, 0), ()),
    ("bloom_filter", (), ()),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{t}{a}{dict(k) or ''}" for t, a, k in CASES])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "generic"])
@pytest.mark.parametrize("chunk", [None, 40_000], ids=["one-slice", "many-slices"])
def test_zones_of_jumping_distinct_counts_equal_oracle(case, fused, chunk, monkeypatch):
    type_name, args, kwargs = case
    if fused and type_name == "bloom_filter":
        pytest.skip("bloom_filter (value tokenizer) has no fused kernel")
    if chunk is not None:   # several slices per build, on two threads sharing the scratch pool
        monkeypatch.setattr(bloom, "CHUNK_BYTES", chunk)
        monkeypatch.setattr(bloom, "BUILD_THREADS", 2)
    arr = pa.array(ROWS, pa.string())
    zs = np.arange(0, len(arr), ZONE, dtype=np.int64)
    zl = np.minimum(ZONE, len(arr) - zs)
    idx = _make(type_name, args, kwargs)
    g = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=fused).build(arr, zs, zl)
    want = _oracle(idx, arr, zs, zl)
    if idx.params["tokenizer"] != "value":   # one value per row: at most ZONE distinct
        assert max(n for _, n in want) > 16_000, "the data must make the set grow past its first sizes"
    for z, (b, n) in enumerate(want):
        assert g.ndv[z] == n, f"zone {z} (kind {KINDS[z] if z < len(KINDS) else 'tail'}): ndv {g.ndv[z]} != {n}"
        assert g.filter_bytes(z) == b, f"zone {z}: filter differs from the oracle"
    # the fill statistics computed per slice equal those of the whole bank
    fill, est = kb.bank_stats(g.words, g.block_offset, g.num_blocks)
    assert np.array_equal(g.fill_ratio, fill) and np.array_equal(g.fpp_estimate, est)


def _views(arr):
    from skipidx_tokenizers._arrow import buffer_views

    data, offsets, validity, voff = buffer_views(arr)
    return data, offsets.astype(np.int64), validity, voff


@pytest.mark.parametrize("n", [0, 3], ids=["token", "ngram3"])
def test_into_kernels_reuse_scratch_and_hand_back_a_clean_set(n):
    """Two slices through one (table, uniq) scratch give what the allocating kernels give."""
    arr = pa.array(ROWS, pa.string())
    data, offsets, validity, voff = _views(arr)
    zend = np.minimum(np.arange(ZONE, len(arr) + ZONE, ZONE), len(arr)).astype(np.int64)
    table = np.zeros(kb.SET_MIN, dtype=np.uint64)
    uniq = np.empty(int(offsets[-1]) + 1, dtype=np.uint64)
    for lo, hi in [(0, 4), (4, len(zend)), (0, len(zend))]:
        r0 = 0 if lo == 0 else int(zend[lo - 1])
        offs, ze = offsets[r0:int(zend[hi - 1]) + 1], zend[lo:hi] - r0
        if n == 0:
            want_u, want_o = tk.token_distinct(data, offs, validity, voff + r0, ze, np.uint64(7))
            u, o, table = tk.token_distinct_into(data, offs, validity, voff + r0, ze, np.uint64(7), table, uniq)
        else:
            want_u, want_o = tk.ngram_distinct(data, offs, validity, voff + r0, n, ze, np.uint64(7))
            u, o, table = tk.ngram_distinct_into(data, offs, validity, voff + r0, n, ze, np.uint64(7), table, uniq)
        assert np.array_equal(o, want_o), f"zones {lo}..{hi}: offsets differ"
        assert np.array_equal(uniq[:u], want_u), f"zones {lo}..{hi}: distinct hashes differ"
        assert not table.any(), f"zones {lo}..{hi}: the set was not handed back empty"
    assert table.shape[0] > kb.SET_MIN, "the set should have grown"


def test_dedup_by_zone_into_counts_hash_zero_and_matches_sets():
    """The generic dedup kernel: hash 0 (the set's empty marker) is counted once per zone."""
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2**63, size=30_000, dtype=np.uint64) % np.uint64(9000)   # many repeats, zeros
    rows = np.sort(rng.integers(0, 300, size=hashes.shape[0])).astype(np.int64)
    zend = np.array([10, 11, 150, 151, 300], dtype=np.int64)
    table = np.zeros(kb.SET_MIN, dtype=np.uint64)
    uniq = np.empty(hashes.shape[0] + 1, dtype=np.uint64)
    for _ in range(2):   # the second pass reuses the grown, cleaned set
        u, offs, table = kb.dedup_by_zone_into(zend, rows, hashes, table, uniq)
        lo = 0
        for z, e in enumerate(zend):
            want = set(hashes[(rows >= lo) & (rows < e)].tolist())
            got = uniq[offs[z]:offs[z + 1]].tolist()
            assert len(got) == len(set(got)) == len(want) and set(got) == want, f"zone {z}"
            lo = e
        assert not table.any(), "the set was not handed back empty"


PACKED_CASES = CASES[:2] + [("tokenbf_v1", (256, 3, 0), ())]


@pytest.mark.parametrize("case", PACKED_CASES, ids=[f"{t}{a}{dict(k) or ''}" for t, a, k in PACKED_CASES])
def test_rows_packed_with_the_most_tokens_a_row_can_hold(case):
    """One-byte tokens between one-byte separators: (L + 1) // 2 tokens in a row of L bytes -- the
    longest row fills the token kernels' per-row hash buffer exactly."""
    alnum = _ALNUM.tobytes().decode()
    rows = [",".join(alnum[(r * 7 + k) % len(alnum)] for k in range(200 + r)) for r in range(40)]
    rows += ["", "x", ",", "ab,", ",ab", ",".join(alnum) * 3]
    arr = pa.array(rows, pa.string())
    zs = np.arange(0, len(arr), 9, dtype=np.int64)
    zl = np.minimum(9, len(arr) - zs)
    idx = _make(*case)
    for fused in (True, False):
        g = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=fused).build(arr, zs, zl)
        for z, (b, n) in enumerate(_oracle(idx, arr, zs, zl)):
            assert g.filter_bytes(z) == b, f"fused={fused} zone {z}: filter differs from the oracle"
            assert g.ndv is None or g.ndv[z] == n, f"fused={fused} zone {z}: ndv {g.ndv[z]} != {n}"


@pytest.mark.parametrize("fpp", [0.01, 0.2, 1e-4], ids=lambda f: f"fpp{f:g}")
def test_exact_num_blocks_memo_equals_exact_num_bytes(fpp, monkeypatch):
    """The remembered block counts are exact_num_bytes's, on first and later asks, from several threads."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(sizing, "_exact_memo", {})
    rng = np.random.default_rng(11)
    asks = [rng.integers(0, 40_000, size=300) for _ in range(6)]
    asks += [np.array([0, 1, 2, 2, 3]), np.zeros(0, np.int64), np.array([sizing._MEMO_NDV - 1, sizing._MEMO_NDV, 3_000_000]),
             rng.integers(0, 80_000, size=(4, 5))]
    for _ in range(2):   # the second round answers from the memo
        with ThreadPoolExecutor(4) as ex:
            got = list(ex.map(lambda a: sizing.exact_num_blocks(a, fpp), asks))
        for a, g in zip(asks, got):
            want = exact_num_bytes(a, fpp) // 32
            assert g.shape == np.shape(a) and np.array_equal(g, want), f"ndv {np.ravel(a)[:5]}..."
    assert sizing.num_bytes(asks[0], fpp, "exact").tolist() == (exact_num_bytes(asks[0], fpp)).tolist()
