"""The second-round column types (Array, DateTime64, DateTime('tz'), FixedString,
UUID, Enum, Decimal) and ClickHouse's type aliases, against chDB."""
from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.apps.research import chdb_session as chdb_oracle
from skipidx.core.types import cast_to, ch_type_of, parse_type
from skipidx.errors import SkipidxError

TYPE_NAMES = [
    "int", "Int", "INTEGER", "BIGINT", "TINYINT UNSIGNED", "SMALLINT", "TEXT", "VARCHAR", "VARCHAR(255)",
    "DOUBLE", "DOUBLE PRECISION", "FLOAT", "REAL", "BOOLEAN", "bool", "TIMESTAMP", "BINARY(4)",
    "datetime64(3)", "DateTime64(0)", "DateTime64(6, 'Asia/Tokyo')", "DateTime('UTC')", "datetime",
    "Decimal(10, 2)", "decimal", "Decimal32(2)", "Decimal64(4)", "Decimal128(10)", "Decimal(40, 3)", "NUMERIC(7, 1)",
    "Enum8('a' = 1, 'b' = 2)", "Enum('a', 'b')", "Enum('x' = 200)", "Enum16('it''s' = -5)",
    "FixedString(16)", "UUID",
    "Array(String)", "Array(Nullable(Int8))", "Array(Array(UInt16))", "Array(LowCardinality(String))",
    "Nullable(Decimal(5, 1))", "Nullable(DateTime64(3))", "LowCardinality(Nullable(String))",
    "Nullable(FixedString(2))", "Array(DateTime64(3, 'UTC'))",
]


def _ch_name(t: str) -> str:
    out = chdb_oracle.query(f"SELECT toTypeName(defaultValueOfTypeName('{t.replace(chr(39), chr(92) + chr(39))}'))", "TSVRaw")
    return out.bytes().decode().strip()


@pytest.mark.chdb
@pytest.mark.parametrize("name", TYPE_NAMES, ids=TYPE_NAMES)
def test_type_name_is_clickhouses(name):
    assert parse_type(name).name == _ch_name(name), f"canonical name of {name!r} differs from ClickHouse's"


@pytest.mark.parametrize("name", ["Decimal(100, 2)", "Nullable(Array(Int8))", "Strng", "DateTime64(12)",
                                  "Enum8('a' = 500)", "FixedString(0)", "DateTime('Mars/Nowhere')",
                                  "Enum8('a' = 1, 'a' = 2)", "LowCardinality(UInt8)", "Array(String", "UUID(3)"])
def test_bad_type_names_are_errors(name):
    with pytest.raises(SkipidxError):
        parse_type(name)


def test_unknown_type_suggests_close_name():
    with pytest.raises(SkipidxError, match="did you mean 'String'"):
        parse_type("Strng")


@pytest.mark.parametrize("name", [t for t in TYPE_NAMES if "Enum" not in t and "Nullable(LowCard" not in t],
                         ids=[t for t in TYPE_NAMES if "Enum" not in t and "Nullable(LowCard" not in t])
def test_arrow_type_reads_back_as_the_base_type(name):
    ct = parse_type(name)
    if name == "DateTime64(0)":
        pytest.skip("DateTime64(0) and DateTime share timestamp[s]; the declared name is kept in the metadata")
    if ct.low_cardinality or ct.element is not None and ct.element.low_cardinality:
        pytest.skip("LowCardinality is an encoding, not an Arrow type")
    if ct.nullable:
        ct = parse_type(ct.name[len("Nullable("):-1])
    assert ch_type_of(ct.arrow_type) == ct.name.replace("Array(Nullable(Int8))", "Array(Int8)"), name


# (type, input values, ClickHouse's CAST of the same text)
CASTS = [
    ("Decimal(5, 2)", pa.array(["1.239", "-1.235", "999.999"]), ["1.239", "-1.235", "999.999"]),
    ("Decimal(5, 2)", pa.array([1.239, -1.235, 0.1]), ["1.239", "-1.235", "0.1"]),
    ("DateTime64(2, 'UTC')", pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 987654)], pa.timestamp("us")),
     ["2020-01-01 00:00:00.987654"]),
    ("DateTime64(3)", pa.array([dt.datetime(1950, 6, 1, 12, 0, 0, 123456)], pa.timestamp("us")),
     ["1950-06-01 12:00:00.123456"]),
    ("DateTime", pa.array([dt.datetime(2020, 1, 1, 0, 0, 0, 900000)], pa.timestamp("us")), ["2020-01-01 00:00:00.9"]),
    ("FixedString(3)", pa.array(["ab", "abc", ""]), ["ab", "abc", ""]),
    ("UUID", pa.array(["61f0c404-5cb3-11e7-907b-a6006ad3dba0"]), ["61f0c404-5cb3-11e7-907b-a6006ad3dba0"]),
    ("Enum8('x' = 1, 'y' = 2)", pa.array(["y", "x"]), ["y", "x"]),
]


def _render(v) -> str:
    if isinstance(v, bytes):
        return v.hex().upper()
    if isinstance(v, dt.datetime):
        s = v.replace(tzinfo=None).isoformat(sep=" ")
        return s
    if isinstance(v, decimal.Decimal):
        return format(v.normalize(), "f") if v != 0 else "0"
    if isinstance(v, uuid.UUID):
        return str(v)
    return str(v)


@pytest.mark.chdb
@pytest.mark.parametrize("ctype,values,texts", CASTS, ids=[f"{c[0]}#{i}" for i, c in enumerate(CASTS)])
def test_casts_match_clickhouse(ctype, values, texts):
    ours = [_render(v) for v in cast_to(parse_type(ctype), values, "c").to_pylist()]
    fn = "hex" if ctype.startswith("FixedString") else "toString"
    q = ", ".join(f"{fn}(CAST('{t}' AS {ctype}))" if "Decimal" not in ctype or isinstance(values[0].as_py(), str)
                  else f"toString(CAST({t} AS {ctype}))" for t in texts)
    ch = chdb_oracle.query(f"SELECT {q}", "TSVRaw").bytes().decode().rstrip("\n").split("\t")
    if ctype.startswith("DateTime64"):
        ch = [c.rstrip("0").rstrip(".") if "." in c else c for c in ch]
        ours = [o.rstrip("0").rstrip(".") if "." in o else o for o in ours]
    if ctype.startswith("Decimal"):
        ch = [str(decimal.Decimal(c).normalize()) if decimal.Decimal(c) != 0 else "0" for c in ch]
    assert ours == ch, f"{ctype}: ours {ours} vs ClickHouse {ch}"


@pytest.mark.parametrize("ctype,values", [
    ("FixedString(2)", pa.array(["abc"])), ("Enum8('x' = 1)", pa.array(["z"])), ("Enum8('x' = 1)", pa.array([7])),
    ("Decimal(3, 1)", pa.array([100.0])), ("Decimal(3, 1)", pa.array(["nan"])), ("UUID", pa.array(["nope"])),
    ("Array(Int8)", pa.array([[1000]])), ("DateTime64(3)", pa.array([dt.datetime(1899, 12, 31)], pa.timestamp("us"))),
    ("Array(String)", pa.array(["a"])),
])
def test_bad_values_are_errors(ctype, values):
    with pytest.raises(SkipidxError):
        cast_to(parse_type(ctype), values, "c")


def test_tables_of_new_types_round_trip_and_parquet_is_standard(tmp_path):
    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("""CREATE TABLE t (id UInt32, a DateTime64(3, 'UTC'), b DateTime('UTC'), c Decimal(5, 2),
              d Enum8('x' = 1, 'y' = 2), e FixedString(3), u UUID, tags Array(String))
              ENGINE = MergeTree ORDER BY id""")
    db.insert("t", pa.table({
        "id": [1, 2], "a": pa.array([1577836800987, 0], pa.timestamp("ms")),
        "b": pa.array([1577836800, 1], pa.timestamp("s")), "c": ["1.239", "2"], "d": ["x", "y"],
        "e": ["ab", "abc"], "u": ["61f0c404-5cb3-11e7-907b-a6006ad3dba0", "00000000-0000-0000-0000-000000000000"],
        "tags": [["a", "b"], []]}))
    rows = db.sql("SELECT * FROM t ORDER BY id").fetchall()
    assert rows[0][3] == decimal.Decimal("1.23") and rows[0][5] == b"ab\x00", rows
    assert rows[0][6] == uuid.UUID("61f0c404-5cb3-11e7-907b-a6006ad3dba0") and rows[0][7] == ["a", "b"], rows
    assert db.sql("DESCRIBE TABLE t").fetchall()[3][1] == "Decimal(5, 2)"
    assert db.sql("SELECT id FROM t WHERE d = 'y'").fetchall() == [(2,)]
    db.close()
    files = list((tmp_path / "db").rglob("*.parquet"))
    data = [f for f in files if pq.read_schema(f).get_field_index("tags") >= 0]
    assert data, files
    t = pq.read_table(data[0])
    assert t.schema.field("a").type == pa.timestamp("ms", "UTC"), t.schema
    assert t.schema.field("c").type == pa.decimal128(5, 2), t.schema
    assert pa.types.is_list(t.schema.field("tags").type), t.schema
    import duckdb

    got = duckdb.sql(f"SELECT c::VARCHAR, e::VARCHAR, len(tags) FROM read_parquet('{data[0]}') ORDER BY id").fetchall()
    assert got[0][0] == "1.23" and got[0][2] == 2, got
