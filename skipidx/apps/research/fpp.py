"""False-positive rates of Bloom filters, measured: ``skipidx bench fpp``.

Reproduces the sizing table of the Parquet spec ("Bits of space per insert"
vs false-positive probability) with the SBBF of `skipidx.core.sbbf`, and puts
ClickHouse's classic Bloom filter next to it at the same bits per value.

Method, per point (bits per value ``b``):

* SBBF: a filter of ``num_bytes`` gets ``n = 8 * num_bytes / b`` hashes
  inserted through the public `SBBF.insert_hashes`; then ``P`` hashes that
  are certainly absent are probed and the false positives counted.
  Inserted hashes are ``splitmix64(key + i)`` for ``i < n``, probes are
  ``splitmix64(key + 2**62 + j)``: splitmix64 is a bijection of uint64, so
  probes never equal an inserted hash and every hit is a false positive.
  ``P`` is chosen so that about ``min_fp`` false positives are expected
  (capped by ``max_probes``), which fixes the relative width of the interval.
* ClickHouse's classic Bloom filter (the ``bloom_filter`` skip index,
  ``src/Interpreters/BloomFilter.cpp``): ``m = b * n`` bits, ``k`` hash
  functions, bit ``i`` of value hash ``h`` is
  ``Hash128to64(uint128(h, bf_hash_seed[i])) % m`` (CityHash v1.0.2's
  ``Hash128to64``; the 15 seeds of ``BloomFilterHash``). ``k`` is the best
  ``k`` of ClickHouse's best-practice table (``calculationBestPractices``,
  the minimum of each row of its ``probability_lookup_table``) for the
  integer number of bits per row nearest to ``b``; the table ends at 20 bits
  per row, beyond it its last row (k = 14) is used, as ClickHouse caps there.
* Interval: Wilson score interval of the binomial proportion at confidence
  ``conf`` (default 0.999).
* Analytic estimates: for the SBBF, Putze et al. with Poisson block loads
  (`SBBF.fpp_estimate`); for the classic filter ``(1 - (1 - 1/m)^(k n))^k``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Sequence

import numpy as np
from numba import njit

from skipidx.core._kernels.sbbf import SALT, check_one
from skipidx.core.errors import SkipidxError

#: The Parquet spec's table: (bits of space per insert, false-positive probability).
SPEC_TABLE: tuple[tuple[float, float], ...] = (
    (6.0, 0.10),
    (10.5, 0.01),
    (16.9, 0.001),
    (26.4, 0.0001),
    (41.0, 0.00001),
)

#: Half a unit of the last printed digit of each spec entry (6.0 -> 0.05, 41 -> 0.5):
#: the spec's bits are rounded, so the exact bits for its FPP lie within this of them.
SPEC_ROUNDING: tuple[float, ...] = (0.05, 0.05, 0.05, 0.05, 0.5)

#: ClickHouse ``BloomFilterHash::calculationBestPractices``: for b bits per row
#: (index), the k with the smallest FPP in its probability_lookup_table row.
CLICKHOUSE_BEST_K: tuple[int, ...] = (0, 0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 11, 12, 12, 13, 14)

#: ``BloomFilterHash::bf_hash_seed``: seed of hash function i of the bloom_filter index.
CLICKHOUSE_BF_SEEDS = np.array([
    13635471485423070496, 10336109063487487899, 17779957404565211594, 8988612159822229247,
    4954614162757618085, 12980113590177089081, 9263883436177860930, 3656772712723269762,
    10362091744962961274, 7582936617938287249, 15033938188484401405, 18286745649494826751,
    6852245486148412312, 8886056245089344681, 10151472371158292780,
], dtype=np.uint64)

_PROBE_BASE = np.uint64(1 << 62)   # probe counters start here; inserts use [0, n)
_CHUNK = 1 << 24                   # probes per kernel call (progress granularity)


def clickhouse_best_k(bits_per_value: float) -> int:
    """k that ClickHouse's best-practice table pairs with ``bits_per_value`` bits per row.

    The table rows are whole bits per row 1..20; the nearest row is used, and
    beyond 20 bits its last row (ClickHouse never recommends more than 20 bits
    per row).
    """
    if not (bits_per_value > 0) or math.isinf(bits_per_value):
        raise SkipidxError(f"bits per value must be a positive number, got {bits_per_value!r}")
    row = min(max(int(math.floor(bits_per_value + 0.5)), 1), len(CLICKHOUSE_BEST_K) - 1)  # halves round up
    return max(CLICKHOUSE_BEST_K[row], 1)


def wilson_interval(hits: int, trials: int, conf: float = 0.999) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``hits / trials`` at confidence ``conf``."""
    if trials <= 0 or hits < 0 or hits > trials:
        raise SkipidxError(f"need 0 <= hits <= trials and trials > 0, got {hits}/{trials}")
    if not (0.0 < conf < 1.0):
        raise SkipidxError(f"confidence must lie in (0, 1), got {conf}")
    z = NormalDist().inv_cdf(0.5 + conf / 2.0)
    p = hits / trials
    z2n = z * z / trials
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials)) / (1.0 + z2n)
    return max(0.0, centre - half), min(1.0, centre + half)


def classic_fpp_analytic(bits_per_value: float, k: int, n: int) -> float:
    """Expected FPP of a classic Bloom filter of ``m = bits * n`` bits with k hashes after n inserts."""
    m = max(int(round(bits_per_value * n)), 1)
    return float((-math.expm1(k * n * math.log1p(-1.0 / m))) ** k)


# --------------------------------------------------------------------------- kernels

@njit(inline="always", cache=True)
def _splitmix64(x):
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _splitmix_range(key, start, n):
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = _splitmix64(key + start + np.uint64(i))
    return out


@njit(cache=True)
def _sbbf_count_fp(words, num_blocks, key, start, n, salt):
    """False positives among n probes splitmix64(key + start + j) in one SBBF."""
    fp = 0
    for j in range(n):
        if check_one(words, 0, num_blocks, _splitmix64(key + start + np.uint64(j)), salt):
            fp += 1
    return fp


@njit(inline="always", cache=True)
def _hash128to64(lo, hi):
    """CityHash v1.0.2 ``Hash128to64(uint128(lo, hi))`` (first = low half)."""
    kmul = np.uint64(0x9DDFEA08EB382D69)
    a = (lo ^ hi) * kmul
    a ^= a >> np.uint64(47)
    b = (hi ^ a) * kmul
    b ^= b >> np.uint64(47)
    return b * kmul


@njit(cache=True)
def _classic_insert(words, m, seeds, key, n):
    """Insert splitmix64(key + i), i < n, into a classic filter of m bits (uint64 words)."""
    mm = np.uint64(m)
    for i in range(n):
        h = _splitmix64(key + np.uint64(i))
        for s in range(seeds.shape[0]):
            pos = _hash128to64(h, seeds[s]) % mm
            words[pos >> np.uint64(6)] |= np.uint64(1) << (pos & np.uint64(63))


@njit(cache=True)
def _classic_count_fp(words, m, seeds, key, start, n):
    mm = np.uint64(m)
    fp = 0
    for j in range(n):
        h = _splitmix64(key + start + np.uint64(j))
        hit = True
        for s in range(seeds.shape[0]):
            pos = _hash128to64(h, seeds[s]) % mm
            if (words[pos >> np.uint64(6)] >> (pos & np.uint64(63))) & np.uint64(1) == np.uint64(0):
                hit = False
                break
        if hit:
            fp += 1
    return fp


# --------------------------------------------------------------------------- measurement

@dataclass
class FppPoint:
    """One measured point: a filter kind at one bits-per-value."""

    kind: str                    # "sbbf" or "clickhouse_bloom_filter"
    bits_per_value: float        # bits of filter per inserted (distinct) value
    num_bytes: int               # filter size
    inserted: int                # distinct hashes inserted
    hashes: int                  # bits set per value (SBBF: always 8)
    probes: int                  # absent hashes probed
    false_positives: int
    measured: float              # false_positives / probes
    ci_low: float
    ci_high: float
    conf: float
    analytic: float              # Putze/Poisson (SBBF) or classic formula
    spec: float | None = None    # the Parquet spec's value, on spec points

    @property
    def analytic_in_ci(self) -> bool:
        return self.ci_low <= self.analytic <= self.ci_high

    def to_dict(self) -> dict:
        d = asdict(self)
        d["analytic_in_ci"] = self.analytic_in_ci
        return d


def _probe_count(expected_fpp: float, min_fp: int, min_probes: int, max_probes: int) -> int:
    want = math.ceil(min_fp / max(expected_fpp, 1e-300))
    return int(min(max(want, min_probes), max_probes))


def _probe_in_chunks(count_fn, probes: int, progress) -> int:
    fp = 0
    done = 0
    while done < probes:
        step = min(_CHUNK, probes - done)
        fp += int(count_fn(np.uint64(done), step))
        done += step
        if progress is not None:
            progress(step)
    return fp


def measure_sbbf(bits_per_value: float, *, num_bytes: int = 1 << 20, seed: int = 1, min_fp: int = 2000,
                 min_probes: int = 100_000, max_probes: int = 400_000_000, conf: float = 0.999,
                 spec: float | None = None, progress=None) -> FppPoint:
    """Measure the FPP of one SBBF of ``num_bytes`` holding ``8 * num_bytes / bits_per_value`` hashes."""
    from skipidx.core.sbbf import SBBF

    if not (bits_per_value > 0):
        raise SkipidxError(f"bits per value must be > 0, got {bits_per_value}")
    n = max(int(round(num_bytes * 8 / bits_per_value)), 1)
    key = np.uint64((seed * 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    f = SBBF(num_bytes)
    f.insert_hashes(_splitmix_range(key, np.uint64(0), n))
    analytic = SBBF.fpp_estimate(num_bytes, n)
    probes = _probe_count(analytic, min_fp, min_probes, max_probes)
    words, nb = f.words, np.int64(f.num_bytes // 32)
    fp = _probe_in_chunks(lambda s, c: _sbbf_count_fp(words, nb, key, _PROBE_BASE + s, c, SALT), probes, progress)
    lo, hi = wilson_interval(fp, probes, conf)
    return FppPoint("sbbf", float(bits_per_value), num_bytes, n, 8, probes, fp, fp / probes, lo, hi, conf,
                    analytic, spec)


def measure_clickhouse_bf(bits_per_value: float, *, inserted: int = 250_000, k: int | None = None, seed: int = 1,
                          min_fp: int = 2000, min_probes: int = 100_000, max_probes: int = 400_000_000,
                          conf: float = 0.999, spec: float | None = None, progress=None) -> FppPoint:
    """Measure ClickHouse's classic Bloom filter (bloom_filter index hashing) at ``bits_per_value``."""
    if k is None:
        k = clickhouse_best_k(bits_per_value)
    if not (1 <= k <= CLICKHOUSE_BF_SEEDS.shape[0]):
        raise SkipidxError(f"k must lie in 1..{CLICKHOUSE_BF_SEEDS.shape[0]}, got {k}")
    m = max(int(round(bits_per_value * inserted)), 1)
    words = np.zeros((m + 63) // 64, dtype=np.uint64)
    seeds = np.ascontiguousarray(CLICKHOUSE_BF_SEEDS[:k])
    key = np.uint64((seed * 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    _classic_insert(words, m, seeds, key, inserted)
    analytic = classic_fpp_analytic(bits_per_value, k, inserted)
    probes = _probe_count(analytic, min_fp, min_probes, max_probes)
    fp = _probe_in_chunks(lambda s, c: _classic_count_fp(words, m, seeds, key, _PROBE_BASE + s, c), probes, progress)
    lo, hi = wilson_interval(fp, probes, conf)
    return FppPoint("clickhouse_bloom_filter", float(bits_per_value), (m + 7) // 8, inserted, k, probes, fp,
                    fp / probes, lo, hi, conf, analytic, spec)


@dataclass
class FppReport:
    """All points of one `bench fpp` run."""

    spec_points: list[FppPoint] = field(default_factory=list)        # SBBF at the spec's bits
    spec_rounding: list[dict] = field(default_factory=list)           # SBBF at bits -/+ rounding
    clickhouse_points: list[FppPoint] = field(default_factory=list)  # classic BF at the spec's bits
    sweep: list[FppPoint] = field(default_factory=list)               # both kinds over a bits sweep
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "params": self.params,
            "spec_points": [p.to_dict() for p in self.spec_points],
            "spec_rounding": self.spec_rounding,
            "clickhouse_points": [p.to_dict() for p in self.clickhouse_points],
            "sweep": [p.to_dict() for p in self.sweep],
        }


def run_fpp(*, quick: bool = False, seed: int = 1, conf: float = 0.999,
            sweep_bits: Sequence[float] | None = None, with_rounding: bool = True,
            show_progress: bool = True) -> FppReport:
    """The whole `bench fpp`: spec points (+ rounding brackets), ClickHouse at the same bits, a sweep."""
    from skipidx.core.progress import Progress

    num_bytes = (1 << 18) if quick else (1 << 20)
    min_fp = 500 if quick else 4000
    max_probes = 50_000_000 if quick else 1_000_000_000
    ch_inserted = 50_000 if quick else 250_000
    if sweep_bits is None:
        sweep_bits = [4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32] if quick else [float(b) for b in range(4, 45, 2)]
    sweep_min_fp = 200 if quick else 1000
    # The sweep is for the plot: a tenth of the probes (the classic filter's FPP falls below 1e-8 there).
    sweep_max = max_probes // 10
    params = dict(quick=quick, seed=seed, conf=conf, sbbf_num_bytes=num_bytes, min_false_positives=min_fp,
                  max_probes=max_probes, sweep_max_probes=sweep_max, clickhouse_inserted=ch_inserted,
                  sweep_bits=list(sweep_bits))
    rep = FppReport(params=params)

    # Work estimate for the progress bar: probes of every measurement.
    from skipidx.core.sbbf import SBBF

    def sb_probes(b, mfp):
        return _probe_count(SBBF.fpp_estimate(num_bytes, max(int(round(num_bytes * 8 / b)), 1)), mfp, 100_000,
                            max_probes)

    def ch_probes(b, mfp):
        return _probe_count(classic_fpp_analytic(b, clickhouse_best_k(b), ch_inserted), mfp, 100_000, max_probes)

    total = 0
    for (b, _), r in zip(SPEC_TABLE, SPEC_ROUNDING):
        total += sb_probes(b, min_fp) + ch_probes(b, min_fp)
        if with_rounding:
            total += sb_probes(b - r, min_fp) + sb_probes(b + r, min_fp)
    for b in sweep_bits:
        total += min(sb_probes(b, sweep_min_fp), sweep_max) + min(ch_probes(b, sweep_min_fp), sweep_max)

    bar = Progress("bench fpp", total, unit="probes") if show_progress else None
    done = [0]

    def tick(step):
        done[0] += step
        if bar is not None:
            bar.update(done[0])

    try:
        for i, ((b, p), r) in enumerate(zip(SPEC_TABLE, SPEC_ROUNDING)):
            s = seed * 1000 + i
            rep.spec_points.append(measure_sbbf(b, num_bytes=num_bytes, seed=s, min_fp=min_fp, max_probes=max_probes,
                                                conf=conf, spec=p, progress=tick))
            rep.clickhouse_points.append(measure_clickhouse_bf(b, inserted=ch_inserted, seed=s, min_fp=min_fp,
                                                               max_probes=max_probes, conf=conf, spec=p,
                                                               progress=tick))
            if with_rounding:
                # The spec's bits are rounded: the FPP at (bits + r) must not exceed the spec's FPP by more
                # than the measurement error, and the FPP at (bits - r) must not fall below it.
                lo_pt = measure_sbbf(b - r, num_bytes=num_bytes, seed=s + 500, min_fp=min_fp,
                                     max_probes=max_probes, conf=conf, progress=tick)
                hi_pt = measure_sbbf(b + r, num_bytes=num_bytes, seed=s + 700, min_fp=min_fp,
                                     max_probes=max_probes, conf=conf, progress=tick)
                rep.spec_rounding.append({
                    "bits": b, "rounding": r, "spec": p,
                    "fewer_bits": lo_pt.to_dict(), "more_bits": hi_pt.to_dict(),
                    "spec_within_rounding": bool(hi_pt.ci_low <= p <= lo_pt.ci_high),
                })
        for j, b in enumerate(sweep_bits):
            s = seed * 1000 + 100 + j
            rep.sweep.append(measure_sbbf(b, num_bytes=num_bytes, seed=s, min_fp=sweep_min_fp,
                                          max_probes=sweep_max, conf=conf, progress=tick))
            rep.sweep.append(measure_clickhouse_bf(b, inserted=ch_inserted, seed=s, min_fp=sweep_min_fp,
                                                   max_probes=sweep_max, conf=conf, progress=tick))
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    return rep


# --------------------------------------------------------------------------- output

def _fmt_p(p: float) -> str:
    return f"{p:.3g}" if p else "0"


def fpp_markdown(rep: FppReport) -> str:
    """The report as markdown tables."""
    lines = [
        "### SBBF vs the Parquet spec table",
        "",
        f"Wilson {rep.params.get('conf', 0.999):.1%} intervals; SBBF of {rep.params.get('sbbf_num_bytes')} bytes; "
        "analytic = Putze et al. with Poisson block loads.",
        "",
        "| bits/value | spec FPP | measured FPP | CI low | CI high | analytic (Putze) | analytic in CI |"
        " measured/spec | probes | false positives |",
        "|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|",
    ]
    for p in rep.spec_points:
        lines.append(f"| {p.bits_per_value:g} | {_fmt_p(p.spec or 0)} | {_fmt_p(p.measured)} | {_fmt_p(p.ci_low)} | "
                     f"{_fmt_p(p.ci_high)} | {_fmt_p(p.analytic)} | {'yes' if p.analytic_in_ci else 'NO'} | "
                     f"{p.measured / p.spec:.3f} | {p.probes:,} | {p.false_positives:,} |")
    if rep.spec_rounding:
        lines += ["", "Spec rounding: the spec's FPP must lie between the FPP measured at bits + r "
                      "(CI low) and at bits - r (CI high).", "",
                  "| bits | r | spec FPP | FPP at bits+r (CI low) | FPP at bits-r (CI high) | within rounding |",
                  "|---:|---:|---:|---:|---:|:---:|"]
        for r in rep.spec_rounding:
            lines.append(f"| {r['bits']:g} | {r['rounding']:g} | {_fmt_p(r['spec'])} | "
                         f"{_fmt_p(r['more_bits']['measured'])} ({_fmt_p(r['more_bits']['ci_low'])}) | "
                         f"{_fmt_p(r['fewer_bits']['measured'])} ({_fmt_p(r['fewer_bits']['ci_high'])}) | "
                         f"{'yes' if r['spec_within_rounding'] else 'NO'} |")
    lines += ["", "### ClickHouse classic Bloom filter (bloom_filter index hashing) at the same bits",
              "", "k = ClickHouse's best-practice k for the nearest whole bits per row (table capped at 20).", "",
              "| bits/value | k | measured FPP | CI low | CI high | analytic | SBBF measured | classic/SBBF |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c, s in zip(rep.clickhouse_points, rep.spec_points):
        ratio = c.measured / s.measured if s.measured else float("nan")
        lines.append(f"| {c.bits_per_value:g} | {c.hashes} | {_fmt_p(c.measured)} | {_fmt_p(c.ci_low)} | "
                     f"{_fmt_p(c.ci_high)} | {_fmt_p(c.analytic)} | {_fmt_p(s.measured)} | {ratio:.2f} |")
    if rep.sweep:
        lines += ["", "### Sweep", "", "| bits/value | SBBF measured | SBBF analytic | classic k | classic measured |"
                  " classic analytic |", "|---:|---:|---:|---:|---:|---:|"]
        sb = [p for p in rep.sweep if p.kind == "sbbf"]
        ch = [p for p in rep.sweep if p.kind != "sbbf"]
        for s, c in zip(sb, ch):
            lines.append(f"| {s.bits_per_value:g} | {_fmt_p(s.measured)} | {_fmt_p(s.analytic)} | {c.hashes} | "
                         f"{_fmt_p(c.measured)} | {_fmt_p(c.analytic)} |")
    return "\n".join(lines) + "\n"


def fpp_plot(rep: FppReport, path: str) -> str:
    """PNG: FPP vs bits per value (log y), measured with intervals, analytic curves, spec points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from skipidx.core.sbbf import SBBF

    fig, ax = plt.subplots(figsize=(8, 5.5))
    pts = rep.sweep + rep.spec_points + rep.clickhouse_points
    bmax = max([p.bits_per_value for p in pts] + [44.0])
    xs = np.linspace(3.0, bmax, 200)
    nb = int(rep.params.get("sbbf_num_bytes", 1 << 20))
    ax.plot(xs, [SBBF.fpp_estimate(nb, nb * 8 / x) for x in xs], "-", color="C0", lw=1,
            label="SBBF analytic (Putze/Poisson)")
    ch_n = int(rep.params.get("clickhouse_inserted", 250_000))
    ax.plot(xs, [classic_fpp_analytic(x, clickhouse_best_k(x), ch_n) for x in xs], "-", color="C1", lw=1,
            label="classic BF analytic, ClickHouse best k")
    for kind, color, label in (("sbbf", "C0", "SBBF measured"),
                               ("clickhouse_bloom_filter", "C1", "ClickHouse bloom_filter measured")):
        ps = [p for p in rep.sweep + rep.spec_points + rep.clickhouse_points if p.kind == kind and p.false_positives]
        if ps:
            x = np.array([p.bits_per_value for p in ps])
            y = np.array([p.measured for p in ps])
            err = np.array([[p.measured - p.ci_low for p in ps], [p.ci_high - p.measured for p in ps]])
            ax.errorbar(x, y, yerr=err, fmt="o", ms=3.5, color=color, capsize=2, label=label)
    ax.plot([b for b, _ in SPEC_TABLE], [p for _, p in SPEC_TABLE], "*", ms=14, mfc="none", mec="C3", mew=1.5,
            label="Parquet spec table")
    ax.set_yscale("log")
    ax.set_xlabel("bits per distinct value")
    ax.set_ylabel("false-positive probability")
    ax.set_title("Bloom filter FPP vs bits per value")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _clickhouse_probability_table() -> list[list[float]]:
    """ClickHouse's ``probability_lookup_table``: ``(1 - e^(-k/b))^k`` to 3 significant digits.

    Row b (bits per row, 0..20), column k (0..14, column 0 a dummy 1.0). ClickHouse's
    literal rows stop a column or two past their best k; the algorithm never reads
    further, so full rows here answer the same.
    The 3-digit rounding matters: ClickHouse compares the rounded values, e.g.
    0.001 at 15 bits and k = 7 (0.001002 unrounded).
    """
    table = [[1.0]]
    for b in range(1, len(CLICKHOUSE_BEST_K)):
        row = [1.0] + [float(f"{(1.0 - math.exp(-k / b)) ** k:.3g}") for k in range(1, 15)]
        table.append(row)
    table[1] = [1.0, 1.0]
    return table


_CH_TABLE: list[list[float]] | None = None


def clickhouse_best_practice(max_conflict_probability: float) -> tuple[int, int]:
    """``BloomFilterHash::calculationBestPractices``: (bits per row, hash functions) for a target FPP.

    The fewest bits per row whose best k reaches the target, then the fewest k
    in that row that still does. Targets below what 19 bits per row reach get
    ClickHouse's fallback (19 bits, its best k).
    """
    global _CH_TABLE
    p = float(max_conflict_probability)
    if not (0.0 < p < 1.0):
        raise SkipidxError(f"false-positive probability must lie in (0, 1), got {max_conflict_probability!r}")
    if _CH_TABLE is None:
        _CH_TABLE = _clickhouse_probability_table()
    t = _CH_TABLE
    for b in range(1, 20):
        best = CLICKHOUSE_BEST_K[b]
        if t[b][best] <= p:
            for k in range(best, 0, -1):
                if t[b][k] > p:
                    return b, k + 1
    return 19, CLICKHOUSE_BEST_K[19]
