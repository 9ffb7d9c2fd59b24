"""The filter zoo: no false negative, and measured FPP within a Wilson interval of the analytic value."""
import numpy as np
import pyarrow as pa
import pytest

from skipidx.apps.research import zoo
from skipidx.core.tokenizer_api import get_tokenizer


def _corpus(rows=4096, vocab=6000, words=6, seed=7):
    rng = np.random.default_rng(seed)
    lex = np.array([f"w{i:05d}x{int(v)}" for i, v in enumerate(rng.integers(0, 10**6, vocab))])
    idx = rng.zipf(1.3, size=(rows, words)) % vocab
    return pa.array([" ".join(r) for r in lex[idx]])


@pytest.fixture(scope="module")
def sets():
    return zoo.granule_sets(_corpus(), get_tokenizer("token"), 256)


def test_granule_sets_are_the_distinct_tokens(sets):
    vals = _corpus().to_pylist()
    tok = get_tokenizer("token")
    for g in (0, 5, sets.n_granules - 1):
        rows, h = tok.hash_column(pa.array(vals[g * 256:(g + 1) * 256]), 0)
        assert np.array_equal(np.unique(h), sets.hashes[sets.bounds[g]:sets.bounds[g + 1]])


def test_zoo_no_false_negative_and_fpp_in_interval(sets):
    max_ndv = int(sets.ndv.max())
    filters = zoo.default_filters(fpps=(0.1, 0.01), max_ndv=max_ndv, fuse=("xor8", "fuse8"))
    names = {f.family for f in filters}
    assert {"sbbf per granule", "sbbf fixed", "classic bloom", "exact sets"} <= names
    rows = zoo.run_zoo(sets, filters, corpus="synthetic", tokenizer="token", n_present=100, n_absent=1500,
                       seed=3, conf=0.999, reps=1)
    assert len(rows) == len(filters)
    for r in rows:
        assert r.kept >= r.ideal > 0, r
        if r.family == "exact sets":
            assert r.kept == r.ideal and r.absent_fp == 0
            continue
        assert r.absent_trials == 1500 * sets.n_granules
        assert r.fpp_ci_lo <= r.fpp_analytic <= r.fpp_ci_hi, r
    # the classic filter and the fixed SBBF of the same bytes: same granules, same bytes
    by = {r.filter: r for r in rows}
    fixed = [r for r in rows if r.family == "sbbf fixed"]
    assert all(r.bytes == int(r.filter.split()[2]) * sets.n_granules for r in fixed)
    # the exact rule meets its target in every granule, so on average too
    assert by["sbbf exact fpp=0.01"].fpp_analytic <= 0.01


def test_fpp_interval_widens_for_shared_false_positives():
    from skipidx.apps.research.fpp import wilson_interval

    rng = np.random.default_rng(5)
    indep = rng.random((2000, 64)) < 0.01                  # every (probe, granule) on its own
    shared = np.repeat(rng.random((2000, 1)) < 0.01, 64, axis=1)   # identical granules: one draw per probe
    for ka in (indep, shared):
        lo, hi = zoo.fpp_interval(ka, 0.999)
        wlo, whi = wilson_interval(int(ka.sum()), int(ka.size), 0.999)
        assert lo <= wlo and hi >= whi and lo <= 0.01 <= hi
    lo, hi = zoo.fpp_interval(shared, 0.999)
    wlo, whi = wilson_interval(int(shared.sum()), int(shared.size), 0.999)
    assert hi - lo > 4 * (whi - wlo)        # 2000 effective trials, not 128,000
    assert zoo.fpp_interval(indep, 0.999)[1] - zoo.fpp_interval(indep, 0.999)[0] < 1.5 * (
        wilson_interval(int(indep.sum()), int(indep.size), 0.999)[1]
        - wilson_interval(int(indep.sum()), int(indep.size), 0.999)[0])


def test_false_negative_is_detected(sets):
    class Broken(zoo.ExactSets):
        name = "broken"

        def keep(self, probes):
            out = super().keep(probes)
            out[:, 0] = False
            return out

    with pytest.raises(zoo.SkipidxError, match="false negative"):
        zoo.run_zoo(sets, [Broken()], corpus="c", tokenizer="token", n_present=400, n_absent=10)


def test_bad_fuse_kind():
    with pytest.raises(zoo.SkipidxError):
        zoo.FuseFamily("xor9")


def test_stdlib_corpus_is_seeded_and_reproducible():
    from skipidx.apps.research.corpora import load_corpus

    a, da = load_corpus("stdlib", 3000, seed=5)
    b, db_ = load_corpus("stdlib", 3000, seed=5)
    c, _ = load_corpus("stdlib", 3000, seed=6)
    assert len(a) == 3000 and a.equals(b) and da == db_ and not a.equals(c)
    assert "standard library" in da and "seed 5" in da


def test_site_packages_corpus_is_seeded_and_described():
    import re

    from skipidx.apps.research.corpora import load_corpus, site_packages_root

    a, da = load_corpus("site-packages", 2000, seed=5)
    b, db_ = load_corpus("site-packages", 2000, seed=5)
    c, dc = load_corpus("site-packages", 2000, seed=6)
    assert len(a) == 2000 and a.equals(b) and da == db_ and not a.equals(c)
    assert site_packages_root() in da and "seed 5" in da
    files, tops = re.search(r"([\d,]+) \.py files in (\d+) top-level", da).groups()
    assert int(files.replace(",", "")) > 100 and int(tops) > 5
    h = re.search(r"sha256 of the files used ([0-9a-f]{16})", da).group(1)
    assert h != re.search(r"sha256 of the files used ([0-9a-f]{16})", dc).group(1)


def test_unknown_corpus():
    from skipidx.apps.research.corpora import load_corpus

    with pytest.raises(zoo.SkipidxError, match="unknown corpus"):
        load_corpus("nope", 10)


def test_text_index_keeps_the_ideal():
    vals = _corpus(rows=2048)
    toks = zoo.present_tokens(vals, 20, seed=1)
    rows = zoo.run_corpus(vals, corpus="synthetic", rows_per_granule=256, tokens=toks, n_absent=200, reps=1)
    text = [r for r in rows if r.family == "text index"]
    assert len(text) == 1 and text[0].bytes > 0
    assert text[0].kept == text[0].ideal == [r for r in rows if r.family == "exact sets"][0].kept


def test_bench_zoo_cli_writes_tables_and_figures(tmp_path):
    from skipidx.apps.research.cli import bench_main

    out = tmp_path / "zoo"
    assert bench_main(["zoo", "--corpora", "stdlib", "--rows", "1024", "--index-granularity", "256",
                       "--queries", "10", "--absent", "50", "--reps", "1", "--no-text", "--no-chdb",
                       "--tokenizers", "token,ngram3", "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert {"zoo.md", "zoo.json", "zoo_bytes_vs_kept.png", "zoo_fpp_vs_bits.svg", "zoo_cost.png",
            "zoo_equal_bytes.png", "zoo_equal_bytes.svg"} <= names
    md = (out / "zoo.md").read_text()
    assert "At equal bytes" in md and "| stdlib | ngram3 |" in md and "| stdlib | token |" in md
    with pytest.raises(zoo.SkipidxError, match="--rows"):
        bench_main(["zoo", "--rows", "0", "--out", str(out)])
    with pytest.raises(zoo.SkipidxError, match="unknown zoo tokenizer"):
        bench_main(["zoo", "--tokenizers", "token,ngram9", "--out", str(out)])


@pytest.mark.parametrize("tokenizer", ["ngram3", "sparse_grams"])
def test_substring_zoo_against_chdb(tokenizer):
    """LIKE '%s%' through n-gram / sparse-gram filters, the engine's text index and ClickHouse's
    Bloom-filter and text indexes on the same granules: no false negative, chDB's ideal is the
    zoo's (checked inside), ClickHouse's Bloom index has the budget's bytes, and the two text
    indexes keep the same granules."""
    pytest.importorskip("chdb")
    vals = _corpus(rows=1024)
    needles = zoo.substring_needles(vals, 12, seed=2)
    assert len(needles) == 12 and all(3 <= len(n) <= 12 and "%" not in n and "'" not in n for n in needles)
    rows = zoo.run_corpus(vals, corpus="synthetic", rows_per_granule=128, needles=needles, tokenizer=tokenizer,
                          n_absent=100, reps=1, with_chdb=True)
    ideal = rows[0].ideal
    truth = zoo.substring_truth(vals, needles, 128)
    assert ideal == int(truth.sum()) > 0
    by_fam = {}
    for r in rows:
        by_fam.setdefault(r.family, []).append(r)
        assert r.kept >= r.ideal == ideal, r
    assert set(by_fam) >= {"sbbf per granule", "classic bloom", "exact sets", "text index", "chDB Bloom index",
                           "chDB text index"}
    sets = zoo.granule_sets(vals, zoo.zoo_tokenizer(tokenizer), 128)
    budgets = zoo.budget_bytes(sets)
    assert sorted(r.bytes for r in by_fam["chDB Bloom index"]) == sorted(b * sets.n_granules for b in budgets)
    assert all(r.engine == "chDB" and r.bytes_compressed > 0 for r in by_fam["chDB Bloom index"])
    assert by_fam["text index"][0].kept == by_fam["chDB text index"][0].kept
    # a per-granule exact gram set is the floor of every per-granule filter of this tokenizer
    floor = by_fam["exact sets"][0].kept
    assert all(r.kept >= floor for f in ("sbbf per granule", "classic bloom", "chDB Bloom index") for r in by_fam[f])
