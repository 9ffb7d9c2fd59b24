"""skipidx.expr.kernels._search vs chDB (ClickHouse) on a few hundred rows: golden answers per row.

Rows: the shared edge cases (separators at the edges, UTF-8, invalid UTF-8,
NUL bytes), seeded log lines and stdlib source lines (tests/functions_corpus.py)
plus lines of the demo's log generator. chDB evaluates hasToken,
hasTokenCaseInsensitive, ``LIKE '%x%'`` and multiSearchAny over the same
Parquet file; every non-NULL row must agree (NULL rows are the caller's).
"""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from functions_corpus import chdb_columns, corpus, sql_str, tokens_by_frequency, write_parquet
from skipidx.apps import datagen
from skipidx.expr.kernels import _search as S
from skipidx.expr.kernels._arrow import _offsets_data

pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SEED = 4242


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rows = corpus(n_log=150, n_src=150, seed=SEED)
    batch = next(datagen.generate(200, 42))
    rows += [m.encode() for m in batch.column(batch.schema.get_field_index("msg")).to_pylist()]
    arr = pa.array(rows, pa.binary())
    path = write_parquet(pa.table({"s": arr}), tmp_path_factory.mktemp("search") / "rows.parquet")
    offsets, buf = _offsets_data(arr)
    return rows, path, offsets, buf


def _needles(rows: list) -> list[bytes]:
    rnd = random.Random(SEED)
    toks = tokens_by_frequency(rows)
    picked = toks[:15] + rnd.sample(toks[15:], 30)
    picked += [t[1:] for t in rnd.sample(toks, 10) if len(t) > 1]        # suffixes: inside tokens
    picked += [t.upper() for t in rnd.sample(toks, 8)]
    picked += [datagen.RARE_TOKEN.encode(), datagen.FREQUENT_TOKEN.encode(), datagen.ABSENT_TOKEN.encode(),
               b"abc", b"\xff", "caf\u00e9".encode(), "\u00e9".encode(), b"ERROR", b"a", b"x"]
    return list(dict.fromkeys(picked))


def _assert_rows(mine, theirs: list, rows: list, label: str) -> None:
    bad = [i for i, (r, t) in enumerate(zip(rows, theirs)) if r is not None and bool(mine[i]) != bool(t)]
    assert not bad, (f"{label}: {len(bad)} rows differ from chDB, first: "
                     + "; ".join(f"#{i} {rows[i]!r}: mine={bool(mine[i])} chdb={theirs[i]}" for i in bad[:4]))


@pytest.mark.parametrize("ci", [False, True], ids=["hasToken", "hasTokenCaseInsensitive"])
def test_token_rows_match_chdb(data, ci):
    rows, path, offsets, buf = data
    needles = _needles(rows)
    fn = "hasTokenCaseInsensitive" if ci else "hasToken"
    theirs = chdb_columns(path, [f"{fn}(s, {sql_str(n)})" for n in needles])
    for n, col in zip(needles, theirs):
        _assert_rows(S.token_rows(offsets, buf, n, ci), col, rows, f"{fn}({n!r})")


def test_contains_rows_match_chdb_like(data):
    rows, path, offsets, buf = data
    rnd = random.Random(SEED + 1)
    present = [r for r in rows if r]
    subs = _needles(rows) + [r[a:a + rnd.randint(1, 8)] for r in rnd.sample(present, 40)
                             for a in [rnd.randrange(len(r))]]
    subs += [b" ", b"\x00", b"\n", b"a b", b"ms ", b"=", b"\xc3"]
    # '%', '_' and '\' are LIKE syntax: keep the plain substring patterns ('%lit%').
    subs = [s for s in dict.fromkeys(subs) if s and not set(s) & set(b"%_\\")]
    theirs = chdb_columns(path, [f"s LIKE {sql_str(b'%' + s + b'%')}" for s in subs])
    for s, col in zip(subs, theirs):
        _assert_rows(S.contains_rows(offsets, buf, s), col, rows, f"LIKE '%{s!r}%'")


def test_any_rows_match_chdb(data):
    rows, path, offsets, buf = data
    rnd = random.Random(SEED + 2)
    toks = tokens_by_frequency(rows)
    lists = [[b""], [b"", b"zzabsent"], [b"abc"], [b"ERROR", b"timeout"], [b"\xff", b"\x00"],
             [datagen.RARE_TOKEN.encode(), datagen.ABSENT_TOKEN.encode()], [b".", b"(", b"|", b"\\"]]
    lists += [rnd.sample(toks, rnd.randint(1, 5)) for _ in range(15)]
    exprs = ["multiSearchAny(s, [" + ", ".join(sql_str(n) for n in ns) + "])" for ns in lists]
    theirs = chdb_columns(path, exprs)
    for ns, col in zip(lists, theirs):
        _assert_rows(S.any_rows(offsets, buf, ns), col, rows, f"multiSearchAny({ns!r})")
