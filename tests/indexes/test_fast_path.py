"""The tokenizer's fast path (Tokenizer.insert_zones / distinct_zones) is a hook: the built-ins
fill filters through it, a tokenizer without it is built through hash_column, and both give the
same filters; the build's thread count is a parameter."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import skipidx.store  # noqa: F401  (registers the caches of the store)
from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.indexes.bloom import SBBFAggregator
from skipidx_tokenizers.ngram import NgramTokenizer
from skipidx_tokenizers.token import TokenTokenizer

ROWS = [None if i % 11 == 0 else f"user-{i % 97} GET /api/v{i % 5}/items/{i} é{i % 7} timeout" for i in range(3000)]
CASES = [("tokenbf_v1", (512, 3, 0), ()), ("ngrambf_v1", (3, 1024, 2, 0), ()),
         ("sbbf", ("token",), ()), ("sbbf", ("ngram",), (("n", 4),)),
         ("sbbf", ("ngram",), (("n", 4), ("min_n", 3))), ("sbbf", ("ngram",), (("n", 3), ("min_n", 1)))]


class _NoHookNgram(NgramTokenizer):
    """The built-in's tokens without its fast path (as a third-party plugin would be)."""

    def insert_zones(self, *args):
        return False

    def distinct_zones(self, *args):
        return None


class _NoHookToken(TokenTokenizer):
    def insert_zones(self, *args):
        return False

    def distinct_zones(self, *args):
        return None


def _index(type_name, args, kwargs):
    return get_index_type(type_name)(IndexDef("i", "c", None, type_name, tuple(args), tuple(kwargs)), pa.string())


@pytest.mark.parametrize("case", CASES, ids=[f"{t}{a}" for t, a, _ in CASES])
def test_a_tokenizer_without_the_hook_builds_the_same_filters(case):
    idx = _index(*case)
    arr = pa.array(ROWS, pa.string())
    zs = np.arange(0, len(arr), 256, dtype=np.int64)
    zl = np.minimum(256, len(arr) - zs)
    plain = (_NoHookNgram(**idx.tokenizer.params) if idx.tokenizer.name == "ngram" else _NoHookToken())
    fast = SBBFAggregator(idx.name, idx.params, idx.tokenizer, fused=True).build(arr, zs, zl)
    slow = SBBFAggregator(idx.name, idx.params, plain).build(arr, zs, zl)
    assert np.array_equal(fast.words, slow.words) and np.array_equal(fast.num_blocks, slow.num_blocks)
    assert (fast.ndv is None) == (slow.ndv is None) and (fast.ndv is None or np.array_equal(fast.ndv, slow.ndv))
    with pytest.raises(ValueError, match="no fast path"):
        SBBFAggregator(idx.name, idx.params, plain, fused=True).build(arr, zs, zl)


def test_the_builtins_take_their_hook(monkeypatch):
    calls = []
    real = NgramTokenizer.distinct_zones

    def spy(self, *args):
        calls.append(len(args[1]))
        return real(self, *args)

    monkeypatch.setattr(NgramTokenizer, "distinct_zones", spy)
    idx = _index("sbbf", ("ngram",), (("n", 3),))
    arr = pa.array(ROWS, pa.string())
    zs = np.arange(0, len(arr), 512, dtype=np.int64)
    idx.aggregator().build(arr, zs, np.minimum(512, len(arr) - zs))
    assert sum(calls) == zs.shape[0], "every zone went through the tokenizer's hook"


def test_build_threads_are_a_parameter():
    idx = _index("sbbf", ("token",), ())
    arr = pa.array(ROWS * 4, pa.string())
    zs = np.arange(0, len(arr), 64, dtype=np.int64)
    zl = np.minimum(64, len(arr) - zs)
    one = idx.aggregator(threads=1)
    three = idx.aggregator(threads=3)
    assert (one.threads, three.threads) == (1, 3)
    import skipidx.indexes.bloom as bloom

    old = bloom.CHUNK_BYTES
    bloom.CHUNK_BYTES = 4096    # many slices, so three threads really split the work
    try:
        a, b = one.build(arr, zs, zl), three.build(arr, zs, zl)
    finally:
        bloom.CHUNK_BYTES = old
    assert np.array_equal(a.words, b.words) and np.array_equal(a.ndv, b.ndv)


def test_write_part_passes_build_threads_down(tmp_path, monkeypatch):
    from _store_helpers import make_meta
    from skipidx.store import writer

    seen = []
    real = SBBFAggregator.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        seen.append(self.threads)

    monkeypatch.setattr(SBBFAggregator, "__init__", spy)
    meta = make_meta("t", [("k", "Int32"), ("s", "String")], ["k"], 64,
                     [IndexDef("tok", "s", None, "sbbf", ("token",), ())])
    data = pa.table({"k": pa.array(range(500), pa.int32()), "s": pa.array([r or "" for r in ROWS[:500]])})
    (tmp_path / "p").mkdir()
    from skipidx.store.conform import conform

    writer.write_part(str(tmp_path / "p"), meta, conform(meta, data), "p_1", build_threads=2)
    assert seen and set(seen) == {2}


@pytest.mark.parametrize("min_n, n", [(3, 4), (1, 3), (2, 5)])
def test_min_n_fixed_filters_equal_generic(min_n, n):
    """The fixed-size hook with min_n fills exactly the bits the generic (hash_column) path does."""
    from skipidx.core._kernels import build as kb
    from skipidx.core._kernels.sbbf import SALT

    rows = ROWS[:500] + ["é東😀ab", "\xff\xfe", "a", "", "ab"]
    arr = pa.array([r.encode("utf-8", "surrogateescape") if r is not None else None for r in rows], pa.binary())
    zs = np.arange(0, len(arr), 64, dtype=np.int64)
    zl = np.minimum(64, len(arr) - zs)
    nblk = np.full(zs.shape[0], 8, dtype=np.int64)
    boff = np.arange(zs.shape[0], dtype=np.int64) * 8
    tok = NgramTokenizer(n=n, min_n=min_n)
    fast = np.zeros(int(nblk.sum()) * 8, dtype=np.uint32)
    assert tok.insert_zones(arr, zs + zl, 5, fast, boff, nblk)
    r, h = tok.hash_column(arr, 5)
    slow = np.zeros_like(fast)
    kb.insert_by_row(slow, boff, nblk, zs + zl, np.ascontiguousarray(r, np.int64),
                     np.ascontiguousarray(h, np.uint64), SALT)
    assert np.array_equal(fast, slow) and fast.any()
