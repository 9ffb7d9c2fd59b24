"""Golden tests of the SQL front end: statements -> AST, precedence, literals and
escapes (checked against chDB), comments, positions, errors with their places,
and to_sql round trips."""
from __future__ import annotations

from skipidx.apps.research import chdb_session as chdb_oracle  # one chDB per process
import math

import pytest

from skipidx.core.errors import ParseError, SkipidxError
from skipidx.sql import MAX_EXPRESSION_DEPTH, parse, parse_expression
from skipidx.sql import ast as A
from skipidx.sql.ast import Pos

# ---------------------------------------------------------------- builders


def col(name: str, table: str | None = None) -> A.Column:
    return A.Column(name, table)


def i(v: int) -> A.Literal:
    return A.Literal(v, "int")


def fl(v: float) -> A.Literal:
    return A.Literal(v, "float")


def s(v: bytes) -> A.Literal:
    return A.Literal(v, "string")


NULL = A.Literal(None, "null")
TRUE = A.Literal(True, "bool")
FALSE = A.Literal(False, "bool")


def fn(name: str, *args: A.Expr, distinct: bool = False) -> A.FunctionCall:
    return A.FunctionCall(name, tuple(args), distinct)


def op(o: str, left: A.Expr, right: A.Expr) -> A.BinaryOp:
    return A.BinaryOp(o, left, right)


def and_(*args: A.Expr) -> A.BoolOp:
    return A.BoolOp("and", args)


def or_(*args: A.Expr) -> A.BoolOp:
    return A.BoolOp("or", args)


def not_(x: A.Expr) -> A.UnaryOp:
    return A.UnaryOp("not", x)


def neg(x: A.Expr) -> A.UnaryOp:
    return A.UnaryOp("neg", x)


def tup(*items: A.Expr) -> A.TupleLiteral:
    return A.TupleLiteral(tuple(items))


def arr(*items: A.Expr) -> A.ArrayLiteral:
    return A.ArrayLiteral(tuple(items))


def t(name: str) -> A.TableRef:
    return A.TableRef(name)


def sel(*items: A.Expr | A.SelectItem, **kw) -> A.Select:
    its = tuple(x if isinstance(x, A.SelectItem) else A.SelectItem(x) for x in items)
    if isinstance(kw.get("table"), str):
        kw["table"] = t(kw["table"])
    return A.Select(its, **kw)


a, b, c, d = col("a"), col("b"), col("c"), col("d")

# ---------------------------------------------------------------- expressions and precedence

EXPRESSIONS = [
    # boolean structure: OR < AND < NOT < predicates < comparisons
    ("or_and", "a OR b AND c", or_(a, and_(b, c))),
    ("and_or_and", "a AND b OR c AND d", or_(and_(a, b), and_(c, d))),
    ("and_chain_flat", "a AND b AND c AND d", and_(a, b, c, d)),
    ("or_chain_flat", "a OR b OR c", or_(a, b, c)),
    ("parenthesized_chain_kept", "(a AND b) AND c", and_(and_(a, b), c)),
    ("parenthesized_or", "(a OR b) AND c", and_(or_(a, b), c)),
    ("not_binds_below_comparison", "NOT a = 1", not_(op("=", a, i(1)))),
    ("not_binds_above_and", "NOT a AND b", and_(not_(a), b)),
    ("not_not", "NOT NOT a", not_(not_(a))),
    ("not_function_form", "not(a)", not_(a)),
    ("keywords_any_case", "a and b Or NoT c", or_(and_(a, b), not_(c))),
    # comparisons: one level, left-associative
    ("eq", "a = 1", op("=", a, i(1))),
    ("eq_double", "a == 1", op("=", a, i(1))),
    ("ne", "a != 1", op("!=", a, i(1))),
    ("ne_angle", "a <> 1", op("!=", a, i(1))),
    ("lt_le_gt_ge", "a < 1 AND a <= 2 AND a > 3 AND a >= 4",
     and_(op("<", a, i(1)), op("<=", a, i(2)), op(">", a, i(3)), op(">=", a, i(4)))),
    ("comparison_left_assoc", "a = b = c", op("=", op("=", a, b), c)),
    ("comparison_mixed", "a < b = c", op("=", op("<", a, b), c)),
    ("like", "msg LIKE '%x%'", A.Like(col("msg"), s(b"%x%"))),
    ("not_like", "msg NOT LIKE 'x'", A.Like(col("msg"), s(b"x"), negated=True)),
    ("ilike", "msg ILIKE 'x'", A.Like(col("msg"), s(b"x"), case_insensitive=True)),
    ("not_ilike", "msg NOT ILIKE 'x'", A.Like(col("msg"), s(b"x"), negated=True, case_insensitive=True)),
    ("like_then_eq", "a LIKE 'x' = 1", op("=", A.Like(a, s(b"x")), i(1))),
    ("eq_then_like", "a = 1 LIKE 'x'", A.Like(op("=", a, i(1)), s(b"x"))),
    ("like_pattern_additive", "a LIKE b + c", A.Like(a, op("+", b, c))),
    ("not_like_comment_inside", "a NOT /* c */ LIKE 'x'", A.Like(a, s(b"x"), negated=True)),
    ("in", "a IN (1, 2, 3)", A.InList(a, (i(1), i(2), i(3)))),
    ("not_in", "a NOT IN ('x')", A.InList(a, (s(b"x"),), negated=True)),
    ("in_empty", "a IN ()", A.InList(a, ())),
    ("in_tuples", "(a, b) IN ((1, 2), (3, 4))", A.InList(tup(a, b), (tup(i(1), i(2)), tup(i(3), i(4))))),
    ("in_then_eq", "a IN (1) = b", op("=", A.InList(a, (i(1),)), b)),
    ("sum_in", "a + b IN (1)", A.InList(op("+", a, b), (i(1),))),
    ("not_over_not_in", "NOT a NOT IN (1)", not_(A.InList(a, (i(1),), negated=True))),
    ("not_like_then_not_in", "a NOT LIKE 'x' NOT IN (1)",
     A.InList(A.Like(a, s(b"x"), negated=True), (i(1),), negated=True)),
    # predicates sit between NOT and comparisons
    ("is_null", "a IS NULL", A.IsNull(a)),
    ("is_not_null", "a IS NOT NULL", A.IsNull(a, negated=True)),
    ("is_null_over_comparison", "a = b IS NULL", A.IsNull(op("=", a, b))),
    ("is_null_over_sum", "a + 1 IS NOT NULL", A.IsNull(op("+", a, i(1)), negated=True)),
    ("not_is_null", "NOT a IS NULL", not_(A.IsNull(a))),
    ("is_null_is_null", "a IS NULL IS NULL", A.IsNull(A.IsNull(a))),
    ("is_null_and", "a IS NULL AND b", and_(A.IsNull(a), b)),
    ("between", "a BETWEEN 1 AND 2", A.Between(a, i(1), i(2))),
    ("between_then_and", "a BETWEEN 1 AND 2 AND c", and_(A.Between(a, i(1), i(2)), c)),
    ("not_between", "a NOT BETWEEN 1 + 1 AND 2", A.Between(a, op("+", i(1), i(1)), i(2), negated=True)),
    ("between_bound_comparison", "a BETWEEN 1 AND 2 = 2", A.Between(a, i(1), op("=", i(2), i(2)))),
    ("between_subject_comparison", "a = b BETWEEN 1 AND 2", A.Between(op("=", a, b), i(1), i(2))),
    ("between_is_null", "a BETWEEN 1 AND 2 IS NULL", A.IsNull(A.Between(a, i(1), i(2)))),
    ("not_between_over", "NOT a BETWEEN 1 AND 2", not_(A.Between(a, i(1), i(2)))),
    # arithmetic
    ("add_mul", "a + b * c - d", op("-", op("+", a, op("*", b, c)), d)),
    ("mul_left_assoc", "a / b * c % d", op("%", op("*", op("/", a, b), c), d)),
    ("sub_left_assoc", "a - b - c", op("-", op("-", a, b), c)),
    ("paren_arith", "(a + b) * c", op("*", op("+", a, b), c)),
    ("neg_binds_tightest", "-a * b", op("*", neg(a), b)),
    ("neg_neg_column", "- -a", neg(neg(a))),
    ("negative_literal_folded", "-5", i(-5)),
    ("negated_paren_literal_kept", "-(5)", neg(i(5))),
    ("neg_of_negative_literal", "- -5", neg(i(-5))),
    ("minus_negative", "1 - -2", op("-", i(1), i(-2))),
    ("negative_times", "-2 * 3", op("*", i(-2), i(3))),
    ("negative_float", "-1.5e3", fl(-1500.0)),
    ("negative_inf", "-inf", fl(-math.inf)),
    ("uint64_max", "18446744073709551615", i(2**64 - 1)),
    ("int64_min", "-9223372036854775808", i(-(2**63))),
    ("many_leading_zeros", "0" * 5000 + "12", i(12)),
    ("hex_leading_zeros", "0x" + "0" * 40 + "ff", i(255)),
    ("huge_float", "1" * 5000 + ".5", fl(math.inf)),
    ("zero", "0", i(0)),
    ("hex_zero", "0x000", i(0)),
    ("minus_then_comment", "1 --2\n + 3", op("+", i(1), i(3))),
    # literals
    ("literals", "f(1, 1.5, 1e3, 5., 0x1F, 0X1f, 0b101, 010, 1.5e-3, NULL, true, FALSE, inf, Infinity)",
     fn("f", i(1), fl(1.5), fl(1000.0), fl(5.0), i(31), i(31), i(5), i(10), fl(0.0015), NULL, TRUE, FALSE,
        fl(math.inf), fl(math.inf))),
    ("string_utf8", "'héllo ✓'", s("héllo ✓".encode())),
    ("array", "[1, 'a', NULL, [2]]", arr(i(1), s(b"a"), NULL, arr(i(2)))),
    ("array_empty", "[]", arr()),
    ("tuple", "(1, a)", tup(i(1), a)),
    ("tuple_one", "(a,)", tup(a)),
    ("tuple_empty", "()", tup()),
    ("paren_is_not_tuple", "((a))", a),
    # names and calls
    ("function", "hasToken(msg, 'timeout')", fn("hasToken", col("msg"), s(b"timeout"))),
    ("function_no_args", "count()", fn("count")),
    ("count_star", "count(*)", fn("count", A.Star())),
    ("count_distinct", "count(DISTINCT user_id)", fn("count", col("user_id"), distinct=True)),
    ("nested_calls", "lower(trim(msg)) = 'x'", op("=", fn("lower", fn("trim", col("msg"))), s(b"x"))),
    ("keyword_named_function", "if(a, 1, 2)", fn("if", a, i(1), i(2))),
    ("qualified_column", "t.a = 1", op("=", col("a", "t"), i(1))),
    ("backquoted", "`my col` = \"other col\"", op("=", col("my col"), col("other col"))),
    ("backquote_doubled", "`a``b`", col("a`b")),
    ("quoted_escape", r'"a\x41"', col("aA")),
    ("quoted_keyword", "`select` + `NULL`", op("+", col("select"), col("NULL"))),
    ("keyword_like_columns", "type = 'x' AND index = 1 AND format = 2 AND first = last AND settings = values",
     and_(op("=", col("type"), s(b"x")), op("=", col("index"), i(1)), op("=", col("format"), i(2)),
          op("=", col("first"), col("last")), op("=", col("settings"), col("values")))),
    ("identifier_case_kept", "MyCol = myCOL", op("=", col("MyCol"), col("myCOL"))),
    ("in_and_like_as_names", "like(in, between)", fn("like", col("in"), col("between"))),
]


@pytest.mark.parametrize("text,expected", [e[1:] for e in EXPRESSIONS], ids=[e[0] for e in EXPRESSIONS])
def test_expression(text: str, expected: A.Expr) -> None:
    got = parse_expression(text)
    assert got == expected, f"{text!r} parsed as {got!r}"
    # The rendering reads back as the same tree.
    assert parse_expression(got.to_sql()) == got, got.to_sql()
    # And the expression parses the same inside a statement.
    [stmt] = parse(f"SELECT count() FROM t WHERE {text}")
    assert stmt.where == expected


def test_nan_literal() -> None:
    e = parse_expression("nan")
    assert e.kind == "float" and math.isnan(e.value)
    assert e.to_sql() == "nan"


# ---------------------------------------------------------------- string escapes (chDB is the oracle)

ESCAPES = [
    ("hex", r"'a\x41'", b"aA"),
    ("hex_high_byte", r"'\xff'", b"\xff"),
    ("hex_mixed_case", r"'\xFf\x0a'", b"\xff\n"),
    ("doubled_quote", "'it''s'", b"it's"),
    ("only_doubled_quote", "''''", b"'"),
    ("escaped_quote", r"'a\'b'", b"a'b"),
    ("escaped_backslash", r"'a\\b'", b"a\\b"),
    ("control", r"'\n\t\r\0'", b"\n\t\r\x00"),
    ("more_control", r"'\a\b\f\v\e'", b"\x07\x08\x0c\x0b\x1b"),
    ("null_marker_is_empty", r"'a\Nb'", b"ab"),
    ("unknown_escape_keeps_backslash", r"'\q'", b"\\q"),
    ("like_percent_keeps_backslash", r"'100\%'", b"100\\%"),
    ("like_underscore_keeps_backslash", r"'\_'", b"\\_"),
    ("digit_keeps_backslash", r"'\1'", b"\\1"),
    ("upper_x_is_not_hex", r"'\X41'", b"\\X41"),
    ("double_quote", r"'\"'", b'"'),
    ("backquote", r"'\`'", b"`"),
    ("slash", r"'\/'", b"/"),
    ("equals_drops_colon_keeps", r"'\=\:'", b"=\\:"),
    ("del_keeps_backslash", "'\\\x7f'", b"\\\x7f"),
    ("backslash_newline", "'a\\\nb'", b"a\nb"),
    ("backslash_tab_char", "'a\\\tb'", b"a\tb"),
    ("backslash_utf8", "'\\é'", b"\\" + "é".encode()),
    ("utf8", "'é✓'", "é✓".encode()),
    ("raw_newline", "'a\nb'", b"a\nb"),
    ("empty", "''", b""),
]


@pytest.mark.parametrize("literal,expected", [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_string_escapes(literal: str, expected: bytes) -> None:
    got = parse_expression(literal)
    assert got == s(expected), f"{literal!r} -> {got.value!r}"
    assert parse_expression(got.to_sql()) == got


@pytest.mark.chdb
@pytest.mark.parametrize("literal,expected", [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_string_escapes_match_chdb(literal: str, expected: bytes) -> None:
    chdb = pytest.importorskip("chdb")
    out = chdb_oracle.query(f"SELECT hex({literal})", "TabSeparatedRaw").bytes().decode().strip()
    assert bytes.fromhex(out) == expected == parse_expression(literal).value


@pytest.mark.chdb
def test_backslash_before_every_ascii_character_matches_chdb() -> None:
    chdb = pytest.importorskip("chdb")
    chars = [chr(o) for o in range(1, 128) if chr(o) != "x"]  # \x needs two hex digits
    literals = ["'\\" + ch + "'" for ch in chars]
    out = chdb_oracle.query("SELECT " + ", ".join(f"hex({lit})" for lit in literals), "TabSeparatedRaw")
    theirs = [bytes.fromhex(h) for h in out.bytes().decode().rstrip("\n").split("\t")]
    ours = [parse_expression(lit).value for lit in literals]
    assert len(theirs) == len(ours)
    diff = [(ch, th, ou) for ch, th, ou in zip(chars, theirs, ours) if th != ou]
    assert not diff


NUMBERS = ["0", "7", "010", "0x1F", "0X1f", "0b101", "1e3", "1.5e-3", "5.", "1.e2", "2.5",
           "18446744073709551615", "-9223372036854775808", "-7", "-0.5", "inf", "-inf", "INF", "Infinity"]


@pytest.mark.chdb
@pytest.mark.parametrize("text", NUMBERS, ids=NUMBERS)
def test_number_literals_match_chdb(text: str) -> None:
    chdb = pytest.importorskip("chdb")
    out = chdb_oracle.query(f"SELECT toString({text})", "TabSeparatedRaw").bytes().decode().strip()
    got = parse_expression(text)
    if got.kind == "int":
        assert str(got.value) == out
    else:
        assert got.kind == "float" and got.value == float(out)


# ---------------------------------------------------------------- statements

LOGS_DDL = """
CREATE TABLE IF NOT EXISTS logs (
    ts DateTime,
    level LowCardinality(String),
    msg String,
    trace_id Nullable(String),
    tags Array(String),
    type UInt8,
    INDEX tok msg TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1,
    INDEX ngr lower(msg) TYPE ngrambf_v1(3, 65536, 2, 0),
    INDEX bf trace_id TYPE bloom_filter(0.01) GRANULARITY 4,
    INDEX mm ts TYPE minmax,
    INDEX ad msg TYPE sbbf('ngram', n = 4, fpp = 0.01)
) ENGINE = MergeTree() ORDER BY (level, ts) SETTINGS index_granularity = 8192, other = 'x'
"""

STATEMENTS = [
    ("create_full", LOGS_DDL, A.CreateTable(
        table=t("logs"),
        columns=(
            A.ColumnDef("ts", A.TypeExpr("DateTime")),
            A.ColumnDef("level", A.TypeExpr("LowCardinality", (A.TypeExpr("String"),))),
            A.ColumnDef("msg", A.TypeExpr("String")),
            A.ColumnDef("trace_id", A.TypeExpr("Nullable", (A.TypeExpr("String"),))),
            A.ColumnDef("tags", A.TypeExpr("Array", (A.TypeExpr("String"),))),
            A.ColumnDef("type", A.TypeExpr("UInt8")),
        ),
        indexes=(
            A.IndexClause("tok", col("msg"), "tokenbf_v1", (i(32768), i(3), i(0)), (), 1),
            A.IndexClause("ngr", fn("lower", col("msg")), "ngrambf_v1", (i(3), i(65536), i(2), i(0))),
            A.IndexClause("bf", col("trace_id"), "bloom_filter", (fl(0.01),), (), 4),
            A.IndexClause("mm", col("ts"), "minmax"),
            A.IndexClause("ad", col("msg"), "sbbf", (s(b"ngram"),),
                          (A.KeywordArg("n", i(4)), A.KeywordArg("fpp", fl(0.01)))),
        ),
        engine="MergeTree",
        order_by=(col("level"), col("ts")),
        settings=(A.KeywordArg("index_granularity", i(8192)), A.KeywordArg("other", s(b"x"))),
        if_not_exists=True,
    )),
    ("create_minimal", "create table t (a Int64)", A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")),))),
    ("create_external_inferred", "CREATE TABLE logs ENGINE = ParquetFiles('lake/**/*.parquet')",
     A.CreateTable(t("logs"), (), engine="ParquetFiles", engine_args=(s(b"lake/**/*.parquet"),), has_elements=False)),
    ("create_external_columns", "CREATE TABLE logs (msg String, INDEX tok msg TYPE tokenbf_v1(512, 3, 0)) "
                                "ENGINE ParquetFiles('a/*.parquet')",
     A.CreateTable(t("logs"), (A.ColumnDef("msg", A.TypeExpr("String")),),
                   (A.IndexClause("tok", col("msg"), "tokenbf_v1", (i(512), i(3), i(0))),),
                   engine="ParquetFiles", engine_args=(s(b"a/*.parquet"),))),
    ("alter_refresh", "ALTER TABLE logs REFRESH", A.AlterRefresh(t("logs"))),
    ("refresh_is_a_name", "SELECT refresh FROM refresh",
     A.Select((A.SelectItem(col("refresh")),), t("refresh"))),
    ("create_order_by_single", "CREATE TABLE t (a Int64) ENGINE = MergeTree ORDER BY a",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")),), engine="MergeTree", order_by=(a,))),
    ("create_order_by_tuple_empty", "CREATE TABLE t (a Int64) ORDER BY tuple()",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")),), order_by=())),
    ("create_order_by_tuple_fn", "CREATE TABLE t (a Int64, b Int64) ORDER BY tuple(a, b)",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")), A.ColumnDef("b", A.TypeExpr("Int64"))),
                   order_by=(a, b))),
    ("create_order_by_paren", "CREATE TABLE t (a Int64) ORDER BY (a)",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")),), order_by=(a,))),
    ("create_engine_no_equals_type_args", "CREATE TABLE t (d DateTime('UTC'), x Decimal(10, -2)) ENGINE MergeTree",
     A.CreateTable(t("t"), (A.ColumnDef("d", A.TypeExpr("DateTime", (s(b"UTC"),))),
                            A.ColumnDef("x", A.TypeExpr("Decimal", (i(10), i(-2))))), engine="MergeTree")),
    ("create_codecs", "CREATE TABLE t (a UInt64 CODEC(LZ4), b String CODEC(ZSTD(3)), c Int8 CODEC(Delta, ZSTD), "
                      "d Nullable(String) CODEC(NONE), e Int8)",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("UInt64"), (A.CodecSpec("LZ4"),)),
                            A.ColumnDef("b", A.TypeExpr("String"), (A.CodecSpec("ZSTD", (i(3),)),)),
                            A.ColumnDef("c", A.TypeExpr("Int8"), (A.CodecSpec("Delta"), A.CodecSpec("ZSTD"))),
                            A.ColumnDef("d", A.TypeExpr("Nullable", (A.TypeExpr("String"),)), (A.CodecSpec("NONE"),)),
                            A.ColumnDef("e", A.TypeExpr("Int8"))))),
    # CODEC is a keyword only after a column type: a column may be called codec
    ("create_column_named_codec", "CREATE TABLE t (codec UInt8 CODEC(LZ4), `CODEC` Int8)",
     A.CreateTable(t("t"), (A.ColumnDef("codec", A.TypeExpr("UInt8"), (A.CodecSpec("LZ4"),)),
                            A.ColumnDef("CODEC", A.TypeExpr("Int8"))))),
    ("create_index_type_empty_parens", "CREATE TABLE t (a Int64, INDEX i a TYPE minmax())",
     A.CreateTable(t("t"), (A.ColumnDef("a", A.TypeExpr("Int64")),), (A.IndexClause("i", a, "minmax"),))),
    ("create_quoted_names", "CREATE TABLE `my table` (`index` String, \"x y\" Int8)",
     A.CreateTable(t("my table"), (A.ColumnDef("index", A.TypeExpr("String")),
                                   A.ColumnDef("x y", A.TypeExpr("Int8"))))),
    ("drop", "DROP TABLE t", A.DropTable(t("t"))),
    ("drop_if_exists", "drop table if exists t", A.DropTable(t("t"), if_exists=True)),
    ("insert_values", "INSERT INTO t VALUES (1, 'a'), (-2, NULL)",
     A.InsertValues(t("t"), None, ((i(1), s(b"a")), (i(-2), NULL)))),
    ("insert_values_columns_no_commas", "INSERT INTO t (b, a) VALUES (1, [2]) (3, [])",
     A.InsertValues(t("t"), ("b", "a"), ((i(1), arr(i(2))), (i(3), arr())))),
    ("insert_values_expressions", "INSERT INTO t VALUES (1 + 2, lower('X'))",
     A.InsertValues(t("t"), None, ((op("+", i(1), i(2)), fn("lower", s(b"X"))),))),
    ("insert_file", "INSERT INTO t FROM INFILE '/data/x.parquet' FORMAT Parquet",
     A.InsertFile(t("t"), None, "/data/x.parquet", "Parquet")),
    ("insert_file_no_format", "INSERT INTO t (a) FROM INFILE 'x.csv'", A.InsertFile(t("t"), ("a",), "x.csv")),
    ("insert_file_formats", "INSERT INTO t FROM INFILE 'x' FORMAT CSVWithNames",
     A.InsertFile(t("t"), None, "x", "CSVWithNames")),
    ("insert_file_json", "INSERT INTO t FROM INFILE 'é.json' FORMAT JSONEachRow",
     A.InsertFile(t("t"), None, "é.json", "JSONEachRow")),
    ("alter_add_index", "ALTER TABLE t ADD INDEX i lower(msg) TYPE ngrambf_v1(3, 256, 2, 0) GRANULARITY 2",
     A.AlterAddIndex(t("t"), A.IndexClause("i", fn("lower", col("msg")), "ngrambf_v1",
                                            (i(3), i(256), i(2), i(0)), (), 2))),
    ("alter_add_index_if_not_exists", "ALTER TABLE t ADD INDEX IF NOT EXISTS i a TYPE set(100)",
     A.AlterAddIndex(t("t"), A.IndexClause("i", a, "set", (i(100),)), if_not_exists=True)),
    ("alter_drop_index", "ALTER TABLE t DROP INDEX i", A.AlterDropIndex(t("t"), "i")),
    ("alter_drop_index_if_exists", "ALTER TABLE t DROP INDEX IF EXISTS i", A.AlterDropIndex(t("t"), "i", True)),
    ("alter_materialize", "ALTER TABLE t MATERIALIZE INDEX i", A.AlterMaterializeIndex(t("t"), "i")),
    ("optimize", "OPTIMIZE TABLE t", A.Optimize(t("t"))),
    ("optimize_final", "OPTIMIZE TABLE t FINAL", A.Optimize(t("t"), final=True)),
    ("show_tables", "SHOW TABLES", A.ShowTables()),
    ("describe_table", "DESCRIBE TABLE t", A.Describe(t("t"))),
    ("describe", "describe t", A.Describe(t("t"))),
    ("desc", "DESC t", A.Describe(t("t"))),
    ("select_star", "SELECT * FROM t", sel(A.Star(), table="t")),
    ("select_no_from", "SELECT 1", sel(i(1))),
    ("select_full",
     "SELECT DISTINCT level, count() AS n, uniqExact(user_id) FROM logs WHERE ts >= 10 AND hasToken(msg, 'x') "
     "GROUP BY level HAVING n > 1 ORDER BY n DESC, level ASC NULLS FIRST, 1 NULLS LAST LIMIT 10 OFFSET 5",
     sel(col("level"), A.SelectItem(fn("count"), "n"), fn("uniqExact", col("user_id")),
         table="logs", where=and_(op(">=", col("ts"), i(10)), fn("hasToken", col("msg"), s(b"x"))),
         group_by=(col("level"),), having=op(">", col("n"), i(1)),
         order_by=(A.OrderItem(col("n"), desc=True), A.OrderItem(col("level"), nulls_first=True),
                   A.OrderItem(i(1), nulls_first=False)),
         limit=10, offset=5, distinct=True)),
    ("select_limit_comma", "SELECT a FROM t LIMIT 5, 10", sel(a, table="t", limit=10, offset=5)),
    ("select_group_many", "SELECT a, b FROM t GROUP BY a, b", sel(a, b, table="t", group_by=(a, b))),
    ("select_star_and_more", "SELECT *, a AS `x y` FROM t", sel(A.Star(), A.SelectItem(a, "x y"), table="t")),
    ("select_keyword_column_names", "SELECT type, index, format FROM t ORDER BY first",
     sel(col("type"), col("index"), col("format"), table="t", order_by=(A.OrderItem(col("first")),))),
    ("select_column_named_from", "SELECT from FROM t", sel(col("from"), table="t")),
    # aliases without AS (ClickHouse accepts them): a word that cannot continue the statement
    ("implicit_alias", "SELECT count() c FROM t WHERE c > 1",
     sel(A.SelectItem(fn("count"), "c"), table="t", where=op(">", col("c"), i(1)))),
    ("implicit_aliases_many", "SELECT a x, b y, a + 1 z FROM t",
     sel(A.SelectItem(a, "x"), A.SelectItem(col("b"), "y"), A.SelectItem(op("+", a, i(1)), "z"), table="t")),
    ("implicit_alias_no_from", "SELECT 1 x", sel(A.SelectItem(i(1), "x"))),
    ("implicit_alias_keyword_words", "SELECT a desc, a null, a first, a type FROM t",
     sel(A.SelectItem(a, "desc"), A.SelectItem(a, "null"), A.SelectItem(a, "first"), A.SelectItem(a, "type"),
         table="t")),
    ("implicit_alias_quoted", "SELECT a `from` FROM t", sel(A.SelectItem(a, "from"), table="t")),
    ("implicit_alias_before_each_clause",
     "SELECT count(DISTINCT a) n FROM t WHERE a GROUP BY b HAVING n > 1 ORDER BY n LIMIT 1",
     sel(A.SelectItem(A.FunctionCall("count", (a,), distinct=True), "n"), table="t", where=a,
         group_by=(col("b"),), having=op(">", col("n"), i(1)), order_by=(A.OrderItem(col("n")),), limit=1)),
    ("keywords_are_not_aliases", "SELECT a FROM t WHERE a LIMIT 1", sel(a, table="t", where=a, limit=1)),
    ("implicit_alias_then_end", "SELECT a b;", sel(A.SelectItem(a, "b"))),
    ("select_distinct_items", "SELECT DISTINCT a, b FROM t", sel(a, col("b"), table="t", distinct=True)),
    ("having_without_group", "SELECT count() FROM t HAVING count() > 1",
     sel(fn("count"), table="t", having=op(">", fn("count"), i(1)))),
    ("explain", "EXPLAIN indexes = 1 SELECT count() FROM t WHERE a = 1",
     A.Explain(sel(fn("count"), table="t", where=op("=", a, i(1))), indexes=True)),
    ("explain_plain", "EXPLAIN SELECT 1", A.Explain(sel(i(1)))),
    ("explain_plan", "EXPLAIN PLAN indexes = 1 SELECT 1", A.Explain(sel(i(1)), indexes=True)),
    ("explain_bool_option", "EXPLAIN indexes = true SELECT 1", A.Explain(sel(i(1)), indexes=True)),
    ("explain_off", "EXPLAIN indexes = 0 SELECT 1", A.Explain(sel(i(1)))),
]


@pytest.mark.parametrize("text,expected", [e[1:] for e in STATEMENTS], ids=[e[0] for e in STATEMENTS])
def test_statement(text: str, expected: A.Statement) -> None:
    got = parse(text)
    assert got == [expected], f"{text!r} parsed as {got!r}"
    rendered = got[0].to_sql()
    assert parse(rendered) == got, rendered


def test_multiple_statements_comments_and_empty_ones() -> None:
    text = """
    -- a line comment
    CREATE TABLE t (a Int64); /* block /* nested */ comment */
    ;; INSERT INTO t VALUES (1) -- trailing
    ;SELECT a FROM t;
    """
    got = parse(text)
    assert [type(x) for x in got] == [A.CreateTable, A.InsertValues, A.Select]
    assert [x.pos for x in got] == [Pos(3, 5), Pos(4, 8), Pos(5, 6)]


def test_statement_positions() -> None:
    text = "SELECT a,\n  lower(msg) AS m\nFROM logs\nWHERE x = 'a' AND y IN (1, 2)"
    [st] = parse(text)
    assert st.pos == Pos(1, 1)
    assert st.items[0].expr.pos == Pos(1, 8)
    assert st.items[1].pos == Pos(2, 3)
    assert st.items[1].expr.args[0].pos == Pos(2, 9)
    assert st.table.pos == Pos(3, 6)
    assert st.where.pos == Pos(4, 7)
    eq, inl = st.where.args
    assert eq.pos == Pos(4, 7) and eq.right.pos == Pos(4, 11)
    assert inl.pos == Pos(4, 19) and inl.items[1].pos == Pos(4, 28)


def test_ddl_positions() -> None:
    text = "CREATE TABLE t (\n  a Int64,\n  INDEX i a TYPE sbbf('x', n = 3)\n)"
    [st] = parse(text)
    assert st.table.pos == Pos(1, 14)
    assert st.columns[0].pos == Pos(2, 3) and st.columns[0].type.pos == Pos(2, 5)
    idx = st.indexes[0]
    assert idx.pos == Pos(3, 3) and idx.expr.pos == Pos(3, 11)
    assert idx.args[0].pos == Pos(3, 23) and idx.kwargs[0].pos == Pos(3, 28)
    assert parse_expression("-5").pos == Pos(1, 1)


def test_codec_positions() -> None:
    [st] = parse("CREATE TABLE t (\n  a UInt64 CODEC(LZ4, ZSTD(3))\n)")
    c = st.columns[0]
    assert c.codec[0].pos == Pos(2, 18) and c.codec[1].pos == Pos(2, 23) and c.codec[1].args[0].pos == Pos(2, 28)


def test_positions_count_characters_not_bytes() -> None:
    [st] = parse("SELECT 'é✓', x")
    assert st.items[1].expr.pos == Pos(1, 14)


def test_equality_ignores_positions_and_nodes_hash() -> None:
    e1 = parse_expression("lower(msg) = 'x'")
    e2 = parse_expression("  lower( msg )\n = 'x'")
    assert e1 == e2 and hash(e1) == hash(e2) and e1.pos != e2.pos
    assert {e1: 1}[e2] == 1
    assert parse_expression("1") != parse_expression("1.0") != parse_expression("true")


def test_long_or_chain_is_flat() -> None:
    n = 3000
    e = parse_expression(" OR ".join(f"id = {k}" for k in range(n)))
    assert isinstance(e, A.BoolOp) and e.op == "or" and len(e.args) == n
    assert e.args[-1] == op("=", col("id"), i(n - 1))


def test_large_in_list() -> None:
    e = parse_expression("id IN (" + ", ".join(str(k) for k in range(20000)) + ")")
    assert len(e.items) == 20000 and e.items[-1] == i(19999)


def test_deep_parentheses_do_not_recurse() -> None:
    depth = 5000
    assert parse_expression("(" * depth + "a" + ")" * depth) == a


@pytest.mark.parametrize("text", [
    "NOT " * (MAX_EXPRESSION_DEPTH + 1) + "a",
    "- " * (MAX_EXPRESSION_DEPTH + 1) + "a",
    "f(" * (MAX_EXPRESSION_DEPTH + 1) + ")" * (MAX_EXPRESSION_DEPTH + 1),
    "[" * (MAX_EXPRESSION_DEPTH + 1) + "]" * (MAX_EXPRESSION_DEPTH + 1),
    " + ".join(["a"] * (MAX_EXPRESSION_DEPTH + 2)),
], ids=["not", "neg", "calls", "arrays", "sum_chain"])
def test_too_deep_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nested too deeply") as info:
        parse("SELECT " + text)
    assert info.value.line == 1 and info.value.column >= 8


def test_depth_at_limit_is_fine() -> None:
    e = parse_expression("NOT " * (MAX_EXPRESSION_DEPTH - 1) + "a")
    assert isinstance(e, A.UnaryOp)
    assert parse_expression(e.to_sql()) == e


def test_bytes_input_and_wrong_type() -> None:
    assert parse(b"SELECT 1") == [sel(i(1))]
    with pytest.raises(ParseError, match="not valid UTF-8"):
        parse(b"SELECT '\xff'")
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]


def test_to_sql_rendering() -> None:
    cases = {
        "a OR b AND NOT c": "a OR b AND NOT c",
        "(a OR b) AND c": "(a OR b) AND c",
        "-(5) * (a + b)": "-(5) * (a + b)",
        "NOT (a AND b)": "NOT (a AND b)",
        "x = 'it''s\\n\\xff'": "x = 'it\\'s\\n\\xFF'",
        "`select` = `a b`": "`select` = `a b`",  # always quoted: `(select)` would read as a subquery
        "NULL IN (`select`)": "NULL IN (`select`)",
        "`from` + `type`": "from + type",  # FROM and TYPE cannot start an expression: bare
        "`and`(`or`, `null`)": "`and`(`or`, `null`)",
        "type = 1": "type = 1",
        "f(DISTINCT a, b)": "f(DISTINCT a, b)",
        "a NOT IN ((1, 2))": "a NOT IN ((1, 2))",
        "(a,)": "(a,)",
        "1.0": "1.0",
        "1e300": "1e+300",
    }
    for text, rendered in cases.items():
        assert parse_expression(text).to_sql() == rendered
        assert str(parse_expression(text)) == rendered


# ---------------------------------------------------------------- errors

ERRORS = [
    # (id, text, message fragment, line, column)
    # a misspelled FROM reads as an alias without AS (as in ClickHouse); the error names it
    ("misspelled_from", "SELECT a FORM t", "unexpected 't' ('FORM' before it was read as a column alias)", 1, 15),
    ("misspelled_from_no_alias_possible", "SELECT * FORM t", "unexpected 'FORM'", 1, 10),
    ("end_after_where", "SELECT a FROM t WHERE", "unexpected end of input; expected expression", 1, 22),
    ("third_line", "SELECT a\nFROM t\nWHERE x = 1 GROPU BY a", "unexpected 'GROPU'", 3, 13),
    ("second_statement", "SELECT 1; SELEC 2", "unexpected 'SELEC'", 1, 11),
    ("open_paren", "SELECT (", "unexpected end of input", 1, 9),
    ("end_after_operator", "SELECT 1 +", "unexpected end of input", 1, 11),
    ("and_is_never_a_name", "SELECT and FROM t", "unexpected 'and'", 1, 8),
    ("two_implicit_aliases", "SELECT a b c FROM t", "unexpected 'c' ('b' before it was read as a column alias)",
     1, 12),
    ("alias_after_alias", "SELECT a AS b c FROM t", "unexpected 'c'", 1, 15),
    ("star_has_no_alias", "SELECT * x FROM t", "unexpected 'x'", 1, 10),
    ("trailing_comma_then_from", "SELECT a, FROM t",
     "unexpected 't' (the keyword 'FROM' before it was read as a column name)", 1, 16),
    ("distinct_without_items", "SELECT DISTINCT FROM t",
     "unexpected 't' (the keyword 'FROM' before it was read as a column name)", 1, 22),
    ("alias_in_order_by", "SELECT a FROM t ORDER BY a x", "unexpected 'x'", 1, 28),
    ("alias_in_where", "SELECT a FROM t WHERE a x", "unexpected 'x'", 1, 25),
    ("negative_limit", "SELECT a FROM t LIMIT -1", "unexpected '-'", 1, 23),
    ("dangling_not", "SELECT a FROM t WHERE a NOT", "unexpected 'NOT'", 1, 25),
    ("is_null_compared", "SELECT x IS NULL = 1", "unexpected '='", 1, 18),
    ("not_after_operator", "SELECT a = NOT b", "unexpected 'NOT'", 1, 12),
    ("leading_dot_number", "SELECT .5", "unexpected '.'", 1, 8),
    ("adjacent_strings", "SELECT 'a' 'b'", "unexpected \"'b'\"", 1, 12),
    ("star_in_expression", "SELECT a * * b", "unexpected '*'", 1, 12),
    ("values_without_rows", "INSERT INTO t VALUES", "unexpected end of input", 1, 21),
    ("empty_values_row", "INSERT INTO t VALUES ()", "unexpected ')'", 1, 23),
    ("create_without_columns", "CREATE TABLE t ()", "unexpected ')'", 1, 17),
    ("column_without_type", "CREATE TABLE t (a)", "unexpected ')'", 1, 18),
    ("index_without_type", "CREATE TABLE t (a Int8, INDEX i a)", "unexpected ')'", 1, 34),
    ("index_expression_argument", "CREATE TABLE t (a Int8, INDEX i a TYPE set(a))", "unexpected ')'; expected '='",
     1, 45),
    ("unterminated_string", "SELECT 'abc", "unterminated string literal", 1, 8),
    ("unterminated_string_escape_at_end", "SELECT 'abc\\", "unterminated string literal", 1, 8),
    ("unterminated_identifier", "SELECT `abc", "unterminated quoted identifier", 1, 8),
    ("unterminated_comment", "SELECT 1 /* x", "unterminated comment", 1, 10),
    ("unterminated_nested_comment", "SELECT 1\n/* x /* y */", "unterminated comment", 2, 1),
    ("bad_hex_escape", "SELECT 'ab\\x4'", "invalid escape sequence", 1, 11),
    ("bad_hex_digits", "SELECT 'ab\\xZZ'", "invalid escape sequence", 1, 11),
    ("number_glued_to_word", "SELECT 1abc", "invalid number literal '1abc'", 1, 8),
    ("bare_hex_prefix", "SELECT 0x", "invalid number literal '0x'", 1, 8),
    ("dangling_exponent", "SELECT 1e", "invalid number literal '1e'", 1, 8),
    ("uint64_overflow", "SELECT 18446744073709551616", "integer literal out of range", 1, 8),
    ("hex_overflow", "SELECT 0x10000000000000000", "integer literal out of range", 1, 8),
    ("huge_decimal", "SELECT 1, " + "9" * 5000, "integer literal out of range", 1, 11),
    ("huge_binary", "SELECT 0b1" + "0" * 64, "integer literal out of range", 1, 8),
    ("int64_underflow", "SELECT 1, -9223372036854775809", "integer literal out of range", 1, 11),
    ("limit_overflow", "SELECT 1 LIMIT 18446744073709551616", "integer literal out of range", 1, 16),
    ("empty_identifier", "SELECT ``", "empty quoted identifier", 1, 8),
    ("identifier_not_utf8", 'SELECT "\\xff"', "not valid UTF-8", 1, 8),
    ("lone_surrogate", "SELECT 'a\ud800'", "lone surrogate", 1, 10),
    ("unexpected_character", "SELECT a\n  @", "unexpected character '@'", 2, 3),
    ("hash_is_not_a_comment", "SELECT 1 # x", "unexpected character '#'", 1, 10),
    ("empty", "", "empty statement", 1, 1),
    ("blank", "  \n\t ", "empty statement", 1, 1),
    ("only_comments", "-- x\n/* y */", "empty statement", 1, 1),
    ("only_semicolons", ";;", "empty statement", 1, 1),
    ("duplicate_column", "CREATE TABLE t (a Int8, b String, a UInt8)", "duplicate column 'a'", 1, 35),
    ("duplicate_index", "CREATE TABLE t (a Int8, INDEX i a TYPE minmax,\n INDEX i a TYPE set(1))",
     "duplicate index 'i'", 2, 2),
    ("positional_after_keyword", "CREATE TABLE t (a String, INDEX i a TYPE sbbf(n = 4, 'ngram'))",
     "positional index argument after a keyword argument", 1, 54),
    ("duplicate_index_argument", "CREATE TABLE t (a String, INDEX i a TYPE sbbf('ngram', n = 4, n = 5))",
     "duplicate index argument 'n'", 1, 63),
    ("granularity_zero", "CREATE TABLE t (a String, INDEX i a TYPE minmax GRANULARITY 0)",
     "GRANULARITY must be a positive integer", 1, 61),
    ("duplicate_setting", "CREATE TABLE t (a Int8) SETTINGS x = 1, x = 2", "duplicate setting 'x'", 1, 41),
    ("order_by_tuple_star", "CREATE TABLE t (a Int8) ORDER BY tuple(*)", "not a sorting key", 1, 34),
    ("explain_unknown_option", "EXPLAIN actions = 1 SELECT 1", "unknown EXPLAIN option 'actions'", 1, 9),
    ("explain_bad_value", "EXPLAIN indexes = 2 SELECT 1", "must be 0 or 1", 1, 19),
    ("explain_duplicate_option", "EXPLAIN indexes = 1, indexes = 0 SELECT 1", "duplicate EXPLAIN option", 1, 22),
    ("unknown_format", "INSERT INTO t FROM INFILE 'x' FORMAT Orc", "unknown format 'Orc'", 1, 38),
    ("format_is_case_sensitive", "INSERT INTO t FROM INFILE 'x' FORMAT parquet", "unknown format 'parquet'", 1, 38),
    ("infile_not_utf8", "INSERT INTO t FROM INFILE '\\xff'", "not valid UTF-8", 1, 27),
    ("infile_empty", "INSERT INTO t FROM INFILE ''", "non-empty path", 1, 27),
    ("insert_duplicate_column", "INSERT INTO t (a, a) VALUES (1, 2)", "duplicate column 'a'", 1, 19),
    ("codec_empty_list", "CREATE TABLE t (a UInt64 CODEC())", "unexpected ')'; expected identifier", 1, 32),
    ("codec_without_parens", "CREATE TABLE t (a UInt64 CODEC LZ4)", "unexpected 'LZ4'", 1, 32),
    ("codec_expression_arg", "CREATE TABLE t (a UInt64 CODEC(ZSTD(1 + 2)))", "unexpected '+'", 1, 39),
    ("codec_before_type", "CREATE TABLE t (a CODEC(LZ4) UInt64)", "unexpected 'UInt64'", 1, 30),
    ("error_after_valid_statements", "SELECT 1;\nSELECT 2;\nSELECT 'x", "unterminated string literal", 3, 8),
]


@pytest.mark.parametrize("text,fragment,line,column", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error(text: str, fragment: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, SkipidxError)
    assert fragment in err.message, err.message
    assert (err.line, err.column) == (line, column), f"{err} at {err.line}:{err.column}"
    assert f"line {line}, column {column}" in str(err)


EXPECTED_SETS = [
    # '[' and '.' after an operand: arr[i] and t.N
    ("after_where_expression", "SELECT a FROM t WHERE x = 1 GROPU BY a",
     ("operator", "'['", "'.'", "';'", "FORMAT", "GROUP", "HAVING", "INTO", "LIMIT", "ORDER", "SETTINGS", "UNION",
      "end of input")),
    ("after_select_item", "SELECT a 1",
     ("operator", "identifier", "'('", "'['", "','", "'.'", "';'", "AS", "FORMAT", "FROM", "GROUP", "HAVING", "INTO",
      "LIMIT", "ORDER", "PREWHERE", "SETTINGS", "UNION", "WHERE", "end of input")),
    ("after_implicit_alias", "SELECT a FORM t",
     ("','", "';'", "FORMAT", "FROM", "GROUP", "HAVING", "INTO", "LIMIT", "ORDER", "PREWHERE", "SETTINGS", "UNION",
      "WHERE", "end of input")),
    ("after_keyword_read_as_name", "SELECT a, FROM t",
     ("operator", "'('", "'['", "','", "'.'", "';'", "AS", "FORMAT", "FROM", "GROUP", "HAVING", "INTO", "LIMIT", "ORDER",
      "PREWHERE", "SETTINGS", "UNION", "WHERE", "end of input")),
    ("open_paren", "SELECT (", ("expression", "')'", "SELECT", "WITH")),   # a scalar subquery may start there
    ("column_type", "CREATE TABLE t (a", ("identifier",)),
    ("statement_start", "SELEC 1",
     ("';'", "ALTER", "CREATE", "DESC", "DESCRIBE", "DROP", "EXISTS", "EXPLAIN", "INSERT", "OPTIMIZE", "SELECT",
      "SET", "SHOW", "TRUNCATE", "WITH", "end of input")),
    ("insert_after_table", "INSERT INTO t 1", ("'('", "'.'", "FROM", "SELECT", "SETTINGS", "VALUES", "WITH")),
    ("describe", "DESCRIBE 1", ("identifier", "{name:Identifier}", "TABLE")),
    ("after_is", "SELECT a FROM t WHERE a IS 1", ("NOT", "NULL")),
    # in the SELECT list `a IS 1` is `a AS is` then a stray 1, as ClickHouse reads it
    ("after_is_alias", "SELECT a IS 1",
     ("','", "';'", "FORMAT", "FROM", "GROUP", "HAVING", "INTO", "LIMIT", "ORDER", "PREWHERE", "SETTINGS", "UNION",
      "WHERE", "end of input")),
    ("in_needs_list", "SELECT a IN 1", ("'('", "'['", "query parameter")),
]


@pytest.mark.parametrize("text,expected", [e[1:] for e in EXPECTED_SETS], ids=[e[0] for e in EXPECTED_SETS])
def test_expected_sets(text: str, expected: tuple[str, ...]) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)
    assert info.value.expected == expected
    listed = "expected " + expected[0] if len(expected) == 1 else "expected one of: " + ", ".join(expected)
    assert info.value.message.endswith(listed)


@pytest.mark.parametrize("text,fragment,column", [
    ("", "empty expression", 1),
    ("  -- nothing", "empty expression", 1),
    ("a = 1; b = 2", "unexpected ';'", 6),
    ("SELECT 1", "unexpected '1'", 8),  # SELECT cannot start an expression: it reads as a column name
    ("a = ", "unexpected end of input", 4),  # just after the last token
], ids=["empty", "comment_only", "two_expressions", "statement", "incomplete"])
def test_parse_expression_errors(text: str, fragment: str, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse_expression(text)
    assert fragment in info.value.message and info.value.column == column
