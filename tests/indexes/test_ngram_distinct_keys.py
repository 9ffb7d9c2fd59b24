"""The n-gram distinct kernel dedupes short grams on their bytes before hashing (and rolls
the keys along ASCII rows): its per-zone distinct hashes must be exactly those of hashing
every gram (``hash_column``) and deduping the hashes (``dedup_by_zone``), in the same order."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from skipidx.core._kernels import build as kb
from skipidx_tokenizers.ngram import NgramTokenizer

# a small alphabet (grams repeat, as in logs) of ASCII, 2/3/4-byte code points, and bytes
# that are not UTF-8 (a lone continuation byte, a lead byte cut off)
_PIECES = ["a", "b", " ", "/", "0", "é", "東", "😀", b"\x80", b"\xe6\x9d", b"\x00"]


def _value(parts) -> bytes:
    return b"".join(p if isinstance(p, bytes) else p.encode() for p in parts)


def _generic(tok: NgramTokenizer, arr: pa.Array, zone_end: np.ndarray, seed: int):
    rows, hashes = tok.hash_column(arr, seed)
    return kb.dedup_by_zone(zone_end, np.ascontiguousarray(rows, np.int64), np.ascontiguousarray(hashes, np.uint64))


def _fast(tok: NgramTokenizer, arr: pa.Array, zone_end: np.ndarray, seed: int):
    sc = kb.DistinctScratch()
    offs = tok.distinct_zones(arr, zone_end, seed, sc)
    assert offs is not None
    assert not sc.table.any()   # the hash set comes back cleared for the next slice
    return sc.uniq[:offs[-1]].copy(), offs


def _check(tok, arr, zone_end, seed=7):
    u1, o1 = _fast(tok, arr, zone_end, seed)
    u2, o2 = _generic(tok, arr, zone_end, seed)
    assert np.array_equal(o1, o2)
    assert np.array_equal(u1, u2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.none(), st.lists(st.sampled_from(_PIECES), max_size=40)), min_size=1,
                       max_size=60),
       lengths=st.sampled_from([(1, 1), (2, 2), (3, 3), (4, 4), (7, 7), (8, 8), (2, 4), (1, 3), (3, 8)]),
       zone=st.integers(1, 9), cut=st.integers(0, 3), kind=st.sampled_from(["binary", "large_binary"]))
def test_distinct_grams_equal_hashing_every_gram(values, lengths, zone, cut, kind):
    min_n, n = lengths
    arr = pa.array([None if v is None else _value(v) for v in values], getattr(pa, kind)())
    arr = arr.slice(min(cut, len(arr) - 1))   # a non-zero array offset
    tok = NgramTokenizer(n=n) if min_n == n else NgramTokenizer(n=n, min_n=min_n)
    zone_end = np.minimum(np.arange(zone, len(arr) + zone, zone, dtype=np.int64), len(arr))
    _check(tok, arr, zone_end)


@pytest.mark.parametrize("n", [3, 4])
def test_sets_grow_inside_a_zone(n):
    """A zone whose distinct grams outgrow the initial sets (both grow between rows), ASCII
    and non-ASCII rows, then zones that reuse the cleared sets."""
    rng = np.random.default_rng(3)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789 /:-_", dtype=np.uint8)
    rows = []
    for i in range(600):
        s = bytes(rng.choice(letters, size=int(rng.integers(0, 300))))
        rows.append(s + ("é東".encode() if i % 5 == 0 else b""))
    arr = pa.array(rows, pa.binary())
    zone_end = np.array([500, 520, 600], dtype=np.int64)
    _check(NgramTokenizer(n=n), arr, zone_end)
    _check(NgramTokenizer(n=n, min_n=2), arr, zone_end)

