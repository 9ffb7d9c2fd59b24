"""UUID columns and functions against chDB: values, ClickHouse types, column names and
errors of a golden table of queries, the output formats' bytes, ClickHouse's UUID order
(by the second 8 bytes, then the first), and bloom_filter pruning on a UUID column."""
from __future__ import annotations

import io
import json
import random
import uuid

import pytest

import skipidx
from skipidx.engine.formats import write_batches

pytestmark = pytest.mark.chdb

U = ["61f0c404-5cb3-11e7-907b-a6006ad3dba0", "00000000-0000-0001-0000-000000000000",
     "ff000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
     "00000000-0000-0000-ff00-000000000000", "61f0c404-5cb3-11e7-907b-a6006ad3dba0",
     "a1b2c3d4-0000-4000-8000-00000000000f"]
DDL = "CREATE TABLE {t} (u UUID, n Nullable(UUID), x UInt8) ENGINE = MergeTree ORDER BY x"
INSERT = "INSERT INTO {t} VALUES " + ", ".join(
    f"('{u}', {'NULL' if i % 3 == 0 else repr(U[(i + 2) % len(U)])}, {i})" for i, u in enumerate(U))

A = U[0]
CASES = [
    ("eq_literal", f"SELECT x FROM {{t}} WHERE u = '{A}' ORDER BY x"),
    ("eq_literal_flipped", f"SELECT x FROM {{t}} WHERE '{A}' = u ORDER BY x"),
    ("ne_literal", f"SELECT x FROM {{t}} WHERE u != '{A}' ORDER BY x"),
    ("lt_literal", "SELECT x FROM {t} WHERE u < '61f0c404-5cb3-11e7-907b-a6006ad3dba0' ORDER BY x"),
    ("ge_literal", "SELECT x FROM {t} WHERE u >= '00000000-0000-0000-0000-000000000001' ORDER BY x"),
    ("upper_and_nodash", "SELECT x FROM {t} WHERE u IN ('61F0C404-5CB3-11E7-907B-A6006AD3DBA0', "
                         "'ff000000000000000000000000000000') ORDER BY x"),
    ("in_list", f"SELECT x FROM {{t}} WHERE u IN ('{A}', '{U[3]}') ORDER BY x"),
    ("not_in_list", f"SELECT x FROM {{t}} WHERE u NOT IN ('{A}', '{U[3]}') ORDER BY x"),
    ("nullable_eq", f"SELECT x FROM {{t}} WHERE n = '{U[2]}' ORDER BY x"),
    ("nullable_is_null", "SELECT x, n FROM {t} WHERE n IS NULL ORDER BY x"),
    ("column_vs_column", "SELECT x, u < n, u = n FROM {t} ORDER BY x"),
    ("order_by_u", "SELECT u, x FROM {t} ORDER BY u, x"),
    ("order_by_u_desc", "SELECT u, x FROM {t} ORDER BY u DESC, x"),
    ("order_by_nullable", "SELECT n, x FROM {t} ORDER BY n, x"),
    ("distinct", "SELECT DISTINCT u FROM {t} ORDER BY u"),
    ("count_distinct", "SELECT count(DISTINCT u), uniqExact(u), uniqExact(n), count(n) FROM {t}"),
    ("group_by", "SELECT u, count() AS c, sum(x) AS s FROM {t} GROUP BY u ORDER BY u"),
    ("group_by_nullable", "SELECT n, count() AS c FROM {t} GROUP BY n ORDER BY n"),
    ("to_string", "SELECT toString(u), toString(n) FROM {t} ORDER BY x"),
    ("to_uuid", f"SELECT toUUID('{A}')"),
    ("to_uuid_nodash_upper", "SELECT toUUID('61F0C4045CB311E7907BA6006AD3DBA0')"),
    ("to_uuid_of_uuid", "SELECT toUUID(u) FROM {t} ORDER BY x"),
    ("to_uuid_of_column", "SELECT toUUID(toString(u)) = u FROM {t} ORDER BY x"),
    ("to_uuid_or_null", "SELECT toUUIDOrNull('zz'), toUUIDOrZero('zz')"),
    ("to_uuid_null", "SELECT toUUID(NULL)"),
    ("const_compare", f"SELECT toUUID('{A}') = '{A}', toUUID('{A}') < '71f0c404-5cb3-11e7-907b-a6006ad3dba0'"),
    ("const_order", "SELECT toUUID('00000000-0000-0001-0000-000000000000') < "
                    "toUUID('00000000-0000-0000-0000-000000000001')"),
    ("to_type_name", "SELECT toTypeName(u), toTypeName(n) FROM {t} ORDER BY x LIMIT 1"),
    ("min_max", "SELECT min(u), max(u), min(n), max(n), any(u) FROM {t}"),
    ("min_max_grouped", "SELECT x % 2 AS p, min(u), max(n), count(DISTINCT n) FROM {t} GROUP BY p ORDER BY p"),
    ("in_subquery", "SELECT x FROM {t} WHERE u IN (SELECT n FROM {t}) ORDER BY x"),
    ("not_in_subquery", "SELECT x FROM {t} WHERE u NOT IN (SELECT n FROM {t} WHERE n IS NOT NULL) ORDER BY x"),
    ("where_to_uuid", f"SELECT x FROM {{t}} WHERE u = toUUID('{A}') ORDER BY x"),
]
ERRORS = [
    ("bad_literal_eq", "SELECT x FROM {t} WHERE u = 'zz'"),
    ("bad_literal_in", f"SELECT x FROM {{t}} WHERE u IN ('{A}', 'nope')"),
    ("bad_to_uuid", "SELECT toUUID('zz')"),
    ("trailing_junk", "SELECT toUUID('61f0c404-5cb3-11e7-907b-a6006ad3dba0x')"),
    ("number_to_uuid", "SELECT toUUID(1)"),
    ("bad_const_eq", f"SELECT toUUID('{A}') = 'zz'"),
]


@pytest.fixture(scope="module")
def both(tmp_path_factory, chdb):
    name = chdb.scratch_database("uuid")
    chdb.query(DDL.format(t=f"{name}.t"))
    chdb.query(INSERT.format(t=f"{name}.t"))
    db = skipidx.connect(str(tmp_path_factory.mktemp("uuid") / "db"))
    db.sql(DDL.format(t="t"))
    db.sql(INSERT.format(t="t"))
    yield db, chdb, name
    chdb.query(f"DROP DATABASE {name}")
    db.close()


def _theirs(chdb, sql: str) -> tuple[list, list, list]:
    out = json.loads(chdb.query(sql + " SETTINGS output_format_json_quote_64bit_integers = 0",
                                "JSONCompact").bytes())
    return [m["name"] for m in out["meta"]], [m["type"] for m in out["meta"]], [list(r) for r in out["data"]]


def _mine(db, sql: str) -> tuple[list, list, list]:
    res = db.sql(sql)
    rows = [[str(v) if isinstance(v, uuid.UUID) else v for v in r] for r in res.fetchall()]
    return list(res.columns), list(res.types), rows


@pytest.mark.parametrize("sql", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_uuid_like_chdb(both, sql):
    db, chdb, name = both
    want = _theirs(chdb, sql.format(t=f"{name}.t"))
    got = _mine(db, sql.format(t="t"))
    assert got[2] == want[2], (got, want)
    assert got[1] == want[1]
    assert got[0] == [c.replace(f"{name}.t", "t") for c in want[0]]


@pytest.mark.parametrize("sql", [c[1] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_uuid_errors_like_chdb(both, sql):
    db, chdb, name = both
    with pytest.raises(Exception):
        chdb.query(sql.format(t=f"{name}.t"), "JSONCompact")
    with pytest.raises(skipidx.SkipidxError) as e:
        db.sql(sql.format(t="t"))
    assert "^" in str(e.value), str(e.value)


def test_bad_literal_message_names_the_text(both):
    db, _, _ = both
    with pytest.raises(skipidx.SkipidxError, match="Cannot parse uuid zz"):
        db.sql("SELECT x FROM t WHERE u = 'zz'")
    with pytest.raises(skipidx.SkipidxError, match="Cannot parse uuid not-a-uuid"):
        db.sql("INSERT INTO t VALUES ('not-a-uuid', NULL, 9)")


@pytest.mark.parametrize("fmt", ["TabSeparated", "CSV", "JSONEachRow", "JSON", "Vertical"])
def test_uuid_formats_equal_chdb_bytes(both, fmt):
    db, chdb, name = both
    sql = "SELECT u, n, x FROM {t} ORDER BY x"
    want = chdb.query(sql.format(t=f"{name}.t") + " SETTINGS output_format_write_statistics = 0", fmt).bytes()
    res = db.sql(sql.format(t="t"))
    buf = io.BytesIO()
    write_batches(res.fetch_record_batch(), res.schema, res.types, fmt, buf)
    assert buf.getvalue() == want


def test_uuid_order_matches_chdb_on_random_values(chdb):
    rng = random.Random(7)
    # shared halves make both tie-breaks matter
    halves = [f"{rng.getrandbits(64):016x}" for _ in range(6)] + ["0" * 16, "f" * 16]
    texts = sorted({str(uuid.UUID(rng.choice(halves) + rng.choice(halves))) for _ in range(60)})
    arr = "[" + ", ".join(f"toUUID('{s}')" for s in texts) + "]"
    want = [r[0] for r in json.loads(chdb.query(f"SELECT arrayJoin({arr}) AS u ORDER BY u", "JSONCompact")
                                        .bytes())["data"]]
    with skipidx.connect() as db:
        db.sql("CREATE TABLE o (u UUID, i UInt32) ORDER BY i")
        db.sql("INSERT INTO o VALUES " + ", ".join(f"('{s}', {i})" for i, s in enumerate(texts)))
        got = [str(r[0]) for r in db.sql("SELECT u FROM o ORDER BY u").fetchall()]
        assert got == want
        # < agrees with the order: each value is below exactly the ones after it
        k = 17
        below = [str(r[0]) for r in db.sql(f"SELECT u FROM o WHERE u < '{want[k]}' ORDER BY u").fetchall()]
        assert below == want[:k]
        # a table sorted by a UUID key stores its rows in that order (inserts and merges)
        db.sql("CREATE TABLE s (u UUID, i UInt32) ORDER BY u SETTINGS index_granularity = 8")
        for lo in (0, 30):
            db.sql("INSERT INTO s VALUES " + ", ".join(f"('{s}', {i})" for i, s in enumerate(texts[lo:lo + 30])))
        db.sql("OPTIMIZE TABLE s FINAL")
        assert [str(r[0]) for r in db.sql("SELECT u FROM s").fetchall()] == want
        for k in (0, 9, 31, len(want) - 1):
            assert db.sql(f"SELECT count() FROM s WHERE u < '{want[k]}'").fetchall() == [(k,)]
            assert db.sql(f"SELECT count() FROM s WHERE u >= '{want[k]}'").fetchall() == [(len(want) - k,)]


def test_bloom_filter_on_uuid_prunes_and_keeps_matches():
    rng = random.Random(3)
    texts = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(3000)]
    with skipidx.connect() as db:
        db.sql("CREATE TABLE b (u UUID, i UInt32, INDEX bu u TYPE bloom_filter GRANULARITY 1) "
               "ORDER BY i SETTINGS index_granularity = 100")
        db.sql("INSERT INTO b VALUES " + ", ".join(f"('{s}', {i})" for i, s in enumerate(texts)))
        for picks in ([1234], [0, 2999], [5, 6, 1500, 2222]):
            lits = ", ".join(f"'{texts[p]}'" for p in picks)
            res = db.sql(f"SELECT i FROM b WHERE u IN ({lits}) ORDER BY i")
            assert [r[0] for r in res.fetchall()] == sorted(picks)
            assert res.stats.granules_selected < res.stats.granules_total // 2
            res = db.sql(f"SELECT i FROM b WHERE u = '{texts[picks[0]].upper()}'")
            assert [r[0] for r in res.fetchall()] == [picks[0]]
        absent = str(uuid.UUID(int=rng.getrandbits(128)))
        assert db.sql(f"SELECT count() FROM b WHERE u = '{absent}'").fetchall() == [(0,)]
