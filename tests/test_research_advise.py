"""`skipidx advise`: on data with a known number of distinct tokens per granule, the recommended
sizes meet the target FPP when measured."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from skipidx.core.errors import SkipidxError
from skipidx.apps.research.advise import advise, advice_markdown, fixed_bytes_for
from skipidx.apps.research.fpp import _classic_count_fp, _classic_insert, wilson_interval

IG = 512            # rows per granule
GRANULES = 8
D = 3000            # distinct tokens in every granule
PER_ROW = 6


def _known_ndv_column() -> pa.Array:
    """Row r of granule g holds tokens g<g>t<j> for j = (r * 6 + i) mod D: exactly D distinct per granule."""
    vals = []
    for g in range(GRANULES):
        for r in range(IG):
            vals.append(" ".join(f"g{g}t{(r * PER_ROW + i) % D}" for i in range(PER_ROW)))
    return pa.array(vals)


@pytest.fixture(scope="module")
def column():
    return _known_ndv_column()


@pytest.fixture(scope="module")
def advice(column):
    return advise(column, column="msg", fpp=0.01, index_granularity=IG, tokenizers=["token", "ngram3"],
                  sample_granules=GRANULES, show_progress=False)


def _token_hashes_per_granule(column):
    from skipidx.core.tokenizer_api import get_tokenizer

    rows, hashes = get_tokenizer("token").hash_column(column, 0)
    g = rows // IG
    return [np.unique(hashes[g == i]) for i in range(GRANULES)]


def _absent_hashes(n: int) -> np.ndarray:
    from skipidx.core.tokenizer_api import get_tokenizer

    absent = pa.array([f"absent{i}" for i in range(n)])
    return get_tokenizer("token").hash_column(absent, 0)[1]


def test_profile_counts_the_known_distinct_tokens(advice):
    prof = {p.tokenizer: p for p in advice.profiles}
    assert prof["token"].ndv_mean == D and prof["token"].ndv_max == D and prof["token"].ndv_p50 == D
    assert advice.ndv_samples["token"] == [D] * GRANULES
    assert prof["token"].tokens_per_row == PER_ROW
    assert advice.sampled_granules == GRANULES == advice.index_granules


def test_recommended_fixed_size_meets_the_target_when_measured(column, advice):
    from skipidx.core.sbbf import SBBF

    rec = next(r for r in advice.recommendations if r.tokenizer == "token" and r.kind == "fixed")
    b = int(rec.bytes_per_granule)
    assert b % 32 == 0 and f"tokenbf_v1({b}, 8, 0)" in rec.ddl
    assert rec.fpp_at_max <= 0.01
    # The smallest such size: one block less misses the target.
    assert SBBF.fpp_estimate(b - 32, D) > 0.01
    probes = _absent_hashes(200_000)
    fp = n = 0
    for hs in _token_hashes_per_granule(column):
        f = SBBF(b)
        f.insert_hashes(hs)
        fp += int(f.check_hashes(probes).sum())
        n += probes.shape[0]
    lo, hi = wilson_interval(fp, n, 0.999)
    assert lo <= 0.01, f"measured FPP {fp / n:.5f} (CI low {lo:.5f}) exceeds the 0.01 target"
    assert fp / n <= 0.011


def test_recommended_clickhouse_size_meets_the_target_when_measured(advice):
    rec = next(r for r in advice.recommendations if r.tokenizer == "token" and r.kind == "clickhouse")
    nbytes, k = int(rec.bytes_per_granule), rec.hashes
    assert f"tokenbf_v1({nbytes}, {k}, 0)" in rec.ddl and (k, nbytes) == (5, -(-10 * D // 8))
    m = nbytes * 8
    words = np.zeros((m + 63) // 64, dtype=np.uint64)
    from skipidx.apps.research.fpp import CLICKHOUSE_BF_SEEDS

    seeds = np.ascontiguousarray(CLICKHOUSE_BF_SEEDS[:k])
    _classic_insert(words, m, seeds, np.uint64(99), D)
    probes = 400_000
    fp = int(_classic_count_fp(words, m, seeds, np.uint64(99), np.uint64(1 << 62), probes))
    lo, hi = wilson_interval(fp, probes, 0.999)
    assert lo <= 0.01 and rec.fpp_at_max <= 0.01, (fp / probes, rec.fpp_at_max)


def test_adaptive_recommendation_states_its_expected_fpp(column, advice):
    from skipidx.core.sbbf import SBBF

    from skipidx.core.sbbf import exact_num_bytes

    rec = next(r for r in advice.recommendations if r.tokenizer == "token" and r.kind == "adaptive")
    assert "sbbf('token', fpp = 0.01)" in rec.ddl
    # sbbf's default size_rule 'exact' (not Arrow's power of two: 4096 bytes here)
    size = int(exact_num_bytes([D], 0.01)[0])
    assert size == fixed_bytes_for(D, 0.01) < SBBF.for_ndv(D, 0.01).num_bytes, size
    assert rec.bytes_per_granule == size and rec.total_bytes == size * GRANULES
    probes = _absent_hashes(200_000)
    fp = n = 0
    for hs in _token_hashes_per_granule(column):
        f = SBBF(size)
        f.insert_hashes(hs)
        fp += int(f.check_hashes(probes).sum())
        n += probes.shape[0]
    lo, hi = wilson_interval(fp, n, 0.999)
    assert lo <= rec.fpp_at_mean <= hi, (fp / n, rec.fpp_at_mean)
    assert fp / n <= 0.01


@pytest.mark.parametrize("tokenizer,fpp", [("token", 0.01), ("ngram3", 0.01), ("ngram4", 0.1), ("value", 0.001)],
                         ids=["token-0.01", "ngram3-0.01", "ngram4-0.1", "value-0.001"])
def test_adaptive_quote_equals_what_the_engine_builds(column, tokenizer, fpp):
    """The quoted adaptive DDL, parsed and built over the same granules, gives exactly the quoted sizes."""
    from skipidx.indexes.base import get_index_type
    from skipidx.planner.ddl import index_def_from_ast
    from skipidx.core.sbbf import SBBF
    from skipidx.sql import parse

    # granules of different distinct counts: granule g's first g/8 of rows repeat its last row
    vals = column.to_pylist()
    col = pa.array([vals[i - i % IG + IG - 1] if i % IG < (i // IG) * IG // GRANULES else v
                    for i, v in enumerate(vals)])
    adv = advise(col, column="msg", fpp=fpp, index_granularity=IG, tokenizers=[tokenizer],
                 sample_granules=GRANULES, show_progress=False)
    rec = next(r for r in adv.recommendations if r.kind == "adaptive")
    stmt = parse(f"CREATE TABLE t (msg String, {rec.ddl}) ENGINE = MergeTree ORDER BY tuple()")[0]
    d = index_def_from_ast(stmt.indexes[0], ["msg"])
    idx = get_index_type(d.type_name)(d, pa.string())
    assert idx.params["size_rule"] == "exact", idx.params
    zs = np.arange(0, len(col), IG, dtype=np.int64)
    g = idx.aggregator().build(col, zs, np.minimum(IG, len(col) - zs))
    built = g.num_bytes.astype(np.int64)
    assert g.ndv.tolist() == adv.ndv_samples[tokenizer], "advise counted other distinct tokens than the build"
    assert rec.bytes_per_granule == pytest.approx(built.mean(), rel=1e-12), (rec.bytes_per_granule, built.tolist())
    assert rec.total_bytes == pytest.approx(built.sum(), rel=1e-12)
    assert len(set(g.ndv.tolist())) >= 3, f"the granules should differ in distinct counts: {g.ndv.tolist()}"
    est = [SBBF.fpp_estimate(int(b), int(n)) for b, n in zip(built, g.ndv)]
    assert rec.fpp_at_mean == pytest.approx(np.mean(est)) and rec.fpp_at_max == pytest.approx(max(est))
    assert max(est) <= fpp


@pytest.mark.parametrize("ndv,fpp", [(1, 0.01), (100, 0.1), (3000, 0.01), (50_000, 0.001)],
                         ids=["1", "100", "3000", "50000"])
def test_fixed_bytes_for_is_minimal(ndv, fpp):
    from skipidx.core.sbbf import SBBF

    b = fixed_bytes_for(ndv, fpp)
    assert b % 32 == 0 and SBBF.fpp_estimate(b, ndv) <= fpp
    assert b == 32 or SBBF.fpp_estimate(b - 32, ndv) > fpp


def test_advise_cli_and_markdown(tmp_path, capsys, column):
    import pyarrow.parquet as pq

    from skipidx.apps.research.cli import advise_main

    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"msg": column}), p)
    rc = advise_main([str(p), "--column", "msg", "--fpp", "0.01", "--index-granularity", str(IG),
                      "--tokenizers", "token,value", "--out", str(tmp_path / "o")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "sbbf('token', fpp = 0.01)" in out and "bloom_filter(0.01)" in out
    data = json.loads((tmp_path / "o" / "advise.json").read_text())
    assert {r["kind"] for r in data["recommendations"]} == {"adaptive", "fixed", "clickhouse"}


@pytest.mark.parametrize("kw,match", [({"fpp": 0.0}, "fpp"), ({"fpp": 1.0}, "fpp"), ({"granularity": 0}, "granularity"),
                                      ({"tokenizers": ["trigram"]}, "unknown tokenizer")],
                         ids=["fpp0", "fpp1", "gran", "tok"])
def test_advise_bad_arguments(column, kw, match):
    with pytest.raises(SkipidxError, match=match):
        advise(column, show_progress=False, **kw)


def test_advise_markdown_lists_every_tokenizer(advice):
    md = advice_markdown(advice)
    assert "| token |" in md and "| ngram3 |" in md and "ngrambf_v1(3," in md
