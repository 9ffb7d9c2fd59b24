"""sbbf's size rules ('exact' default, 'parquet', 'lance'): sizes, measured FPP, validation, old params.

Oracles: ``SBBF.fpp_estimate`` (Putze/Poisson) for the definition of "exact",
the research bench's scalar bisection ``putze_min_bytes``, ``optimal_num_bytes``
for the power-of-two rules, and random absent hashes probed against built filters.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from skipidx.core.sizing import num_bytes as num_bytes_for_ndv, num_bytes as num_bytes_for_rule
from skipidx.core.errors import CorruptionError, SkipidxError
from skipidx.indexes.base import IndexDef, get_index_type
from skipidx.apps.research.indexes import putze_min_bytes
from skipidx.core.sbbf import MAX_BYTES, SBBF, SBBFBank, exact_num_bytes, optimal_num_bytes


def make(kwargs=(), name="idx", column_type=pa.string()):
    d = IndexDef(name, "c", None, "sbbf", ("token",), tuple(kwargs))
    return get_index_type("sbbf")(d, column_type)


# (ndv, fpp, exact bytes, Arrow's power-of-two bytes): boundaries where Arrow's rule misses the target
# (25 @ 1 %: 32 B estimates 1.14 %; 27_000 / 100_000 @ 1 %) or wastes up to 2x (1000, 5000, 10**6).
GOLDEN = [
    (0, 0.01, 32, 32),
    (1, 0.01, 32, 32),
    (24, 0.01, 32, 32),
    (25, 0.01, 64, 32),
    (1000, 0.01, 1344, 2048),
    (1000, 0.1, 768, 1024),
    (5000, 0.025, 5376, 8192),
    (12_345, 0.5, 5024, 8192),
    (23_800, 0.01, 31_328, 32_768),
    (27_000, 0.01, 35_552, 32_768),
    (100_000, 0.01, 131_616, 131_072),
    (100_000, 0.001, 211_136, 262_144),
    (1_000_000, 0.01, 1_316_160, 2_097_152),
]


@pytest.mark.parametrize("ndv,fpp,exact,parquet", GOLDEN, ids=[f"ndv{n}-fpp{f}" for n, f, _, _ in GOLDEN])
def test_exact_size_golden(ndv, fpp, exact, parquet):
    got = int(exact_num_bytes(np.array([ndv]), fpp)[0])
    assert got == exact, f"exact size {got} != golden {exact}"
    assert got >= 32 and got % 32 == 0
    if ndv:
        assert SBBF.fpp_estimate(got, ndv) <= fpp, "the exact size must meet the target"
        if got > 32:
            assert SBBF.fpp_estimate(got - 32, ndv) > fpp, "one block fewer must miss the target"
    assert int(num_bytes_for_ndv(np.array([ndv]), fpp)[0]) == parquet
    assert int(num_bytes_for_rule(np.array([ndv]), fpp, "exact")[0]) == exact
    assert int(num_bytes_for_rule(np.array([ndv]), fpp, "parquet")[0]) == parquet


@pytest.mark.parametrize("fpp", [0.0001, 0.001, 0.01, 0.025, 0.3, 0.9], ids=lambda f: f"fpp{f}")
def test_rules_agree_with_scalar_oracles(fpp):
    ndv = np.unique(np.concatenate([np.arange(0, 300), np.geomspace(300, 3_000_000, 60).astype(np.int64)]))
    exact = exact_num_bytes(ndv, fpp)
    assert exact.tolist() == [putze_min_bytes(int(n), fpp) for n in ndv], "vectorized != research bisection"
    lance = num_bytes_for_rule(ndv, fpp, "lance")
    assert lance.tolist() == [32 if n == 0 else optimal_num_bytes(int(n), fpp, "lance") for n in ndv]
    assert ((exact <= lance) & (lance < 2 * exact)).all(), "lance is the exact size rounded up to a power of two"


def test_exact_shape_cap_and_errors():
    nd = np.array([[0, 5], [5, 10**6]])
    got = exact_num_bytes(nd, 0.01)
    assert got.shape == (2, 2) and got[0, 1] == got[1, 0] and got.dtype == np.int64
    assert exact_num_bytes(np.array([10**9]), 0.001, max_bytes=1 << 20).tolist() == [1 << 20]
    assert exact_num_bytes(np.array([], np.int64), 0.01).shape == (0,)
    assert int(exact_num_bytes(np.array([10**12]), 1e-6)[0]) == MAX_BYTES
    for bad_ndv, bad_fpp, msg in [([-1], 0.01, ">= 0"), ([np.inf], 0.01, "finite"), (["a"], 0.01, "numeric"),
                                  ([5], 0.0, "fpp must be"), ([5], 1.0, "fpp must be"), ([5], True, "fpp must be")]:
        with pytest.raises(SkipidxError, match=msg):
            exact_num_bytes(np.array(bad_ndv), bad_fpp)


def test_non_power_of_two_filters_are_valid():
    hashes = np.random.default_rng(5).integers(0, 2**63, 500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    f = SBBF(96)
    f.insert_hashes(hashes)
    assert f.check_hashes(hashes).all() and f.num_blocks == 3
    bank = SBBFBank.from_num_bytes(np.array([96, 1344, 32]))
    ids = np.repeat(np.arange(3), [100, 300, 100])
    bank.insert(ids, hashes)
    assert bank.check_pairs(ids, hashes).all()
    assert bank.filter(1) == _single(1344, hashes[100:400]), "bank filter != the same filter built alone"


def _single(nbytes, hashes):
    f = SBBF(nbytes)
    f.insert_hashes(hashes)
    return f


BAD = [
    ((("size_rule", "pow2"),), "size_rule must be one of 'exact', 'parquet', 'lance', got 'pow2'"),
    ((("size_rule", 3),), "size_rule must be one of"),
    ((("size_rule", None),), "size_rule must be one of"),
]


@pytest.mark.parametrize("kwargs,message", BAD, ids=[repr(k[0][1]) for k, _ in BAD])
def test_validator_rejects_bad_rule(kwargs, message):
    with pytest.raises(SkipidxError) as e:
        make(kwargs, name="rule_idx")
    assert "'rule_idx'" in str(e.value) and message in str(e.value), str(e.value)


def test_default_rule_and_bloom_filter_stays_parquet():
    assert make().params["size_rule"] == "exact"
    bf = get_index_type("bloom_filter")(IndexDef("b", "c", None, "bloom_filter", (), ()), pa.string())
    assert "size_rule" not in bf.params, "bloom_filter keeps Arrow's rule (its filters equal pyarrow's)"


def _log_lines(n_rows, seed=11):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i:06d}" for i in range(200_000)])
    words = vocab[rng.zipf(1.15, n_rows * 10) % vocab.size].reshape(n_rows, 10)
    return pa.array([" ".join(r) for r in words])


@pytest.mark.parametrize("rule", ["exact", "parquet", "lance"])
def test_built_sizes_follow_the_rule(rule):
    arr = _log_lines(4000)
    zs = np.arange(0, 4000, 500, dtype=np.int64)
    zl = np.full(zs.shape, 500, dtype=np.int64)
    idx = make((("size_rule", rule),))
    g = idx.aggregator().build(arr, zs, zl)
    want = num_bytes_for_rule(g.ndv, 0.01, rule)
    assert g.num_bytes.tolist() == want.tolist()
    back = idx.granules_from_arrow(g.to_arrow("p"))
    assert np.array_equal(back.words, g.words)


def test_measured_fpp_meets_target():
    """100k random absent hashes per zone: the exact rule's filters meet 1 % within statistics."""
    fpp = 0.01
    arr = _log_lines(16_000)
    zs = np.arange(0, 16_000, 1000, dtype=np.int64)
    zl = np.full(zs.shape, 1000, dtype=np.int64)
    g = make((("fpp", fpp),)).aggregator().build(arr, zs, zl)
    assert (g.ndv > 1000).all() and (g.num_bytes % 32 == 0).all()
    assert (g.num_bytes & (g.num_bytes - 1) != 0).any(), "exact sizes need not be powers of two"
    probes = np.random.default_rng(2).integers(0, 2**64 - 1, 100_000, dtype=np.uint64, endpoint=True)
    hits = g.bank.check_matrix(probes)
    n = probes.size
    per = hits.mean(axis=1)
    # a zone's measured rate is Binomial(n, p <= fpp) / n: 5 sigma per zone, 4 sigma for the mean over zones
    assert (per <= fpp + 5 * np.sqrt(fpp * (1 - fpp) / n)).all(), per
    assert per.mean() <= fpp + 4 * np.sqrt(fpp * (1 - fpp) / (n * per.size)), per.mean()
    # and the bit-count estimate of every built filter agrees
    assert (g.fpp_estimate <= fpp * 1.1).all(), g.fpp_estimate


def test_params_without_rule_load_with_the_parquet_rule():
    """Index files of tables made before size_rule existed (no key) keep loading, sized by Arrow's rule."""
    arr = _log_lines(3000)
    zs = np.arange(0, 3000, 1000, dtype=np.int64)
    zl = np.full(zs.shape, 1000, dtype=np.int64)
    old = make((("size_rule", "parquet"),))
    t = old.aggregator().build(arr, zs, zl).to_arrow("p")
    params = json.loads(t.schema.metadata[b"skipidx.params"])
    del params["size_rule"]
    legacy = t.replace_schema_metadata({**t.schema.metadata, b"skipidx.params": json.dumps(params).encode()})
    now = make()   # the same DDL today: default 'exact'
    g = now.granules_from_arrow(legacy)
    assert g.num_bytes.tolist() == num_bytes_for_ndv(g.ndv, 0.01).tolist()
    assert "size_rule" not in g.params
    # a file that names a different rule is a different index
    with pytest.raises(CorruptionError, match="built with params"):
        now.granules_from_arrow(t)
    # a legacy file's sizes are still checked against the parquet rule
    t_exact = now.aggregator().build(arr, zs, zl).to_arrow("p")
    p2 = json.loads(t_exact.schema.metadata[b"skipidx.params"])
    del p2["size_rule"]
    bad = t_exact.replace_schema_metadata({**t_exact.schema.metadata, b"skipidx.params": json.dumps(p2).encode()})
    with pytest.raises(CorruptionError, match="filter sizes do not match"):
        now.granules_from_arrow(bad)


def test_stored_params_without_rule_keep_building_with_the_parquet_rule():
    """Given the table's recorded params (no size_rule), new parts are sized by Arrow's rule and load back."""
    d = IndexDef("idx", "c", None, "sbbf", ("token",), ())
    legacy = {k: v for k, v in make().params.items() if k != "size_rule"}
    idx = get_index_type("sbbf")(d, pa.string(), stored_params=legacy)
    assert idx.params == legacy
    arr = _log_lines(2000)
    zs = np.arange(0, 2000, 1000, dtype=np.int64)
    zl = np.full(zs.shape, 1000, dtype=np.int64)
    g = idx.aggregator().build(arr, zs, zl)
    assert g.num_bytes.tolist() == num_bytes_for_ndv(g.ndv, 0.01).tolist()
    assert np.array_equal(make().granules_from_arrow(g.to_arrow("p")).words, g.words)
    same = get_index_type("sbbf")(d, pa.string(), stored_params=make().params)
    assert same.params["size_rule"] == "exact"
