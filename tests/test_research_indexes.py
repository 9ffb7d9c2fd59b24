"""`skipidx bench indexes` on a small generated log table: ideal by full scan, no candidate below it,
outputs written, ClickHouse (chDB) and the skipidx engine side by side."""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skipidx.core.errors import ParseError, SkipidxError
from skipidx.apps.research import indexes as I
from skipidx.apps.research.querygen import FAMILIES, Query, generate_queries, read_queries, write_queries
from skipidx.apps.research.whereexpr import And, Atom, Not, Or, parse_where

ROWS = 24_000
IG = 1024          # rows per data granule -> 24 granules


@pytest.fixture(scope="module")
def values():
    from skipidx.apps.datagen import generate_table

    return generate_table(ROWS, seed=3).column("msg")


HANDWRITTEN = [
    Query("custom", "hasToken(msg, 'kraken') OR hasToken(msg, 'zyzzyva')"),
    Query("custom", "hasToken(msg, 'timeout') AND msg LIKE '%refused%'"),
    Query("custom", "NOT hasToken(msg, 'kraken')"),
    Query("custom", "msg IN ('nope', 'also nope')"),
    Query("custom", "multiSearchAny(msg, ['kraken', 'zyzzyva'])"),
    Query("custom", "startsWith(msg, 'emit grpc')"),
    Query("custom", "msg != 'x'"),
]


@pytest.fixture(scope="module")
def queries(values):
    return generate_queries(values, "msg", seed=5, per_family=1, granularity=IG) + HANDWRITTEN


@pytest.fixture(scope="module")
def bench(values, queries):
    cands = I.default_candidates(("token", "ngram3", "value"), fixed_bytes=(256, 4096), fpps=(0.01,),
                                 granularities=(1, 4), adaptive_sizings=("parquet", "exact"))
    return I.run_bench_indexes(values, queries, column="msg", source="test", index_granularity=IG,
                               candidates=cands, show_progress=False, keep_masks=True)


def _chdb_ideal_masks(values, queries):
    """Granules holding a match, by ClickHouse itself (an oracle independent of skipidx's functions)."""
    import chdb

    tbl = pa.table({"r": pa.array(np.arange(len(values), dtype=np.uint64)), "msg": values})
    out = []
    for q in queries:
        res = chdb_oracle.query(f"SELECT DISTINCT intDiv(r, {IG}) AS g FROM Python(tbl) WHERE {q.where} ORDER BY g",
                         "ArrowTable")
        m = np.zeros((len(values) + IG - 1) // IG, dtype=bool)
        m[res.column(0).to_numpy().astype(np.int64)] = True
        out.append(m)
    return out


def test_generator_covers_every_family_and_is_seeded(values, queries):
    fams = {q.family for q in queries}
    assert set(FAMILIES) <= fams, set(FAMILIES) - fams
    again = generate_queries(values, "msg", seed=5, per_family=1, granularity=IG)
    assert [q.where for q in again] == [q.where for q in queries[:len(again)]]
    other = generate_queries(values, "msg", seed=6, per_family=1, granularity=IG)
    assert [q.where for q in other] != [q.where for q in again]


def test_granule_frequency_counts_granules_once_per_token(values):
    from skipidx.apps.research.querygen import granule_frequency

    toks = [b"kraken", b"timeout", b"kraken", b"zyzzyva"]
    got = granule_frequency(values, toks, IG, batch_rows=5000)
    ideal = I.ideal_granule_masks([Query("x", f"hasToken(msg, '{t.decode()}')") for t in toks], values, IG)
    assert got.tolist() == [int(m.sum()) for m in ideal]
    assert got[0] == got[2] > 0 and got[3] == 0


def test_ideal_equals_a_full_scan_in_clickhouse(values, queries, bench):
    oracle = _chdb_ideal_masks(values, queries)
    mine = I.ideal_granule_masks(queries, values, IG)
    for q, o, m, info in zip(queries, oracle, mine, bench.queries):
        assert np.array_equal(o, m), q.where
        assert info.ideal == int(o.sum()), q.where
    by_family = {q.query.family: q.ideal for q in bench.queries}
    assert by_family["absent_token"] == 0 and by_family["absent_substring"] == 0
    assert by_family["token_rare"] <= max(1, 0.05 * bench.granules) + 1


def test_no_candidate_drops_a_matching_granule(queries, values, bench):
    ideal = I.ideal_granule_masks(queries, values, IG)
    assert len(bench.candidates) >= 12
    for r in bench.candidates:
        for q, m, kept_mask, qr, info in zip(queries, ideal, bench.masks[r.candidate.name], r.queries,
                                             bench.queries):
            assert not (m & ~kept_mask).any(), f"{r.candidate.name} dropped a matching granule for {q.where}"
            assert qr.kept == int(kept_mask.sum()) >= info.ideal
            assert 0 <= qr.prune_ms and qr.est_ms >= qr.prune_ms


def test_candidate_figures_are_consistent(bench):
    by = {r.candidate.name: r for r in bench.candidates}
    for r in bench.candidates:
        c = r.candidate
        n_ig = -(-bench.granules // c.granularity)
        assert r.index_bytes == pytest.approx(r.mean_filter_bytes * n_ig)
        assert r.bytes_per_row == pytest.approx(r.index_bytes / ROWS)
        assert 0.0 < r.fill_mean <= 1.0 and 0.0 <= r.expected_fpp <= 1.0
        assert r.build_s >= r.hash_s > 0
        if c.kind == "fixed":
            assert r.index_bytes == c.num_bytes * n_ig
        if c.kind == "same-bytes":
            twin = by[c.matched_to]
            assert 0 <= r.index_bytes - twin.index_bytes < 32 * n_ig, (r.index_bytes, twin.index_bytes)
        # Absent-token probes measure the built filters' FPP: the exact value from their bit counts
        # (mean over filters of the product of the 8 words' fill) lies in the probes' interval.
        if r.bits_fpp > 0.002:
            lo, hi = r.probe_ci
            assert lo <= r.bits_fpp <= hi, (c.name, r.probe_fpp, r.bits_fpp, lo, hi)
    # A bigger fixed filter never keeps more granules than a smaller one of the same tokenizer (same seed).
    small, big = by["token_256B_g1"], by["token_4096B_g1"]
    assert all(b.kept <= s.kept for s, b in zip(small.queries, big.queries))
    assert small.fill_mean > big.fill_mean
    # Negations and the value index on token queries cannot prune: every granule kept.
    for name in ("token_fpp0_01_g1", "value_fpp0_01_g1"):
        i_not = [q.query.where for q in bench.queries].index("NOT hasToken(msg, 'kraken')")
        assert by[name].queries[i_not].kept == bench.granules


def test_exact_sizing_is_proportional_and_has_twins(bench):
    by = {r.candidate.name: r for r in bench.candidates}
    ex, pw = by["token_fpp0_01_exact_g1"], by["token_fpp0_01_g1"]
    assert not ex.candidate.has_ddl and pw.candidate.has_ddl
    assert "bench only" in ex.candidate.index_type_sql()
    # The fewest blocks meeting the target at each granule's distinct count: every granule meets it,
    # and (no power-of-two steps) the filters are smaller than the engine's on average.
    assert ex.expected_fpp <= 0.01
    assert ex.mean_filter_bytes <= pw.mean_filter_bytes
    assert ex.mean_filter_bytes == pytest.approx(I.putze_min_bytes(int(ex.ndv_mean), 0.01), rel=0.05)
    twins = [n for n in by if n.startswith("same_token_")]
    assert any(n.endswith("_for_fpp0_01_exact_g1") for n in twins) and any(n.endswith("_for_fpp0_01_g1") for n in twins)
    assert len(set(by)) == len(bench.candidates)   # names are unique (they name ClickHouse indexes too)


def test_reports_written_with_chdb_columns(tmp_path, values, bench):
    from skipidx.apps.research.chdb_compare import run_chdb
    from skipidx.apps.research.indexes_report import write_indexes_report

    bench.chdb = run_chdb(bench, values, show_progress=False)
    try:
        ch = bench.chdb
        assert ch["ideal_matches_scan"], (ch["ideal"], [q.ideal for q in bench.queries])
        mirrored = {x["mirrors"] for x in ch["indexes"]}
        assert "token_256B_g1" in mirrored and "ngram3_4096B_g4" in mirrored and "value_fpp0_01_g1" in mirrored
        for x in ch["indexes"]:
            assert len(x["kept"]) == len(bench.queries) == len(x["latency_ms"])
            assert x["bytes_uncompressed"] > 0
            # ClickHouse never drops a matching granule either.
            assert all(k >= q.ideal for k, q in zip(x["kept"], bench.queries)), x["name"]
        # Building every index in the one INSERT gives ClickHouse the same granules as ADD + MATERIALIZE.
        ins = run_chdb(bench, values, show_progress=False, measure_latency=False, kinds=("same-bytes",),
                       build="insert")
        alter_kept = {x["name"]: x["kept"] for x in ch["indexes"]}
        assert ins["build"] == "insert" and ins["indexes"]
        for x in ins["indexes"]:
            assert x["kept"] == alter_kept[x["name"]], x["name"]
        paths = write_indexes_report(bench, str(tmp_path), "t")
    finally:
        bench.chdb = None
    md = (tmp_path / "t.md").read_text()
    assert "ClickHouse" in md and "tokenbf_v1(256," in md and "same bytes" in md
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["chdb"]["indexes"] and len(data["queries"]) == len(bench.queries)
    assert {c["name"] for c in data["candidates"]} == {r.candidate.name for r in bench.candidates}
    assert data["head_to_head"]
    for p in paths["png"]:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # The JSON reads back into a result that renders the same tables.
    from skipidx.apps.research.indexes_report import indexes_markdown

    back = I.BenchResult.from_dict(data)
    assert indexes_markdown(back) == md
    with pytest.raises(SkipidxError):
        I.BenchResult.from_dict({"candidates": []})


def test_engine_agrees_with_the_bench(values, bench):
    """The same DDL through skipidx.connect keeps exactly the granules the bench computed."""
    from skipidx.apps.research.engine_compare import run_engine

    names = ["token_256B_g1", "token_fpp0_01_g4", "ngram3_4096B_g1", "ngram3_fpp0_01_g1", "value_fpp0_01_g1"]
    e = run_engine(bench, values, names=names, show_progress=False)
    assert e["agrees_with_bench"], e["mismatches"]
    assert [x["name"] for x in e["indexes"]] == names


def test_cli_end_to_end(tmp_path, values, capsys):
    from skipidx.apps.research.cli import bench_main

    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": np.arange(len(values)), "msg": values}), data)
    qfile = tmp_path / "q.sql"
    qfile.write_text("-- family: rare\nhasToken(msg, 'kraken')  -- the planted needle\n\n"
                     "-- family: substring\nmsg LIKE '%rake%'\n")
    rc = bench_main(["indexes", str(data), "--column", "msg", "--queries", str(qfile), "--out", str(tmp_path / "o"),
                     "--tokenizers", "token,ngram4", "--fixed-bytes", "512", "--fpp", "0.01", "--granularity", "1",
                     "--index-granularity", "2048", "--no-chdb"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "hasToken(msg, 'kraken')" in out and "ngram4_fpp0_01_g1" in out
    data_json = json.loads((tmp_path / "o" / "indexes.json").read_text())
    assert [q["family"] for q in data_json["queries"]] == ["rare", "substring"]
    assert data_json["queries"][0]["matching_rows"] > 0
    for name in ("indexes.md", "indexes_pareto.png", "indexes_families.png"):
        assert (tmp_path / "o" / name).stat().st_size > 0
    # `bench report` re-renders the JSON into the same markdown; a run of other queries cannot lend its chDB side.
    js = str(tmp_path / "o" / "indexes.json")
    assert bench_main(["report", js, "--out", str(tmp_path / "r"), "--no-plots"]) == 0
    assert (tmp_path / "r" / "indexes.md").read_text() == (tmp_path / "o" / "indexes.md").read_text()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**data_json, "queries": data_json["queries"][:1]}))
    with pytest.raises(SkipidxError, match="same queries"):
        bench_main(["report", js, "--chdb-from", str(other), "--out", str(tmp_path / "r")])


@pytest.mark.parametrize("argv,match", [
    (["indexes", "/nonexistent.parquet", "--column", "msg"], "no such file"),
    (["indexes", "demo:1000", "--column", "other"], "msg"),
    (["indexes", "demo:1000", "--column", "msg", "--tokenizers", "bigram"], "unknown tokenizer"),
    (["indexes", "demo:1000", "--column", "msg", "--fixed-bytes", "12"], "32"),
    (["indexes", "demo:1000", "--column", "msg", "--fpp", "1.5"], "fpp"),
    (["indexes", "demo:1000", "--column", "msg", "--granularity", "0"], "GRANULARITY"),
    (["indexes", "demo:1000"], "--column"),
], ids=["missing-file", "demo-column", "tokenizer", "bytes", "fpp", "granularity", "no-column"])
def test_cli_bad_arguments(argv, match):
    from skipidx.apps.research.cli import bench_main

    with pytest.raises(SkipidxError, match=match):
        bench_main(argv)


def test_cli_wrong_column_type(tmp_path):
    from skipidx.apps.research.cli import bench_main

    p = tmp_path / "n.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), p)
    with pytest.raises(SkipidxError, match="string column"):
        bench_main(["indexes", str(p), "--column", "x"])
    with pytest.raises(SkipidxError, match="not in the file"):
        bench_main(["indexes", str(p), "--column", "msg"])


def test_queries_file_round_trip_and_errors(tmp_path):
    qs = [Query("a", "hasToken(msg, 'x')", "n1"), Query("a", "msg LIKE '%it''s%'"), Query("b", "msg = 'v'")]
    p = write_queries(qs, str(tmp_path / "q.sql"))
    back = read_queries(p)
    assert [(q.family, q.where) for q in back] == [(q.family, q.where) for q in qs]
    assert back[0].note == "n1"
    bad = tmp_path / "bad.sql"
    bad.write_text("hasToken(msg, 'x')\nmsg LIKE\n")
    with pytest.raises(SkipidxError, match="line 2"):
        read_queries(str(bad))
    empty = tmp_path / "empty.sql"
    empty.write_text("-- nothing\n")
    with pytest.raises(SkipidxError, match="no WHERE"):
        read_queries(str(empty))


PARSE = [
    ("hasToken(msg, 'a')", Atom("hasToken", "msg", (b"a",))),
    ("msg NOT LIKE '%a\\_b%'", Atom("notLike", "msg", (b"%a\\_b%",))),
    ("msg = 'it''s'", Atom("equals", "msg", (b"it's",))),
    ("msg <> '\\x41\\n'", Atom("notEquals", "msg", (b"A\n",))),
    ("msg NOT IN ('a', 'b')", Atom("notIn", "msg", ((b"a", b"b"),))),
    ("multiSearchAny(msg, ['a','é'])", Atom("multiSearchAny", "msg", ((b"a", "é".encode()),))),
    ("NOT (hasToken(msg,'a') OR msg LIKE 'b%') AND startsWith(msg, 'c')",
     And((Not(Or((Atom("hasToken", "msg", (b"a",)), Atom("like", "msg", (b"b%",))))),
          Atom("startsWith", "msg", (b"c",))))),
]


@pytest.mark.parametrize("text,tree", PARSE, ids=[f"p{i}" for i in range(len(PARSE))])
def test_where_parser(text, tree):
    assert parse_where(text) == tree


@pytest.mark.parametrize("text,col", [("hasToken(msg 'a')", 14), ("msg LIKE", 9), ("", 1), ("msg = 'a' AND", 14),
                                      ("frob(msg, 'a')", 1), ("msg < 'a'", 5), ("msg = 'a' 'b'", 11)],
                         ids=["comma", "pattern", "empty", "dangling-and", "function", "operator", "trailing"])
def test_where_parser_errors_have_a_place(text, col):
    with pytest.raises(ParseError) as e:
        parse_where(text)
    assert e.value.line == 1 and e.value.column == col, str(e.value)


def test_bench_rejects_other_columns(values):
    with pytest.raises(SkipidxError, match="only 'msg'"):
        I.run_bench_indexes(values, [Query("x", "hasToken(other, 'a')")], show_progress=False)


def test_bench_where_is_the_engines_bound_tree(tmp_path):
    """The bench reads its clauses with the engine's parser and binder: the same bound tree
    as a SELECT's WHERE on a String column, and its RPN is the planner's."""
    import skipidx
    from skipidx.apps.research.whereexpr import bind
    from skipidx.expr.binder import bind_where
    from skipidx.planner.rpn import build_rpn
    from skipidx.sql.parser import parse_expression

    text = "NOT (hasToken(msg, 'a') OR msg LIKE '%b_c%') AND msg NOT IN ('x', 'y') AND multiSearchAny(msg, ['q'])"
    with skipidx.connect(str(tmp_path / "db")) as db:
        db.sql("CREATE TABLE t (msg String) ENGINE = MergeTree ORDER BY tuple()")
        assert bind(text) == bind_where(db.table_meta("t"), parse_expression(text))
    rpn = build_rpn(bind(text))
    assert [a.func for a in rpn.atoms] == ["hasToken", "like", "in", "multiSearchAny"]
