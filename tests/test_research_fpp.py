"""`skipidx bench fpp`: the Parquet spec's sizing table reproduced, and ClickHouse's classic filter."""
from __future__ import annotations

import json

import numpy as np
import pytest

from skipidx.core.errors import SkipidxError
from skipidx.apps.research import fpp as F

SPEC_IDS = [f"{b:g}bits" for b, _ in F.SPEC_TABLE]


@pytest.mark.parametrize("bits,spec", F.SPEC_TABLE, ids=SPEC_IDS)
def test_sbbf_measured_fpp_matches_putze_estimate(bits, spec):
    p = F.measure_sbbf(bits, num_bytes=1 << 18, seed=11, min_fp=1500, conf=0.999)
    assert p.false_positives > 0
    assert p.ci_low <= p.analytic <= p.ci_high, (
        f"{bits} bits: Putze estimate {p.analytic:.4g} outside the 99.9% interval "
        f"[{p.ci_low:.4g}, {p.ci_high:.4g}] of the measured {p.measured:.4g} ({p.false_positives}/{p.probes})")


@pytest.mark.parametrize("i", range(len(F.SPEC_TABLE)), ids=SPEC_IDS)
def test_spec_table_reproduced_within_its_rounding(i):
    """The spec's FPP lies between the FPPs measured at bits + r and bits - r (r: half its last digit)."""
    bits, spec = F.SPEC_TABLE[i]
    r = F.SPEC_ROUNDING[i]
    more = F.measure_sbbf(bits + r, num_bytes=1 << 18, seed=21, min_fp=1500, conf=0.999)
    fewer = F.measure_sbbf(bits - r, num_bytes=1 << 18, seed=22, min_fp=1500, conf=0.999)
    assert more.ci_low <= spec <= fewer.ci_high, (
        f"spec {spec:g} at {bits:g} bits: measured {more.measured:.4g} (CI low {more.ci_low:.4g}) at "
        f"{bits + r:g} bits and {fewer.measured:.4g} (CI high {fewer.ci_high:.4g}) at {bits - r:g} bits")
    # And the measured value at the spec's bits is within 10 % + interval of the spec's value.
    at = F.measure_sbbf(bits, num_bytes=1 << 18, seed=23, min_fp=1500, conf=0.999)
    assert at.ci_low <= spec * 1.1 and at.ci_high >= spec / 1.1, (at.measured, spec)


@pytest.mark.parametrize("bits", [4.0, 6.0, 10.5, 16.9], ids=lambda b: f"{b:g}bits")
def test_clickhouse_classic_filter_matches_its_formula(bits):
    p = F.measure_clickhouse_bf(bits, inserted=60_000, seed=5, min_fp=1500, conf=0.999)
    assert p.hashes == F.clickhouse_best_k(bits)
    assert p.ci_low <= p.analytic <= p.ci_high, (bits, p.measured, p.analytic, p.ci_low, p.ci_high)


def test_classic_filter_beats_sbbf_at_equal_bits():
    """The price of SBBF's one-cache-line probes: more false positives than a classic filter at equal bits."""
    s = F.measure_sbbf(10.5, num_bytes=1 << 18, seed=3, min_fp=2000)
    c = F.measure_clickhouse_bf(10.5, inserted=60_000, seed=3, min_fp=2000)
    assert c.ci_high < s.ci_low, (c.measured, s.measured)


# ClickHouse BloomFilterHash::calculationBestPractices: min_probability_index_each_bits.
BEST_K = [(1, 1), (2, 1), (3, 2), (4, 3), (5, 3), (6, 4), (8, 6), (10, 7), (10.4, 7), (10.5, 8), (16, 11),
          (16.9, 12), (20, 14), (26.4, 14), (41, 14)]


@pytest.mark.parametrize("bits,k", BEST_K, ids=[f"{b:g}" for b, _ in BEST_K])
def test_clickhouse_best_k_table(bits, k):
    assert F.clickhouse_best_k(bits) == k


# ClickHouse's own gtest (src/Interpreters/tests/gtest_bloom_filter_hash.cpp) and a few derived by hand.
BEST_PRACTICE = [(0.001, (15, 7)), (0.025, (8, 4)), (0.05, (7, 3)), (0.1, (5, 3)), (0.01, (10, 5)),
                 (1e-6, (19, 13))]


@pytest.mark.parametrize("p,expected", BEST_PRACTICE, ids=[f"{p:g}" for p, _ in BEST_PRACTICE])
def test_clickhouse_best_practice(p, expected):
    assert F.clickhouse_best_practice(p) == expected


def test_probability_table_equals_clickhouse_literal_rows():
    t = F._clickhouse_probability_table()
    # Rows of ClickHouse's probability_lookup_table, as written in BloomFilterHash.h.
    literal = {
        2: [1.0, 0.393, 0.400],
        6: [1.0, 0.154, 0.0804, 0.0609, 0.0561, 0.0578, 0.0638],
        10: [1.0, 0.0952, 0.0329, 0.0174, 0.0118, 0.00943, 0.00844, 0.00819, 0.00846],
        15: [1.0, 0.0645, 0.0156, 0.00596, 0.003, 0.00183, 0.00128, 0.001, 0.000852, 0.000775, 0.000744],
        20: [1.0, 0.0488, 0.00906, 0.0027, 0.00108, 0.00053, 0.000303, 0.000196, 0.00014, 0.000108,
             8.89e-05, 7.77e-05, 7.12e-05, 6.79e-05, 6.71e-05],
    }
    for b, row in literal.items():
        assert t[b][:len(row)] == row, b


def test_hash128to64_is_cityhash_v1_0_2():
    """ClickHouse's bit position hash: Hash128to64(uint128(CityHash64(s), seed)) == CityHash64WithSeeds(s, 0, seed)."""
    from clickhouse_cityhash.cityhash import CityHash64, CityHash64WithSeeds

    for s in [b"", b"a", b"kraken", b"x" * 100]:
        h = CityHash64(s)
        for seed in F.CLICKHOUSE_BF_SEEDS[:3]:
            got = int(F._hash128to64(np.uint64(h), np.uint64(seed)))
            assert got == CityHash64WithSeeds(s, 0, int(seed)), (s, int(seed))


WILSON = [((10, 100, 0.95), (0.0552, 0.1744)), ((0, 100, 0.95), (0.0, 0.0370)), ((50, 100, 0.95), (0.4038, 0.5962))]


@pytest.mark.parametrize("args,expected", WILSON, ids=["10of100", "0of100", "50of100"])
def test_wilson_interval(args, expected):
    lo, hi = F.wilson_interval(*args)
    assert lo == pytest.approx(expected[0], abs=5e-4) and hi == pytest.approx(expected[1], abs=5e-4)


@pytest.mark.parametrize("args", [(1, 0), (5, 3), (-1, 10)], ids=["no-trials", "hits>trials", "negative"])
def test_wilson_rejects_bad_counts(args):
    with pytest.raises(SkipidxError):
        F.wilson_interval(*args)


def test_bad_bits_rejected():
    with pytest.raises(SkipidxError):
        F.clickhouse_best_k(0)
    with pytest.raises(SkipidxError):
        F.measure_sbbf(-1.0)
    with pytest.raises(SkipidxError):
        F.clickhouse_best_practice(1.5)


def test_bench_fpp_cli_writes_table_json_png(tmp_path, capsys):
    from skipidx.apps.research.cli import bench_main

    assert bench_main(["fpp", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Parquet spec" in out and "ClickHouse" in out
    for name in ("fpp.md", "fpp.json", "fpp.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    data = json.loads((tmp_path / "fpp.json").read_text())
    assert [p["bits_per_value"] for p in data["spec_points"]] == [b for b, _ in F.SPEC_TABLE]
    assert all(r["spec_within_rounding"] for r in data["spec_rounding"]), data["spec_rounding"]
    assert len(data["sweep"]) >= 10
    with open(tmp_path / "fpp.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bench_cli_errors():
    from skipidx.apps.research.cli import bench_main

    with pytest.raises(SkipidxError, match="unknown bench"):
        bench_main(["nope"])
    with pytest.raises(SkipidxError, match="conf"):
        bench_main(["fpp", "--conf", "2"])
