"""skipidx.core.sizing: every rule vectorized, checked against scalar re-derivations of its definition."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skipidx.core import sizing
from skipidx.core.errors import SkipidxError


def _java(ndv: int, fpp: float) -> int:
    """parquet-java: BlockSplitBloomFilter.optimalNumOfBits, then the constructor's byte count."""
    m = -8 * ndv / math.log(1 - fpp ** (1 / 8))
    bits = int(m) if m < 2**31 else 2**31 - 1
    if bits > sizing.MAX_BYTES * 8 or m < 0:
        bits = sizing.MAX_BYTES * 8
    bits = max((bits + 255) & ~256, 256)
    nbytes = max(bits // 8, 32)
    if nbytes & (nbytes - 1):
        nbytes = 1 << nbytes.bit_length()
    return min(nbytes, sizing.MAX_BYTES)


def _arrow(ndv: int, fpp: float) -> int:
    """Arrow C++ OptimalNumOfBits / 8, in integers."""
    m = -8 * ndv / math.log(1 - fpp ** (1 / 8))
    bits = sizing.MAX_BYTES * 8 if (m < 0 or m > sizing.MAX_BYTES * 8) else int(m)
    bits = max(bits, 256)
    return min(1 << (bits - 1).bit_length(), sizing.MAX_BYTES * 8) // 8


NDV = np.unique(np.concatenate([np.arange(1, 2000), np.random.default_rng(3).integers(1, 5 * 10**7, 2000),
                                [2**k + d for k in range(8, 26) for d in (-1, 0, 1)]]))


@pytest.mark.parametrize("fpp", [0.3, 0.1, 0.025, 0.01, 0.001])
def test_power_of_two_rules_equal_their_scalar_definitions(fpp):
    got_p, got_j = sizing.num_bytes(NDV, fpp, "parquet"), sizing.num_bytes(NDV, fpp, "parquet-java")
    for i, n in enumerate(NDV.tolist()):
        assert got_p[i] == _arrow(n, fpp), (n, fpp)
        assert got_j[i] == _java(n, fpp), (n, fpp)


@pytest.mark.parametrize("fpp", [0.2, 0.01, 1e-4])
def test_exact_and_lance_meet_the_estimate_minimally(fpp):
    nd = NDV[::37]
    exact, lance = sizing.num_bytes(nd, fpp, "exact"), sizing.num_bytes(nd, fpp, "lance")
    for n, x, lb in zip(nd.tolist(), exact.tolist(), lance.tolist()):
        if x < sizing.MAX_BYTES:
            assert sizing.fpp_estimate(x, n) <= fpp and (x == 32 or sizing.fpp_estimate(x - 32, n) > fpp), n
        assert lb & (lb - 1) == 0 and lb >= x, n
        if lb < sizing.MAX_BYTES:
            assert sizing.fpp_estimate(lb, n) <= fpp and (lb == 32 or sizing.fpp_estimate(lb // 2, n) > fpp), n


def test_one_vocabulary_and_the_public_names():
    import skipidx.sbbf as public

    assert sizing.RULES == ("parquet", "parquet-java", "lance", "exact")
    assert set(sizing.INDEX_RULES) <= set(sizing.RULES)
    assert public.MIN_BYTES == sizing.MIN_BYTES and public.MAX_BYTES == sizing.MAX_BYTES
    assert public.SBBF.for_ndv(10_000, 0.01, sizing="exact").num_bytes == int(sizing.num_bytes([10_000], 0.01, "exact")[0])
    assert sizing.num_bytes([0], 0.01, "parquet").tolist() == [32] and sizing.num_bytes([0], 0.01, "exact").tolist() == [32]
    with pytest.raises(Exception, match="unknown SBBF sizing"):
        sizing.num_bytes([1], 0.01, "guava")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 3000), st.integers(0, 10**9), st.sampled_from([0, 1, 8192, 2**40])),
                min_size=1, max_size=40),
       st.sampled_from([0.3, 0.05, 0.01, 0.005, 1e-4]), st.data())
def test_exact_sizes_hold_is_equality_with_the_rule(ndv, fpp, data):
    """The stored-size check answers exactly np.array_equal(num_bytes(ndv, fpp, "exact"), sizes):
    true for the rule's sizes, false for any one of them a block off (or another ndv's size)."""
    nd = np.array(ndv, dtype=np.int64)
    want = sizing.num_bytes(nd, fpp, "exact")
    assert sizing.exact_sizes_hold(nd, fpp, want)
    assert sizing.exact_sizes_hold(nd.astype(np.uint64), fpp, want.astype(np.int32))
    i = data.draw(st.integers(0, len(nd) - 1))
    for delta in (-32, 32, -64, 4096):
        bad = want.copy()
        bad[i] += delta
        assert sizing.exact_sizes_hold(nd, fpp, bad) == np.array_equal(sizing.num_bytes(nd, fpp, "exact"), bad)
        assert not sizing.exact_sizes_hold(nd, fpp, bad)
    bad = want.copy()
    bad[i] = 33
    assert not sizing.exact_sizes_hold(nd, fpp, bad)
    assert not sizing.exact_sizes_hold(nd, fpp, want[:-1])


def test_exact_sizes_hold_at_the_cap_and_for_repeated_ndv():
    nd = np.array([2**40, 5, 5, 0], dtype=np.int64)
    want = sizing.num_bytes(nd, 1e-4, "exact")
    assert want[0] == sizing.MAX_BYTES and want[3] == 32
    assert sizing.exact_sizes_hold(nd, 1e-4, want)
    lower = want.copy()
    lower[0] -= 32
    assert not sizing.exact_sizes_hold(nd, 1e-4, lower)
    split = want.copy()
    split[2] += 32
    assert not sizing.exact_sizes_hold(nd, 1e-4, split)
    assert sizing.exact_sizes_hold(np.zeros(0, np.int64), 0.01, np.zeros(0, np.int64))
    with pytest.raises(SkipidxError):
        sizing.exact_sizes_hold(np.array([-1.5]), 0.01, np.array([32]))
