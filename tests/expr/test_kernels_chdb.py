"""Differential tests: skipidx.expr.kernels vs chDB (ClickHouse 26.9), row by row.

A seeded corpus (log lines, stdlib source lines, edge cases with NULLs,
multi-byte and invalid UTF-8) goes to chDB as Parquet; for many needles,
patterns and regexes both sides evaluate the function and every row must agree,
NULLs included.
"""
from __future__ import annotations

import datetime
import random

import numpy as np
import pyarrow as pa
import pytest

from functions_corpus import chdb_columns, chdb_error, corpus, sql_str, tokens_by_frequency, write_parquet
from skipidx.core.errors import SkipidxError
from skipidx.expr import kernels as F
from skipidx.expr.kernels import strings as FS
from skipidx.expr.kernels import text as T

chdb = pytest.importorskip("chdb")
pytestmark = pytest.mark.chdb

SEED = 20261121


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rows = corpus()
    arr = pa.array(rows, pa.binary())
    path = write_parquet(pa.table({"s": arr}), tmp_path_factory.mktemp("fn") / "corpus.parquet")
    return arr, path, rows


def _as_ints(a) -> list:
    return [None if v is None else int(v) for v in a.to_pylist()]


def _assert_same(mine, theirs: list, rows: list, label: str) -> None:
    got = _as_ints(mine)
    assert len(got) == len(theirs), f"{label}: {len(got)} rows vs chDB {len(theirs)}"
    bad = [i for i, (x, y) in enumerate(zip(got, theirs)) if x != y]
    assert not bad, (f"{label}: {len(bad)} rows differ from chDB, first rows: "
                     + "; ".join(f"#{i} {rows[i]!r}: skipidx={got[i]} chdb={theirs[i]}" for i in bad[:5]))


def _needles(rows: list) -> list[bytes]:
    rnd = random.Random(SEED)
    toks = tokens_by_frequency(rows)
    picked = toks[:25] + rnd.sample(toks[25:], 50)
    picked += [t[: max(1, len(t) // 2)] for t in rnd.sample(toks, 15)]  # prefixes: inside tokens
    picked += [t.upper() for t in rnd.sample(toks, 10)] + [t.lower() for t in rnd.sample(toks, 10)]
    picked += [b"abc", b"\xff", b"ab\xff", "caf\u00e9".encode(), "\u00e9".encode(), "\U0001F600".encode(),
               b"ERROR", b"error", b"ABC", b"zzzzabsent", b"x", b"a", b"def", b"GR\xc3\x96SSE"]
    return list(dict.fromkeys(picked))


# multiSearchAny picks a strategy by the number of needles (one whole-buffer
# pass per needle, or one RE2 pass over the alternation); force each in turn.
_STRATEGIES = {"auto": None, "passes": 1 << 30, "re2-alternation": 0}


def _force(strategy: str, monkeypatch) -> None:
    """Force multiSearchAny to one strategy (or leave the automatic choice)."""
    if _STRATEGIES[strategy] is not None:
        monkeypatch.setattr(FS, "_MSA_PASSES_MAX", _STRATEGIES[strategy])


@pytest.mark.parametrize("ci", [False, True], ids=["hasToken", "hasTokenCaseInsensitive"])
def test_has_token_matches_chdb(data, ci):
    arr, path, rows = data
    needles = _needles(rows)
    fn = "hasTokenCaseInsensitive" if ci else "hasToken"
    theirs = chdb_columns(path, [f"{fn}(s, {sql_str(n)})" for n in needles])
    for n, col in zip(needles, theirs):
        _assert_same(F.has_token(arr, n, case_insensitive=ci), col, rows, f"{fn}({n!r})")


def test_has_token_empty_needle_and_or_null_match_chdb(data):
    arr, path, rows = data
    theirs = chdb_columns(path, ["hasToken(s, '')", "hasTokenOrNull(s, '')", "hasTokenOrNull(s, 'a b')",
                                 "hasTokenOrNull(s, 'abc')", "hasTokenCaseInsensitive(s, '')"])
    _assert_same(F.has_token(arr, b""), theirs[0], rows, "hasToken(s, '')")
    _assert_same(F.has_token_or_null(arr, b""), theirs[1], rows, "hasTokenOrNull(s, '')")
    _assert_same(F.has_token_or_null(arr, b"a b"), theirs[2], rows, "hasTokenOrNull(s, 'a b')")
    _assert_same(F.has_token_or_null(arr, b"abc"), theirs[3], rows, "hasTokenOrNull(s, 'abc')")
    _assert_same(F.has_token_case_insensitive(arr, b""), theirs[4], rows, "hasTokenCaseInsensitive(s, '')")


@pytest.mark.parametrize("needle", [b"a b", b"a.b", b"-", b" abc", b"abc\n", b"a_b", b"\x00"],
                         ids=["space", "dot", "dash", "leading-space", "newline", "underscore", "nul"])
def test_has_token_bad_needle_errors_like_chdb(data, needle):
    _, path, _ = data
    err = chdb_error(f"SELECT hasToken(s, {sql_str(needle)}) FROM file('{path}', Parquet)")
    assert err is not None and "Needle must not contain whitespace or separator characters" in err, err
    with pytest.raises(SkipidxError, match="Needle must not contain whitespace or separator characters"):
        F.has_token(pa.array([b"x"]), needle)


_GOLDEN_PATTERNS = [
    b"", b"%", b"%%", b"%%%", b"_", b"__", b"___", b"a_", b"a%", b"%a", b"%a%", b"a%b", b"a_b", b"%a_b%",
    b"a\\%", b"a\\%b", b"%\\%%", b"%\\_%", b"\\_%", b"a\\\\b", b"%\\\\%", b"a\\b", b"a\\d", b"%a\\b%",
    b"a.b", b"a*b", b"(a)%", b"%[b]%", b"%{c}%", b"%^$%", b"%|%", b"%+?", b"%.", b"%...%",
    b"abc", b"%abc%", b"abc%", b"%abc", b"%abc_", b"_abc%", b"%b%c%", "caf\u00e9%".encode(), "%\u00e9%".encode(),
    "caf_ au lait".encode(), "%\U0001F600%".encode(), "emoji _ x".encode(), "emoji __ x".encode(), "\u65e5\u672c\u8a9e _%".encode(),
    b"%\xff%", b"a%\xff", b"%ERROR%", b"%error%", b"ERROR:%", b"%Timeout!", b"%\\\\", b"a\\_b", b"%\n%", b"a_b\n",
    b"%_", b"_%", b"%_%", b"%__%", b"%a%b%c%", b"%timeout%", b"%select%",
]


def _random_patterns(rows: list, count: int) -> list[bytes]:
    """LIKE patterns carved from real rows: substrings with wildcards, escapes and edges."""
    rnd = random.Random(SEED + 1)
    texts = [r.decode("utf-8", "ignore") for r in rows if r]
    out = []
    while len(out) < count:
        t = rnd.choice(texts)
        if not t:
            continue
        a = rnd.randint(0, len(t) - 1)
        b = rnd.randint(a + 1, min(len(t), a + 12))
        piece = []
        for ch in t[a:b]:
            r = rnd.random()
            if ch in "%_\\":
                piece.append("\\" + ch if r < 0.7 else ch)
            elif r < 0.12:
                piece.append("_")
            elif r < 0.18:
                piece.append("%")
            elif r < 0.22:
                piece.append(ch.upper() if ch.islower() else ch.lower())
            else:
                piece.append(ch)
        p = "".join(piece)
        if p.endswith("\\") and not p.endswith("\\\\"):
            p += "\\"
        shape = rnd.random()
        if shape < 0.5:
            p = "%" + p + "%"
        elif shape < 0.65:
            p = p + "%"
        elif shape < 0.8:
            p = "%" + p
        elif shape < 0.9:
            p = t if rnd.random() < 0.5 else t.replace("%", "\\%").replace("_", "\\_")
        out.append(p.encode())
    return out


@pytest.mark.parametrize("mode", ["like", "not_like", "ilike", "not_ilike"])
def test_like_matches_chdb(data, mode):
    arr, path, rows = data
    patterns = list(dict.fromkeys(_GOLDEN_PATTERNS + _random_patterns(rows, 250)))
    ci = "ilike" in mode
    neg = mode.startswith("not")
    op = ("NOT " if neg else "") + ("ILIKE" if ci else "LIKE")
    theirs = chdb_columns(path, [f"s {op} {sql_str(p)}" for p in patterns])
    # Known divergence (see functions.like): ClickHouse's case-insensitive UTF-8
    # searcher steps over the bytes after a stray UTF-8 lead byte, so on rows that
    # are not valid UTF-8 ILIKE may miss a match that RE2 finds. Those rows are
    # compared for LIKE only.
    keep = [i for i, r in enumerate(rows) if not ci or r is None or _valid_utf8(r)]
    assert not ci or len(keep) > len(rows) * 0.9
    for p, col in zip(patterns, theirs):
        mine = F.like(arr, p, negated=neg, case_insensitive=ci)
        if ci:
            mine = mine.take(pa.array(keep))
            col = [col[i] for i in keep]
        _assert_same(mine, col, [rows[i] for i in keep] if ci else rows, f"s {op} {p!r}")


def _valid_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("pattern", [b"a\\", b"%\\", b"abc\\\\\\"], ids=["a-bs", "pct-bs", "three-bs"])
def test_like_trailing_backslash_errors_like_chdb(data, pattern):
    _, path, _ = data
    err = chdb_error(f"SELECT s LIKE {sql_str(pattern)} FROM file('{path}', Parquet)")
    assert err is not None and "Invalid escape sequence at the end of LIKE pattern" in err, err
    with pytest.raises(SkipidxError, match="Invalid escape sequence at the end of LIKE pattern"):
        F.like(pa.array([b"x"]), pattern)


@pytest.mark.parametrize("strategy", list(_STRATEGIES), ids=list(_STRATEGIES))
def test_starts_ends_with_and_multi_search_any_match_chdb(data, strategy, monkeypatch):
    _force(strategy, monkeypatch)
    arr, path, rows = data
    rnd = random.Random(SEED + 2)
    present = [r for r in rows if r]
    affixes = [b"", b"a", b"abc", b"ERROR", b"INFO ", b"\xff", "caf\u00e9".encode(), b"    ", b"def ", b"#", b"\\"]
    affixes += [r[: rnd.randint(1, 6)] for r in rnd.sample(present, 25)]
    affixes += [r[-rnd.randint(1, 6):] for r in rnd.sample(present, 25)]
    affixes = list(dict.fromkeys(affixes))
    exprs = [f"startsWith(s, {sql_str(a)})" for a in affixes] + [f"endsWith(s, {sql_str(a)})" for a in affixes]
    theirs = chdb_columns(path, exprs)
    for a, col in zip(affixes, theirs[: len(affixes)]):
        _assert_same(F.starts_with(arr, a), col, rows, f"startsWith({a!r})")
    for a, col in zip(affixes, theirs[len(affixes):]):
        _assert_same(F.ends_with(arr, a), col, rows, f"endsWith({a!r})")

    toks = tokens_by_frequency(rows)
    lists = [[b""], [b"", b"zzabsent"], [b"abc"], [b"ERROR", b"timeout"], [b"\xff", b"\x00"],
             ["\u00e9".encode(), "\U0001F600".encode()], [b".", b"(", b"|", b"\\"], [b"a" * 3, b"abc", b"ab"]]
    lists += [rnd.sample(toks, rnd.randint(1, 6)) for _ in range(20)]
    lists += [[r[a: a + rnd.randint(1, 8)] for r in rnd.sample(present, 3) for a in [rnd.randint(0, max(0, len(r) - 1))]]
              for _ in range(10)]
    exprs = ["multiSearchAny(s, [" + ", ".join(sql_str(n) for n in ns) + "])" for ns in lists]
    theirs = chdb_columns(path, exprs)
    for ns, col in zip(lists, theirs):
        _assert_same(F.multi_search_any(arr, ns), col, rows, f"multiSearchAny({ns!r})")


_REGEXES = [
    "", "a.b", "^abc", "abc$", "(?i)error", r"\d+", r"^\d{4}-\d{2}-\d{2}$", "\u00e9.", "^.$", "^..$", "^a.$",
    "[a-z]+_[0-9]+", "^$", ".", r"\bdef\b", "time(out)?", "(?-s)a.b", "a\nb", "^[A-Z]+ ", r"\s$", "^\\s",
    "[^\\x00-\\x7f]", "\U0001F600", "caf.", "(GET|POST) /", r"=\d+$", "x_y|a_b", "^#", r"\.\.\.", "(?i)^info",
]


def test_match_matches_chdb(data):
    arr, path, rows = data
    theirs = chdb_columns(path, [f"match(s, {sql_str(r)})" for r in _REGEXES])
    for r, col in zip(_REGEXES, theirs):
        _assert_same(F.match(arr, r), col, rows, f"match({r!r})")


def test_bad_regex_errors_like_chdb(data):
    _, path, _ = data
    err = chdb_error(f"SELECT match(s, '(') FROM file('{path}', Parquet)")
    assert err is not None and "cannot compile re2" in err, err
    with pytest.raises(SkipidxError, match="RE2"):
        F.match(pa.array([b"x"]), "(")


def test_lower_upper_length_match_chdb(data):
    arr, path, rows = data
    lo, up, ln = chdb_columns(path, ["lower(s)", "upper(s)", "length(s)"])
    to_b = lambda v: None if v is None else (v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape"))
    assert [to_b(v) for v in F.lower(arr).to_pylist()] == [to_b(v) for v in lo], "lower differs from chDB"
    assert [to_b(v) for v in F.upper(arr).to_pylist()] == [to_b(v) for v in up], "upper differs from chDB"
    assert F.length(arr).to_pylist() == ln, "length differs from chDB"


def test_has_token_of_lower_matches_chdb(data):
    arr, path, rows = data
    theirs = chdb_columns(path, ["hasToken(lower(s), 'error')", "lower(s) LIKE '%timeout%'"])
    _assert_same(F.has_token(F.lower(arr), b"error"), theirs[0], rows, "hasToken(lower(s), 'error')")
    _assert_same(F.like(F.lower(arr), b"%timeout%"), theirs[1], rows, "lower(s) LIKE '%timeout%'")


# ---------------------------------------------------------------- numbers, IN, NULLs, logic


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    rnd = np.random.default_rng(SEED)
    n = 3000
    specials_i64 = np.array([0, 1, -1, 2**63 - 1, -2**63, 2**53, 2**53 + 1, -2**53 - 1, 255, 256, -128], np.int64)
    specials_u64 = np.array([0, 1, 2**64 - 1, 2**63, 2**63 - 1, 2**53 + 1, 255, 256, 300, 7, 2], np.uint64)
    i64 = np.concatenate([specials_i64, rnd.integers(-1000, 1000, n - len(specials_i64))])
    u64 = np.concatenate([specials_u64, rnd.integers(0, 1000, n - len(specials_u64)).astype(np.uint64)])
    f64 = np.where(rnd.random(n) < 0.5, rnd.normal(0, 500, n).round(0), rnd.normal(0, 500, n).round(1))
    f64[:6] = [np.nan, np.inf, -np.inf, 0.0, 2.5, 2**53]
    null = rnd.random(n) < 0.05
    null[:12] = False
    cols = {
        "i8": pa.array(rnd.integers(-128, 128, n).astype(np.int8)),
        "u8": pa.array(rnd.integers(0, 256, n).astype(np.uint8)),
        "i32": pa.array(rnd.integers(-2**31, 2**31, n).astype(np.int32)),
        "i64": pa.array(i64),
        "u64": pa.array(u64),
        "f64": pa.array(f64),
        "f32": pa.array(f64.astype(np.float32)),
        "ni64": pa.array(i64 % 50, mask=null),
        "ns": pa.array([None if m else f"v{v % 40}" for v, m in zip(i64, null)], pa.string()),
        "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(x)) for x in rnd.integers(-40, 40, n)]),
    }
    table = pa.table(cols)
    path = write_parquet(table, tmp_path_factory.mktemp("num") / "numbers.parquet")
    return table, path


_CMP_CONSTS = [0, 1, -1, 2, 255, 256, 300, -129, 2**63 - 1, 2**63, 2**64 - 1, -2**63, 2.5, -2.5, 1e300, -0.0,
               float(2**53), 2**53 + 1, float("inf"), float("-inf"), float("nan")]


def _ch_num(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


@pytest.mark.parametrize("col", ["i8", "u8", "i32", "i64", "u64", "f64", "f32", "ni64"])
def test_compare_with_constants_matches_chdb(numbers, col):
    table, path = numbers
    ops = ["=", "!=", "<", "<=", ">", ">="]
    cases = [(op, c) for op in ops for c in _CMP_CONSTS]
    theirs = chdb_columns(path, [f"{col} {op} {_ch_num(c)}" for op, c in cases])
    rows = table.column(col).to_pylist()
    for (op, c), their in zip(cases, theirs):
        _assert_same(F.compare(op, table.column(col), c), their, rows, f"{col} {op} {c!r}")


@pytest.mark.parametrize("pair", ["i64,u64", "u64,i8", "i64,f64", "u64,f64", "f32,i32", "u8,i8", "ni64,i64",
                                  "f64,f32"])
def test_compare_columns_matches_chdb(numbers, pair):
    table, path = numbers
    a, b = pair.split(",")
    ops = ["=", "!=", "<", "<=", ">", ">="]
    theirs = chdb_columns(path, [f"{a} {op} {b}" for op in ops])
    rows = list(zip(table.column(a).to_pylist(), table.column(b).to_pylist()))
    for op, their in zip(ops, theirs):
        _assert_same(F.compare(op, table.column(a), table.column(b)), their, rows, f"{a} {op} {b}")


def test_string_and_date_comparisons_match_chdb(numbers):
    table, path = numbers
    cases = [("ns", op, c) for op in ["=", "!=", "<", ">="] for c in ["v1", "v10", "", "w", "v"]]
    cases += [("d", op, c) for op in ["=", "<", ">", "<="] for c in ["2024-01-01", "2024-1-15", "20231201"]]
    theirs = chdb_columns(path, [f"{c} {op} {sql_str(v)}" for c, op, v in cases])
    for (c, op, v), their in zip(cases, theirs):
        _assert_same(F.compare(op, table.column(c), v), their, table.column(c).to_pylist(), f"{c} {op} {v!r}")


def test_in_not_in_match_chdb(numbers):
    table, path = numbers
    cases = [
        ("ni64", [1, 2, 3]), ("ni64", [1, None]), ("ni64", [None]), ("ni64", [7, 2.5, 300, -1]),
        ("u8", [1, 2.5, 300, -1, 255]), ("i8", [-128, 127, 128, -129, 0]), ("u64", [2**64 - 1, 7, -1]),
        ("i64", [2**63 - 1, -2**63, 0, 2**53 + 1]), ("f64", [2.5, 0, float("inf")]), ("f32", [2.5, 0.1]),
        ("ns", ["v1", "v2", None]), ("ns", [None]), ("d", ["2024-01-01", "2024-01-05"]),
    ]
    exprs = []
    for col, vals in cases:
        lit = ", ".join("NULL" if v is None else (sql_str(v) if isinstance(v, str) else _ch_num(v)) for v in vals)
        exprs += [f"{col} IN ({lit})", f"{col} NOT IN ({lit})"]
    theirs = chdb_columns(path, exprs)
    for k, (col, vals) in enumerate(cases):
        rows = table.column(col).to_pylist()
        _assert_same(F.is_in(table.column(col), vals), theirs[2 * k], rows, f"{col} IN {vals}")
        _assert_same(F.is_in(table.column(col), vals, negated=True), theirs[2 * k + 1], rows, f"{col} NOT IN {vals}")


def test_null_tests_and_three_valued_logic_match_chdb(numbers):
    table, path = numbers
    exprs = ["ni64 IS NULL", "ns IS NOT NULL",
             "(ni64 > 20) AND (ns = 'v1')", "(ni64 > 20) OR (ns = 'v1')", "NOT (ni64 > 20)",
             "NOT ((ni64 < 5) OR (ns != 'v3')) AND (i8 > 0)"]
    theirs = chdb_columns(path, exprs)
    ni, ns, i8 = table.column("ni64"), table.column("ns"), table.column("i8")
    mine = [F.is_null(ni), F.is_not_null(ns),
            F.and_(F.compare(">", ni, 20), F.compare("=", ns, "v1")),
            F.or_(F.compare(">", ni, 20), F.compare("=", ns, "v1")),
            F.not_(F.compare(">", ni, 20)),
            F.and_(F.not_(F.or_(F.compare("<", ni, 5), F.compare("!=", ns, "v3"))), F.compare(">", i8, 0))]
    rows = list(zip(ni.to_pylist(), ns.to_pylist()))
    for e, m, their in zip(exprs, mine, theirs):
        _assert_same(m, their, rows, e)
    # The WHERE keeps exactly the rows chDB keeps.
    where = "WHERE (ni64 > 20) OR (ns = 'v1')"
    (kept,) = chdb_columns(path, ["rn"], where=where)
    mask = F.where_mask(mine[3])
    assert np.flatnonzero(mask.to_numpy(zero_copy_only=False)).tolist() == kept, "WHERE rows differ"


@pytest.mark.parametrize("expr", ["i64 % 2", "i64 % 7", "u64 % 3", "i8 % u8", "u8 % i8", "i32 + i32", "u8 + u8",
                                  "u8 - u8", "i8 * i8", "u64 + i64", "i64 - u64", "i64 / 3", "f64 % 2", "ni64 % 3",
                                  "u8 * 2", "f32 + f32", "i8 % 2", "i32 * i64"])
def test_arithmetic_values_and_types_match_chdb(numbers, expr):
    table, path = numbers
    a, op, b = expr.split()
    divisor_col = op == "%" and b in table.column_names
    where = f"WHERE {b} != 0" if divisor_col else ""
    t = table.filter(F.where_mask(F.compare("!=", table.column(b), 0))) if divisor_col else table
    vals, typ = chdb_columns(path, [expr, f"toTypeName({expr})"], where=where)
    rhs = t.column(b) if b in t.column_names else F.literal(int(b))
    mine = F.arithmetic(op, t.column(a), rhs)
    ch_names = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
                "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "float": "Float32", "double": "Float64"}
    want_type = typ[0].decode().removeprefix("Nullable(").removesuffix(")")
    assert ch_names[str(mine.type)] == want_type, f"{expr}: type {mine.type} vs chDB {typ[0]}"
    got = mine.to_pylist()
    for i, (x, y) in enumerate(zip(got, vals)):
        if isinstance(y, float) and isinstance(x, float):
            assert (x == y) or (x != x and y != y) or abs(x - y) <= 1e-12 * max(1.0, abs(y)), f"{expr} row {i}: {x} vs {y}"
        else:
            assert x == y, f"{expr} row {i}: skipidx {x} vs chDB {y}"


def test_modulo_by_zero_errors_like_chdb(numbers):
    table, path = numbers
    err = chdb_error(f"SELECT i64 % (u8 - u8) FROM file('{path}', Parquet)")
    assert err is not None and "Division by zero" in err, err
    with pytest.raises(SkipidxError, match="Division by zero"):
        F.arithmetic("%", table.column("i64"), 0)


EXTRACT_PATTERNS = [r"\d+", r"(\d)(\d)", r"=(\w+)", r"(?:ERROR|WARN) (\w+)", r"[a-z]+", r"(?P<w>[a-z]+)\d",
                    r"\((\w)", r"[(](\w)", r"\Q(\E(\w)", r"(z)?a", r"^$", r"(\pL+)", r"[]a]+", r"\s(\S+)$"]


@pytest.mark.parametrize("pattern", EXTRACT_PATTERNS, ids=range(len(EXTRACT_PATTERNS)))
def test_extract_vs_chdb(data, pattern):
    arr, path, rows = data
    lit = pattern.replace("\\", "\\\\").replace("'", "\\'")
    theirs = chdb_columns(path, [f"extract(s, '{lit}')"])[0]
    mine = T.extract(arr, pattern).to_pylist()
    mine = [None if v is None else (v.encode() if isinstance(v, str) else v) for v in mine]
    bad = [i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y]
    assert not bad, f"extract {pattern!r}: {len(bad)} rows differ from chDB, first: " + "; ".join(
        f"#{i} {rows[i]!r}: skipidx={mine[i]!r} chdb={theirs[i]!r}" for i in bad[:4])
