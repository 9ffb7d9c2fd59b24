"""``skipidx advise DATA.parquet --column msg --fpp 0.01``: index sizes from the data, not guesses.

Samples whole index granules of the column (seeded), counts the distinct
tokens of each tokenizer per index granule (64-bit token hashes, sorted per
granule in one compiled pass), and recommends, per tokenizer:

* **adaptive** ``sbbf(tokenizer, fpp = p)``: every granule sized from its
  own distinct count by the index's default rule, ``size_rule = 'exact'``
  (`skipidx.core.sizing.exact_num_bytes`: the fewest 32-byte blocks whose Putze
  estimate meets ``p``), so none saturates -- the sizes the engine builds for
  that DDL; expected bytes = the mean of those sizes over the sample, scaled
  to the table;
* **fixed skipidx** ``tokenbf_v1(bytes, 8, 0)`` / ``ngrambf_v1(n, bytes, 8,
  0)`` (an SBBF of fixed size): the smallest whole number of 32-byte blocks
  whose Putze estimate at the *largest* sampled distinct count meets ``p``
  (a fixed filter must fit the fullest granule);
* **ClickHouse** ``tokenbf_v1`` / ``ngrambf_v1`` (classic Bloom filter): bits
  per distinct token and ``k`` from ClickHouse's own best-practice table
  (`fpp.clickhouse_best_practice`) times the largest sampled distinct count,
  and ``bloom_filter(p)`` for whole values.

Each recommendation carries its expected FPP at the mean and at the largest
sampled distinct count, and the expected index bytes for the whole column.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np
import pyarrow as pa

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.fpp import clickhouse_best_practice
from skipidx.apps.research.indexes import _distinct_per_segment, _tokenizer, parse_tokenizer_spec, putze_min_bytes
from skipidx.apps.research.report import markdown_table

DEFAULT_ADVISE_TOKENIZERS = ("token", "ngram3", "ngram4", "value")


@dataclass
class Recommendation:
    tokenizer: str
    kind: str                    # adaptive | fixed | clickhouse
    ddl: str                     # the INDEX clause
    bytes_per_granule: float     # mean filter bytes per index granule
    total_bytes: float           # expected for the whole column
    fpp_at_mean: float           # expected FPP of a granule with the mean distinct count
    fpp_at_max: float            # ... with the largest sampled distinct count
    hashes: int | None = None    # ClickHouse k


@dataclass
class TokenizerProfile:
    tokenizer: str
    ndv_mean: float
    ndv_p50: float
    ndv_p95: float
    ndv_max: int
    tokens_per_row: float


@dataclass
class Advice:
    source: str
    column: str
    rows: int
    index_granularity: int
    granularity: int
    fpp: float
    sampled_granules: int
    index_granules: int
    profiles: list[TokenizerProfile] = field(default_factory=list)
    recommendations: list[Recommendation] = field(default_factory=list)
    ndv_samples: dict = field(default_factory=dict)   # tokenizer -> distinct count per sampled granule

    def to_dict(self) -> dict:
        return asdict(self)


def fixed_bytes_for(ndv: int, fpp: float) -> int:
    """Smallest SBBF (whole 32-byte blocks) whose Putze estimate at `ndv` distinct values is <= fpp."""
    return putze_min_bytes(int(ndv), float(fpp))


def _classic_fpp(bits: float, n: float, k: int) -> float:
    if n <= 0:
        return 0.0
    return float((1.0 - math.exp(-k * n / max(bits, 1.0))) ** k)


def sample_granule_starts(n_rows: int, rows_per_granule: int, sample_granules: int, seed: int) -> np.ndarray:
    """Row offsets of the sampled index granules (all of them when there are few), sorted."""
    n_ig = (n_rows + rows_per_granule - 1) // rows_per_granule
    rng = np.random.default_rng(seed)
    if n_ig <= sample_granules:
        pick = np.arange(n_ig)
    else:
        pick = np.sort(rng.choice(n_ig, size=sample_granules, replace=False))
    return pick * rows_per_granule


def advise(values: pa.Array | pa.ChunkedArray, *, column: str = "msg", source: str = "", fpp: float = 0.01,
           index_granularity: int = 8192, granularity: int = 1,
           tokenizers: Sequence[str] = DEFAULT_ADVISE_TOKENIZERS, sample_granules: int = 64,
           seed: int = 1, show_progress: bool = True) -> Advice:
    """Profile the column and recommend index definitions (see the module doc)."""
    from skipidx.core.progress import Progress
    from skipidx.core.sbbf import SBBF
    from skipidx.core.sizing import exact_num_bytes

    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    if not (0.0 < float(fpp) < 1.0):
        raise SkipidxError(f"--fpp must lie in (0, 1), got {fpp!r}")
    for nm, v in (("index_granularity", index_granularity), ("granularity", granularity),
                  ("sample_granules", sample_granules)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SkipidxError(f"{nm} must be an integer >= 1, got {v!r}")
    n = len(values)
    if n == 0:
        raise SkipidxError(f"column {column!r} has no rows")
    specs = [parse_tokenizer_spec(t) for t in tokenizers]
    rows_per_ig = index_granularity * granularity
    n_ig = (n + rows_per_ig - 1) // rows_per_ig
    starts = sample_granule_starts(n, rows_per_ig, sample_granules, seed)
    adv = Advice(source, column, n, index_granularity, granularity, float(fpp), int(starts.shape[0]), n_ig)
    # One contiguous array of the sampled granules' rows, with per-granule bounds.
    lens = np.minimum(rows_per_ig, n - starts)
    sample = pa.concat_arrays([values.slice(int(s), int(l)).combine_chunks() for s, l in zip(starts, lens)]) \
        if starts.shape[0] else pa.array([], values.type)
    row_bounds = np.zeros(starts.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=row_bounds[1:])
    bar = Progress("advise", len(specs), unit="tokenizers") if show_progress else None
    for i, ((tok, tn), label) in enumerate(zip(specs, tokenizers)):
        tokenizer = _tokenizer(tok, tn)
        rows, hashes = tokenizer.hash_column(sample, 0)
        bounds = np.searchsorted(rows, row_bounds)
        ndv = _distinct_per_segment(hashes, bounds[:-1], bounds[1:])
        label = f"ngram{tn}" if tok == "ngram" else tok
        adv.ndv_samples[label] = ndv.tolist()
        nd_mean = float(ndv.mean())
        nd_max = int(ndv.max()) if ndv.size else 0
        adv.profiles.append(TokenizerProfile(label, nd_mean, float(np.median(ndv)), float(np.percentile(ndv, 95)),
                                             nd_max, float(hashes.shape[0] / max(len(sample), 1))))
        # Adaptive: every granule its own size, by the rule the quoted DDL builds with
        # (sbbf's default size_rule 'exact'; a granule without tokens gets one block).
        sizes = exact_num_bytes(ndv, float(fpp)).astype(np.float64)
        est = np.array([SBBF.fpp_estimate(int(s), int(d)) for s, d in zip(sizes, ndv)])
        if tok == "ngram":
            a_type = f"sbbf('ngram', n = {tn}, fpp = {fpp:g})"
        else:
            a_type = f"sbbf('{tok}', fpp = {fpp:g})"
        idx_name = f"idx_{label}"
        adv.recommendations.append(Recommendation(
            label, "adaptive", f"INDEX {idx_name} {column} TYPE {a_type} GRANULARITY {granularity}",
            float(sizes.mean()), float(sizes.mean()) * n_ig, float(est.mean()), float(est.max())))
        if tok == "value":
            ch_type = f"bloom_filter({fpp:g})"
            bits, k = clickhouse_best_practice(float(fpp))
            ch_bytes = bits * rows_per_ig / 8.0  # ClickHouse sizes bloom_filter by rows, not distinct values
            adv.recommendations.append(Recommendation(
                label, "clickhouse", f"INDEX {idx_name} {column} TYPE {ch_type} GRANULARITY {granularity}",
                ch_bytes, ch_bytes * n_ig, _classic_fpp(bits * rows_per_ig, nd_mean, k),
                _classic_fpp(bits * rows_per_ig, nd_max, k), k))
        else:
            fb = fixed_bytes_for(nd_max, float(fpp))
            f_type = (f"tokenbf_v1({fb}, 8, 0)" if tok == "token" else f"ngrambf_v1({tn}, {fb}, 8, 0)")
            adv.recommendations.append(Recommendation(
                label, "fixed", f"INDEX {idx_name}_fixed {column} TYPE {f_type} GRANULARITY {granularity}",
                float(fb), float(fb) * n_ig, SBBF.fpp_estimate(fb, nd_mean), SBBF.fpp_estimate(fb, nd_max)))
            bits, k = clickhouse_best_practice(float(fpp))
            cb = int(math.ceil(bits * max(nd_max, 1) / 8.0))
            c_type = (f"tokenbf_v1({cb}, {k}, 0)" if tok == "token" else f"ngrambf_v1({tn}, {cb}, {k}, 0)")
            adv.recommendations.append(Recommendation(
                label, "clickhouse", f"INDEX {idx_name} {column} TYPE {c_type} GRANULARITY {granularity}",
                float(cb), float(cb) * n_ig, _classic_fpp(cb * 8, nd_mean, k), _classic_fpp(cb * 8, nd_max, k), k))
        if bar:
            bar.update(i + 1)
    if bar:
        bar.__exit__(None, None, None)
    return adv


def advice_markdown(adv: Advice) -> str:
    out = [f"# advise: `{adv.column}` of {adv.source or 'data'}", "",
           f"{adv.rows:,} rows; index granule = {adv.granularity} x {adv.index_granularity} rows "
           f"({adv.index_granules:,} index granules); sampled {adv.sampled_granules} of them; target FPP "
           f"{adv.fpp:g}.", "", "## Distinct tokens per index granule (sample)", "",
           markdown_table(["tokenizer", "mean", "p50", "p95", "max", "tokens/row"],
                          [[p.tokenizer, p.ndv_mean, p.ndv_p50, p.ndv_p95, p.ndv_max, p.tokens_per_row]
                           for p in adv.profiles]), "",
           "## Recommended indexes", "",
           "adaptive = skipidx `sbbf` (each granule sized from its distinct count, size_rule 'exact'); "
           "fixed = skipidx "
           "fixed-size SBBF sized for the fullest sampled granule; clickhouse = ClickHouse's classic Bloom "
           "filter with bits/token and k from its best-practice table (bloom_filter: sized by rows).", "",
           markdown_table(["tokenizer", "kind", "index definition", "bytes / granule", "expected total bytes",
                           "FPP at mean distinct", "FPP at max distinct"],
                          [[r.tokenizer, r.kind, f"`{r.ddl}`", r.bytes_per_granule, r.total_bytes, r.fpp_at_mean,
                            r.fpp_at_max] for r in adv.recommendations], align="lllrrrr"), ""]
    return "\n".join(out) + "\n"
