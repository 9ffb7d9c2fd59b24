"""How many bytes an SBBF gets: every sizing rule, in one place.

A rule maps (distinct values ``ndv``, target false-positive rate ``fpp``) to
a filter size in bytes, a whole number of 32-byte blocks in
[:data:`MIN_BYTES`, :data:`MAX_BYTES`]. The rules (:data:`RULES`):

``"parquet"``
    Arrow C++ ``BlockSplitBloomFilter::OptimalNumOfBits`` (arrow-rs too):
    ``m = -8 ndv / ln(1 - fpp^(1/8))`` bits, truncated, raised to 256 bits,
    rounded up to a power of two, clamped to 128 MiB. ``SBBF.for_ndv``'s
    default and ``bloom_filter``'s rule (its filters must equal pyarrow's).
    Writers since Arrow 26 then fold the filter (``SBBF.fold_to_target_fpp``).
``"parquet-java"``
    parquet-java (Spark): ``optimalNumOfBits`` rounds with
    ``(bits + 255) & ~256`` and its constructor rounds the byte count up to
    a power of two; differs from ``"parquet"`` only when ``m`` lies within
    256 bits of a power of two (then either may be larger).
``"lance"``
    The smallest power of two whose expected FPP (:func:`fpp_estimate`)
    meets ``fpp``.
``"exact"``
    The fewest 32-byte blocks whose expected FPP meets ``fpp``: any block
    count is a valid SBBF (block choice ``((h >> 32) * z) >> 32``), so there
    is no power-of-two step. ``sbbf(...)``'s default ``size_rule``.

:func:`fpp_estimate` is Putze et al. with Poisson block loads, what a check
of an absent hash meets; the power-of-two formulas assume uniform loads, so
near a power of two they miss the target slightly (100_000 at 0.01 below).
An index's parameters keep two keys apart: ``sizing`` is ``"fixed"``
(``tokenbf_v1``/``ngrambf_v1``: the DDL's bytes) or ``"ndv"`` (sized per
granule from its distinct count), and ``size_rule`` names the rule.

Bytes chosen, and the FPP each filter is then expected to give
(:func:`sizing_table` recomputes this table; the tests compare)::

    |       NDV | target FPP | parquet bytes | expected FPP | lance bytes | expected FPP |
    |-----------|------------|---------------|--------------|-------------|--------------|
    |     1_000 |        0.1 |         1_024 |     0.030103 |       1_024 |     0.030103 |
    |     1_000 |       0.01 |         2_048 |     0.001167 |       2_048 |     0.001167 |
    |     1_000 |      0.001 |         2_048 |     0.001167 |       4_096 |     0.000032 |
    |    10_000 |        0.1 |         8_192 |     0.072424 |       8_192 |     0.072424 |
    |    10_000 |       0.01 |        16_384 |     0.003541 |      16_384 |     0.003541 |
    |    10_000 |      0.001 |        32_768 |     0.000103 |      32_768 |     0.000103 |
    |   100_000 |        0.1 |       131_072 |     0.010192 |     131_072 |     0.010192 |
    |   100_000 |       0.01 |       131_072 |     0.010192 |     262_144 |     0.000328 |
    |   100_000 |      0.001 |       262_144 |     0.000328 |     262_144 |     0.000328 |
    | 1_000_000 |        0.1 |     1_048_576 |     0.027256 |   1_048_576 |     0.027256 |
    | 1_000_000 |       0.01 |     2_097_152 |     0.001035 |   2_097_152 |     0.001035 |
    | 1_000_000 |      0.001 |     2_097_152 |     0.001035 |   4_194_304 |     0.000028 |

    |       NDV | target FPP | parquet-java bytes | exact bytes | expected FPP |
    |-----------|------------|--------------------|-------------|--------------|
    |     1_000 |        0.1 |              1_024 |         768 |     0.091422 |
    |     1_000 |       0.01 |              2_048 |       1_344 |     0.009080 |
    |     1_000 |      0.001 |              2_048 |       2_112 |     0.000998 |
    |    10_000 |        0.1 |              8_192 |       7_488 |     0.099892 |
    |    10_000 |       0.01 |             16_384 |      13_184 |     0.009922 |
    |    10_000 |      0.001 |             32_768 |      21_120 |     0.000998 |
    |   100_000 |        0.1 |            131_072 |      74_880 |     0.099892 |
    |   100_000 |       0.01 |            131_072 |     131_616 |     0.010000 |
    |   100_000 |      0.001 |            262_144 |     211_136 |     0.001000 |
    | 1_000_000 |        0.1 |          1_048_576 |     748_576 |     0.099996 |
    | 1_000_000 |       0.01 |          2_097_152 |   1_316_160 |     0.010000 |
    | 1_000_000 |      0.001 |          2_097_152 |   2_111_232 |     0.001000 |

Bits per distinct value and FPP (the Parquet spec's table, reproduced by the
tests): 6.0 bits ~ 10 %, 10.5 bits ~ 1 %, 16.9 bits ~ 0.1 %.

Group summaries (:func:`summary_num_bytes`): the SBBF indexes of large parts
also keep one filter per group of :data:`SUMMARY_GROUP` index granules, holding
the group's distinct hashes, sized by the ``"exact"`` rule for
:func:`summary_fpp` (:data:`SUMMARY_FPP`, or the index's own fpp when looser).
A lookup probes the summaries, then only the granules of the groups that pass.
What a group's filter costs, for distinct values that each live in one granule
(ids) or are shared by many granules of the group (tokens of logs)
(:func:`summary_table` recomputes this table; the tests compare)::

    | distinct/granule | shared by | index fpp | summary fpp | group bytes | per granule | expected FPP |
    |------------------|-----------|-----------|-------------|-------------|-------------|--------------|
    |            8_192 |         1 |     2e-05 |        0.01 |     690_048 |      10_782 |     0.010000 |
    |            8_192 |         1 |     0.025 |       0.025 |     561_120 |       8_767 |     0.024995 |
    |            8_192 |         1 |      None |        0.01 |     690_048 |      10_782 |     0.010000 |
    |            2_048 |        32 |      None |        0.01 |       5_408 |          84 |     0.009856 |
    |              300 |       200 |      0.01 |        0.01 |         416 |           6 |     0.007853 |

Ids cost about as many summary bytes as the granules' own filters, so parts
expected to hold fewer than :data:`SUMMARY_MIN_GRANULES` index granules get no
summaries; shared tokens cost a few percent.
"""
from __future__ import annotations

import math
import threading
from typing import Sequence

import numpy as np

from skipidx.core.errors import SkipidxError
from skipidx.core.lazy import kernels, numba_loaded

_k = kernels("skipidx.core._kernels.sbbf")

__all__ = [
    "BYTES_PER_BLOCK", "MIN_BYTES", "MAX_BYTES", "RULES", "INDEX_RULES",
    "check_num_bytes", "check_ndv_fpp", "check_fpp", "fpp_estimate", "optimal_num_bytes", "num_bytes", "exact_num_bytes",
    "exact_num_blocks", "sizing_table",
]

BYTES_PER_BLOCK = 32
#: Smallest filter: one block.
MIN_BYTES = 32
#: Largest filter: 128 MiB, the bound Arrow C++ and parquet-java use.
MAX_BYTES = 128 * 1024 * 1024

#: Every rule (see the module docstring).
RULES = ("parquet", "parquet-java", "lance", "exact")
#: The rules an ``sbbf`` index's ``size_rule`` takes (parquet-java matters only for reading Spark's files).
INDEX_RULES = ("exact", "parquet", "lance")


def check_num_bytes(num_bytes: object, what: str = "num_bytes") -> int:
    """`num_bytes` as an int if it is a valid filter size, else SkipidxError naming `what`."""
    if isinstance(num_bytes, (bool, np.bool_)) or not isinstance(num_bytes, (int, np.integer)):
        raise SkipidxError(f"SBBF {what} must be an integer, got {type(num_bytes).__name__}")
    n = int(num_bytes)
    if n < MIN_BYTES:
        raise SkipidxError(f"SBBF {what} must be at least {MIN_BYTES} (one block), got {n}")
    if n > MAX_BYTES:
        raise SkipidxError(f"SBBF {what} must be at most {MAX_BYTES} (128 MiB), got {n}")
    if n % BYTES_PER_BLOCK:
        raise SkipidxError(f"SBBF {what} must be a multiple of {BYTES_PER_BLOCK} (whole blocks), got {n}")
    return n


def check_ndv_fpp(ndv: object, fpp: object) -> tuple[int, float]:
    """(ndv, fpp) as (int > 0, float in (0, 1)), else SkipidxError."""
    if isinstance(ndv, (bool, np.bool_)) or not isinstance(ndv, (int, np.integer)):
        raise SkipidxError(f"ndv must be a positive integer, got {ndv!r}")
    if int(ndv) <= 0:
        raise SkipidxError(f"ndv must be a positive integer, got {int(ndv)}")
    return int(ndv), check_fpp(fpp)


def check_fpp(fpp: object) -> float:
    """`fpp` as a float strictly between 0 and 1, else SkipidxError."""
    if isinstance(fpp, (bool, np.bool_)) or not isinstance(fpp, (int, float, np.integer, np.floating)):
        raise SkipidxError(f"fpp must be a number in (0, 1), got {fpp!r}")
    p = float(fpp)
    if not (0.0 < p < 1.0):
        raise SkipidxError(f"fpp must lie strictly between 0 and 1, got {p}")
    return p


def fpp_estimate(num_bytes: int, ndv: int | float) -> float:
    """Expected false-positive rate of a `num_bytes` filter holding `ndv` distinct hashes.

    Putze et al. with Poisson-distributed block loads: with
    ``lam = ndv / blocks``, ``sum_k Poisson(k; lam) * (1 - (31/32)**k) ** 8``.
    """
    n = check_num_bytes(num_bytes)
    if not isinstance(ndv, (int, float, np.integer, np.floating)) or isinstance(ndv, (bool, np.bool_)):
        raise SkipidxError(f"ndv must be a number >= 0, got {ndv!r}")
    if not (float(ndv) >= 0.0) or math.isinf(float(ndv)):
        raise SkipidxError(f"ndv must be a finite number >= 0, got {ndv!r}")
    blocks = np.array([n // BYTES_PER_BLOCK], dtype=np.float64)
    return float(_k.fpp_poisson(blocks, np.array([float(ndv)], dtype=np.float64))[0])


# ------------------------------------------------------------ the rules

def _next_pow2(x: np.ndarray) -> np.ndarray:
    """The smallest power of two >= x (int64 x >= 1), exactly: frexp gives the bit length."""
    x = np.asarray(x, dtype=np.int64)
    return np.left_shift(np.int64(1), np.frexp((x - 1).astype(np.float64))[1].astype(np.int64))


def _parquet_bits(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """Arrow's / parquet-java's m = -8 ndv / ln(1 - fpp^(1/8)), as float64."""
    return -8.0 * np.asarray(ndv, dtype=np.float64) / math.log(1.0 - fpp ** (1.0 / 8.0))


def _parquet(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """Arrow C++ OptimalNumOfBits / 8: truncate, clamp, next power of two, clamp."""
    m = _parquet_bits(ndv, fpp)
    bits = np.where((m < 0) | (m > MAX_BYTES * 8), MAX_BYTES * 8, np.floor(m)).astype(np.int64)
    bits = np.maximum(bits, MIN_BYTES * 8)
    return np.minimum(_next_pow2(bits), MAX_BYTES * 8) // 8


def _parquet_java(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """BlockSplitBloomFilter.optimalNumOfBits (int arithmetic, including its
    ``& ~BITS_PER_BLOCK`` mask, which clears bit 8 rather than the low bits),
    then the constructor's power-of-two byte count."""
    m = _parquet_bits(ndv, fpp)
    bits = np.where(m < 2.0**31, np.floor(np.maximum(m, 0)), 2**31 - 1).astype(np.int64)  # Java's (int) saturates
    bits = np.where((bits > MAX_BYTES * 8) | (m < 0), MAX_BYTES * 8, bits)
    bits = np.maximum((bits + 255) & ~256, MIN_BYTES * 8)
    nbytes = np.maximum(bits // 8, MIN_BYTES)
    return np.minimum(_next_pow2(nbytes), MAX_BYTES)   # Integer.highestOneBit(n) << 1 unless a power of two


def exact_num_bytes(ndv: np.ndarray | Sequence[int], fpp: float, max_bytes: int = MAX_BYTES) -> np.ndarray:
    """The ``"exact"`` rule, vectorized: the fewest whole 32-byte blocks whose
    :func:`fpp_estimate` at ``ndv[i]`` is <= `fpp`, in bytes.

    ``ndv == 0`` gives one block; results are capped at `max_bytes` (rounded
    down to whole blocks). Each distinct ndv is solved once: a bracket around
    the uniform approximation's block count, then bisection on all of them at
    once (the estimate grows with ndv / blocks, so the smallest passing count
    is well defined). int64 array of the shape of `ndv`.
    """
    nd = np.asarray(ndv)
    if nd.size and not (np.issubdtype(nd.dtype, np.integer) or np.issubdtype(nd.dtype, np.floating)):
        raise SkipidxError(f"ndv must be a numeric array, got {nd.dtype}")
    ndf = nd.astype(np.float64)
    if nd.size and ((~np.isfinite(ndf)).any() or (ndf < 0).any()):
        raise SkipidxError("ndv must be finite and >= 0")
    if isinstance(fpp, bool) or not isinstance(fpp, (int, float, np.integer, np.floating)) or not 0.0 < float(fpp) < 1.0:
        raise SkipidxError(f"fpp must be a number in (0, 1), got {fpp!r}")
    fpp = float(fpp)
    max_blocks = check_num_bytes(max_bytes, "max_bytes") // BYTES_PER_BLOCK
    uniq, inv = np.unique(ndf.reshape(-1), return_inverse=True)
    out = np.ones(uniq.shape[0], dtype=np.int64)
    todo = np.flatnonzero(uniq > 0)
    if todo.size:
        d = uniq[todo]

        def passes(blocks: np.ndarray, sel: np.ndarray) -> np.ndarray:
            return _fpp_passes(blocks.astype(np.float64), d[sel], fpp)

        # start at the uniform approximation's count: the bracket then costs a
        # few estimates of O(lam) terms each, never one at lam = ndv (one block)
        lam_u = math.log(1.0 - fpp ** 0.125) / math.log(31.0 / 32.0)
        hi = np.clip(np.ceil(d / lam_u), 1, max_blocks).astype(np.int64)
        ok = passes(hi, np.arange(d.shape[0]))
        while True:   # double hi until it passes (or is the cap)
            grow = np.flatnonzero(~ok & (hi < max_blocks))
            if not grow.size:
                break
            hi[grow] = np.minimum(hi[grow] * 2, max_blocks)
            ok[grow] = passes(hi[grow], grow)
        lo = hi // 2  # invariant once bracketed: lo fails (or is 0), hi passes
        open_lo = ok & (lo >= 1)
        while True:   # halve lo while it still passes
            shrink = np.flatnonzero(open_lo)
            if not shrink.size:
                break
            p = passes(lo[shrink], shrink)
            open_lo[shrink[~p]] = False
            shrink = shrink[p]
            hi[shrink] = lo[shrink]
            lo[shrink] //= 2
            open_lo[shrink] = lo[shrink] >= 1
        while True:   # bisection on the open gaps
            gap = np.flatnonzero(ok & (hi - lo > 1))
            if not gap.size:
                break
            mid = (lo[gap] + hi[gap]) // 2
            p = passes(mid, gap)
            hi[gap[p]] = mid[p]
            lo[gap[~p]] = mid[~p]
        out[todo] = hi   # a count that never passes stays at the cap
    return (out[inv] * BYTES_PER_BLOCK).reshape(nd.shape)


#: Most Poisson terms (all filters together) and largest term index the numpy estimate takes on.
_NP_TERMS = 1 << 21
_NP_K = 1 << 16
_lgamma_table = np.zeros(0, dtype=np.float64)
_EPS = float(np.finfo(np.float64).eps)


def _lgamma_upto(k: int) -> np.ndarray:
    """lgamma(j + 1) for j = 0 .. k - 1 (a table grown once per process; k <= _NP_K)."""
    global _lgamma_table
    t = _lgamma_table
    if t.shape[0] < k:
        n = max(k, 2 * t.shape[0], 256)
        t = np.concatenate([t, np.array([math.lgamma(j + 1.0) for j in range(t.shape[0], n)])])
        _lgamma_table = t
    return t


def _fpp_poisson_np(num_blocks: np.ndarray, ndv: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``_k.fpp_poisson`` in numpy: (estimates, a bound on |estimate - the kernel's|), or None when
    the sums are too long for it. The same terms over the same k; numpy's exp, lgamma and
    summation order differ from the kernel's by a few ulps per term, which the bound covers
    (relative: the rounding of the exponent's parts, the cancellation in 1 - (31/32)^k, and
    the sum's length, each with a margin)."""
    lam = ndv / num_blocks
    pos = lam > 0.0
    sd = np.sqrt(np.where(pos, lam, 0.0))
    lo = np.maximum(0, np.trunc(lam - 12.0 * sd - 12.0)).astype(np.int64)
    hi = np.trunc(lam + 12.0 * sd + 40.0).astype(np.int64)
    cnt = np.where(pos, hi - lo + 1, 0)
    total = int(cnt.sum())
    if total > _NP_TERMS or (total and int(hi[pos].max()) >= _NP_K):
        return None
    est = np.zeros(lam.shape[0], dtype=np.float64)
    tol = np.zeros(lam.shape[0], dtype=np.float64)
    if total == 0:
        return est, tol
    lg = _lgamma_upto(int(hi[pos].max()) + 1)
    idx = np.repeat(np.arange(lam.shape[0]), cnt)
    first = np.cumsum(cnt) - cnt
    k = lo[idx] + (np.arange(total) - first[idx])
    kf = k.astype(np.float64)
    log_lam = np.log(np.where(pos, lam, 1.0))
    p = np.exp(kf * log_lam[idx] - lam[idx] - lg[k])
    b = 1.0 - np.exp(kf * math.log(31.0 / 32.0))
    b2 = b * b
    b4 = b2 * b2
    sums = np.add.reduceat(p * (b4 * b4), first[pos])
    est[pos] = np.minimum(sums, 1.0)
    mag = hi[pos] * np.abs(log_lam[pos]) + lam[pos] + lg[hi[pos]] + 1.0
    tol[pos] = sums * _EPS * 4.0 * (8.0 * mag + 1024.0 + 2.0 * cnt[pos])
    return est, tol


def _fpp_passes(num_blocks: np.ndarray, ndv: np.ndarray, fpp: float) -> np.ndarray:
    """``_k.fpp_poisson(num_blocks, ndv) <= fpp``, exactly the kernel's answer.

    Once numba is loaded the kernel answers. Before that (a new process
    opening an ``sbbf`` index checks its filter sizes) numpy estimates and
    the kernel is asked only where the estimate lies within its error bound
    of `fpp`: a process answering a query need not import numba.
    """
    got = None if numba_loaded() else _fpp_poisson_np(num_blocks, ndv)
    if got is None:
        return _k.fpp_poisson(num_blocks, ndv) <= fpp
    est, tol = got
    out = est <= fpp
    unsure = np.flatnonzero(np.abs(est - fpp) <= tol)
    if unsure.size:
        out[unsure] = _k.fpp_poisson(num_blocks[unsure], ndv[unsure]) <= fpp
    return out


#: Block counts of the exact rule already solved, per fpp: memo[fpp][ndv] (-1: not yet).
#: The zones of a column have few distinct ndv and builds ask again part after
#: part, so each is solved once per process; counts from _MEMO_NDV on are
#: solved every time (they would make the memo large).
_exact_memo: dict[float, np.ndarray] = {}
_memo_lock = threading.Lock()
_MEMO_NDV = 1 << 20


def exact_num_blocks(ndv: np.ndarray, fpp: float) -> np.ndarray:
    """``exact_num_bytes(ndv, fpp) // 32`` (int64), remembering what it solved."""
    nd = np.asarray(ndv, dtype=np.int64).reshape(-1)
    fpp = float(fpp)
    if nd.size == 0 or nd.min() < 0 or not 0.0 < fpp < 1.0:
        return exact_num_bytes(nd, fpp) // 32   # its own checks and errors
    out = np.empty(nd.shape[0], dtype=np.int64)
    small = nd < _MEMO_NDV
    if not small.all():
        out[~small] = exact_num_bytes(nd[~small], fpp) // 32
    ks = nd[small]
    if ks.size:
        top = int(ks.max()) + 1
        with _memo_lock:
            memo = _exact_memo.get(fpp)
            if memo is None or memo.shape[0] < top:
                grown = np.full(min(_MEMO_NDV, max(top, 2 * (0 if memo is None else memo.shape[0]))), -1, np.int64)
                if memo is not None:
                    grown[:memo.shape[0]] = memo
                memo = _exact_memo[fpp] = grown
        got = memo[ks]
        miss = got < 0
        if miss.any():
            keys = np.sort(ks[miss])   # np.unique without its inverse would import numpy.ma (~15 ms)
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
            vals = exact_num_bytes(keys, fpp) // 32
            memo[keys] = vals   # the same values whoever writes them: no lock needed
            got = memo[ks]
        out[small] = got
    return out.reshape(np.shape(ndv))


def exact_sizes_hold(ndv: np.ndarray | Sequence[int], fpp: float, nbytes: np.ndarray | Sequence[int]) -> bool:
    """``np.array_equal(num_bytes(ndv, fpp, "exact"), nbytes)``, checked rather than solved
    (a stored index's filter sizes, on every load): each distinct (ndv, size) is tried at its
    size and at one block less. The estimate only grows as blocks shrink, so the exact rule's
    count is the one that passes where one block less fails (or is one block), or the cap
    where even the cap fails: two estimates per distinct ndv instead of a search."""
    nd, nb = np.asarray(ndv), np.asarray(nbytes)
    if (nd.shape != nb.shape or nd.ndim != 1 or not np.issubdtype(nd.dtype, np.integer)
            or not np.issubdtype(nb.dtype, np.integer) or (nd.size and int(nd.min()) < 0)
            or isinstance(fpp, bool) or not isinstance(fpp, (int, float, np.floating)) or not 0.0 < float(fpp) < 1.0):
        return nd.shape == nb.shape and np.array_equal(num_bytes(nd, fpp, "exact"), nb)   # its checks and errors
    if not nd.size:
        return True
    nd, nb = nd.astype(np.int64), nb.astype(np.int64)
    max_blocks = MAX_BYTES // BYTES_PER_BLOCK
    if ((nb % BYTES_PER_BLOCK) != 0).any() or (nb < BYTES_PER_BLOCK).any() or (nb > MAX_BYTES).any():
        return False
    blocks = nb // BYTES_PER_BLOCK
    zero = nd == 0
    if (blocks[zero] != 1).any():
        return False
    d, b = nd[~zero], blocks[~zero]
    if not d.size:
        return True
    order = np.lexsort((b, d))
    d, b = d[order], b[order]
    first = np.concatenate(([True], d[1:] != d[:-1]))
    if (b[1:][~first[1:]] != b[:-1][~first[1:]]).any():
        return False   # one ndv, two sizes: at most one is the rule's
    d, b = d[first].astype(np.float64), b[first]
    ok = _fpp_passes(b.astype(np.float64), d, float(fpp))
    if (b[~ok] != max_blocks).any():
        return False
    below = ok & (b > 1)
    return not below.any() or not _fpp_passes((b[below] - 1).astype(np.float64), d[below], float(fpp)).any()


def num_bytes(ndv: np.ndarray | Sequence[int], fpp: float, rule: str = "parquet") -> np.ndarray:
    """Filter bytes for every ``ndv[i]`` under `rule` (one of :data:`RULES`), vectorized
    over zones; ndv 0 gives one block. int64 array of the shape of `ndv`."""
    nd = np.asarray(ndv, dtype=np.int64)
    if rule == "parquet":
        return _parquet(nd, fpp)
    if rule == "parquet-java":
        return _parquet_java(nd, fpp)
    if rule not in RULES:
        raise SkipidxError(f"unknown SBBF sizing {rule!r}; expected one of {', '.join(RULES)}")
    exact = exact_num_blocks(nd, fpp)
    if rule == "exact":
        return exact * BYTES_PER_BLOCK
    # lance: the estimate falls as blocks grow, so the exact count rounded up to
    # a power of two is the smallest power of two meeting it
    return np.minimum(_next_pow2(exact) * BYTES_PER_BLOCK, MAX_BYTES)


def optimal_num_bytes(ndv: int, fpp: float, sizing: str = "parquet", max_bytes: int = MAX_BYTES) -> int:
    """Bytes of the SBBF ``SBBF.for_ndv(ndv, fpp, sizing)`` builds (`sizing`: one of :data:`RULES`).

    `max_bytes` caps the result (parquet-java's writer caps at
    ``parquet.bloom.filter.max.bytes``, 1 MiB by default).
    """
    ndv, fpp = check_ndv_fpp(ndv, fpp)
    max_bytes = check_num_bytes(max_bytes, "max_bytes")
    if sizing not in RULES:
        raise SkipidxError(f"unknown SBBF sizing {sizing!r}; expected one of {', '.join(RULES)}")
    return min(int(num_bytes(np.array([ndv]), fpp, sizing)[0]), max_bytes)


def sizing_table(
    ndvs: Sequence[int] = (1_000, 10_000, 100_000, 1_000_000),
    fpps: Sequence[float] = (0.1, 0.01, 0.001),
) -> str:
    """The sizing tables of the module docstring, recomputed (the tests compare the two)."""
    lines = [
        "    |       NDV | target FPP | parquet bytes | expected FPP | lance bytes | expected FPP |",
        "    |-----------|------------|---------------|--------------|-------------|--------------|",
    ]
    more = [
        "    |       NDV | target FPP | parquet-java bytes | exact bytes | expected FPP |",
        "    |-----------|------------|--------------------|-------------|--------------|",
    ]
    for ndv in ndvs:
        for fpp in fpps:
            pb, lb, jb, xb = (optimal_num_bytes(ndv, fpp, r) for r in ("parquet", "lance", "parquet-java", "exact"))
            lines.append(f"    | {ndv:>9_} | {fpp:>10} | {pb:>13_} | {fpp_estimate(pb, ndv):>12.6f} "
                         f"| {lb:>11_} | {fpp_estimate(lb, ndv):>12.6f} |")
            more.append(f"    | {ndv:>9_} | {fpp:>10} | {jb:>18_} | {xb:>11_} | {fpp_estimate(xb, ndv):>12.6f} |")
    return "\n".join(lines + [""] + more)


# ------------------------------------------------------------ group summaries

#: A granule's filter that lets more than this share of
#: absent lookups through is "saturated": it answers maybe and is not checked. 0.9
#: keeps the filters that still prune (a 0.5-FPP filter halves the scan of a
#: one-token query, and a three-token query sees 0.5^3) and drops only those that
#: almost never can.
SATURATION_FPP = 0.9

#: Index granules per summary group (a group never spans two build chunks, so a
#: chunk's last group may be shorter): the planner checks one summary filter per
#: group, then only the granules of the groups that pass.
SUMMARY_GROUP = 64
#: The false-positive rate a group's summary filter is sized for, unless the
#: index's own is higher (then its own: a summary need not be tighter than the
#: granules it stands for).
SUMMARY_FPP = 0.01
#: The rule summaries are sized by (any block count is a valid SBBF).
SUMMARY_RULE = "exact"
#: Parts expected to hold fewer index granules get no summaries: their flat check is
#: cheap (the kernel probes IN (100) over 1.3k granules in ~0.4 ms), and a summary of
#: distinct values (ids) costs about as many bytes as the granules' filters (a 10M-row
#: part, 1.2k granules, would double its bloom_filter files past ClickHouse's bytes).
SUMMARY_MIN_GRANULES = 4096


def summary_fpp(index_fpp: float | None) -> float:
    """The fpp a group summary of an index with target `index_fpp` (None: fixed-size
    filters) is sized for: :data:`SUMMARY_FPP`, or the index's own when it is looser."""
    if index_fpp is None or not 0.0 < float(index_fpp) < 1.0:
        return SUMMARY_FPP
    return max(SUMMARY_FPP, float(index_fpp))


def summary_num_bytes(group_ndv: np.ndarray | Sequence[int], index_fpp: float | None) -> np.ndarray:
    """Bytes of each group's summary filter from the distinct hashes of the whole group."""
    return num_bytes(group_ndv, summary_fpp(index_fpp), SUMMARY_RULE)


def summary_table(
    cases: Sequence[tuple[int, int, float | None]] = (
        (8192, 1, 0.00002), (8192, 1, 0.025), (8192, 1, None), (2048, 32, None), (300, 200, 0.01)),
    group: int = SUMMARY_GROUP,
) -> str:
    """The group-summary table of :mod:`skipidx.core.sizing`'s docstring, recomputed.

    A case is (distinct per granule, how many granules of a group share each
    distinct value, the index's fpp): ids (one granule each), tokens of logs
    (shared by many granules)."""
    lines = [
        "    | distinct/granule | shared by | index fpp | summary fpp | group bytes | per granule | expected FPP |",
        "    |------------------|-----------|-----------|-------------|-------------|-------------|--------------|",
    ]
    for ndv, shared, fpp in cases:
        union = max(1, ndv * group // max(1, min(shared, group)))
        b = int(summary_num_bytes(np.array([union]), fpp)[0])
        lines.append(f"    | {ndv:>16_} | {shared:>9} | {str(fpp):>9} | {summary_fpp(fpp):>11} | {b:>11_} "
                     f"| {b // group:>11_} | {fpp_estimate(b, union):>12.6f} |")
    return "\n".join(lines)
