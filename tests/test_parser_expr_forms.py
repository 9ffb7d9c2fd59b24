"""CAST / :: / CASE / INTERVAL / || / parametric aggregates parse to ClickHouse's function forms."""
import pytest

from skipidx.errors import ParseError
from skipidx.sql.parser import parse

FORMS = [
    ("cast_as", "CAST(a AS Nullable(String))", "CAST(a, 'Nullable(String)')"),
    ("cast_comma", "CAST(a, 'String')", "CAST(a, 'String')"),
    ("double_colon", "a::UInt8", "CAST(a, 'UInt8')"),
    ("double_colon_binds_tight", "-a::Int8", "-CAST(a, 'Int8')"),
    ("case_when", "CASE WHEN a > 1 THEN 'x' WHEN a > 0 THEN 'y' ELSE 'z' END", "multiIf(a > 1, 'x', a > 0, 'y', 'z')"),
    ("case_no_else", "CASE WHEN a THEN 1 END", "multiIf(a, 1, NULL)"),
    ("case_subject", "CASE a WHEN 1 THEN 'x' ELSE 'y' END", "caseWithExpression(a, 1, 'x', 'y')"),
    ("interval_day", "d + INTERVAL 1 DAY", "d + toIntervalDay(1)"),
    ("interval_plural", "d - INTERVAL 3 hours", "d - toIntervalHour(3)"),
    ("concat_op", "'a' || b", "concat('a', b)"),
    ("param_aggregate", "quantile(0.5)(x)", "quantile(0.5)(x)"),
    ("param_aggregate_list", "quantiles(0.1, 0.9)(x)", "quantiles(0.1, 0.9)(x)"),
    ("keyword_as_name", "cast + case + interval + end", "cast + `case` + interval + end"),
    # printed so that they read back: `case NOT IN (1)`, `ORDER BY case DESC`, `interval - 1`,
    # `CAST()` and `interval(1)` would each read as the keyword's own form
    ("case_before_a_word", "`case` NOT IN (1)", "`case` NOT IN (1)"),
    ("interval_minus", "`interval` - 1", "(interval) - 1"),
    ("interval_minus_nested", "a + `interval` - 1", "(a + interval) - 1"),
    ("cast_one_argument", "`CAST`(1)", "`CAST`(1)"),
    ("cast_distinct", "`CAST`(DISTINCT a, b)", "`CAST`(DISTINCT a, b)"),
    ("interval_call", "`interval`(1)", "`interval`(1)"),
]


@pytest.mark.parametrize("text,expected", [f[1:] for f in FORMS], ids=[f[0] for f in FORMS])
def test_function_forms(text, expected):
    stmt = parse(f"SELECT {text} FROM t")[0]
    assert stmt.items[0].to_sql() == expected, text


def test_round_trip_of_forms_parses_again():
    for _, text, expected in FORMS:
        again = parse(f"SELECT {expected} FROM t")[0]
        assert again.items[0].to_sql() == expected, expected


def test_unknown_interval_unit_points_at_it():
    with pytest.raises(ParseError, match="unknown INTERVAL unit 'fortnight'") as e:
        parse("SELECT d - INTERVAL 2 fortnight FROM t")
    assert (e.value.line, e.value.column) == (1, 23), (e.value.line, e.value.column)
