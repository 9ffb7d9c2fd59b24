"""Array columns: has / hasAny / hasAll / length against chDB, and element indexes
(bloom_filter, tokenbf_v1, ngrambf_v1, set, sbbf over the elements) prune without
dropping a match."""
from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import skipidx
from skipidx.apps.research import chdb_session as chdb_oracle

pytestmark = pytest.mark.chdb

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "a b", ""]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rnd = random.Random(7)
    n = 4000
    tags = [[rnd.choice(WORDS) for _ in range(rnd.randint(0, 3))] for _ in range(n)]
    tags[1234] = ["needle"]
    nums = [[rnd.randint(0, 50) for _ in range(rnd.randint(0, 2))] for _ in range(n)]
    data = pa.table({"id": pa.array(range(n), pa.uint32()), "tags": tags, "nums": pa.array(nums, pa.list_(pa.uint32()))})
    db = skipidx.connect(str(tmp_path_factory.mktemp("arr") / "db"))
    db.sql("""CREATE TABLE t (id UInt32, tags Array(String), nums Array(UInt32),
              INDEX bf tags TYPE bloom_filter GRANULARITY 1, INDEX tb tags TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1,
              INDEX st nums TYPE set(100) GRANULARITY 1, INDEX ng tags TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 1,
              INDEX sb tags TYPE sbbf('value', fpp = 0.01) GRANULARITY 1)
              ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 64""")
    db.insert("t", data)
    path = os.path.join(str(tmp_path_factory.mktemp("arrpq")), "t.parquet")
    pq.write_table(data, path)
    name = chdb_oracle.scratch_database("arr")
    chdb_oracle.query(f"CREATE TABLE {name}.t (id UInt32, tags Array(String), nums Array(UInt32)) "
                      f"ENGINE = MergeTree ORDER BY id")
    chdb_oracle.query(f"INSERT INTO {name}.t SELECT * FROM file('{path}', Parquet)")
    yield db, name
    db.close()


WHERES = ["has(tags, 'needle')", "has(tags, 'beta')", "NOT has(tags, 'beta')", "hasAny(tags, ['needle', 'zzz'])",
          "hasAll(tags, ['alpha', 'beta'])", "has(nums, 7)", "hasAny(nums, [3, 4])",
          "has(tags, 'needle') OR id = 5", "NOT hasAny(tags, ['alpha'])", "has(tags, '')", "length(tags) = 0",
          "has(tags, 'absent')", "NOT (has(tags, 'needle') AND id > 10)", "hasAll(tags, [])"]


@pytest.mark.parametrize("where", WHERES, ids=WHERES)
def test_array_predicates_match_clickhouse(tables, where):
    db, name = tables
    ours = db.sql(f"SELECT count(), sum(id) FROM t WHERE {where}").fetchall()[0]
    theirs = chdb_oracle.query(f"SELECT count(), sum(id) FROM {name}.t WHERE {where}", "TSV").bytes().decode().split()
    assert tuple(int(x) if x != "\\N" else None for x in theirs) == (ours[0], ours[1]), where


@pytest.mark.parametrize("where,kept", [("has(tags, 'needle')", 1), ("hasAny(tags, ['needle', 'zzz'])", 1),
                                        ("has(tags, 'absent')", 0), ("has(tags, 'needle') OR id = 5", 2)])
def test_element_indexes_prune(tables, where, kept):
    db, _ = tables
    st = db.sql(f"SELECT count() FROM t WHERE {where}").stats
    assert st.granules_selected == kept, (where, st.granules_selected, st.granules_total)


def test_negated_array_predicates_never_prune(tables):
    """An element index cannot prove every row matches (empty arrays hold nothing): NOT has keeps all."""
    db, _ = tables
    st = db.sql("SELECT count() FROM t WHERE NOT has(tags, 'needle')").stats
    assert st.granules_selected == st.granules_total


def test_array_functions_values(tables):
    db, name = tables
    q = "SELECT id, has(tags, 'a b'), hasAny(tags, ['gamma']), hasAll(tags, ['alpha']), length(tags) FROM {t} ORDER BY id LIMIT 50"
    ours = [tuple(int(v) for v in r) for r in db.sql(q.format(t="t")).fetchall()]
    theirs = [tuple(int(v) for v in line.split("\t"))
              for line in chdb_oracle.query(q.format(t=f"{name}.t"), "TSV").bytes().decode().splitlines()]
    assert ours == theirs


def test_minmax_on_an_array_is_refused():
    db = skipidx.connect()
    with pytest.raises(skipidx.SkipidxError, match="does not index Array columns"):
        db.sql("CREATE TABLE a (tags Array(String), INDEX m tags TYPE minmax) ENGINE = MergeTree ORDER BY tuple()")


def _same_ids_as_clickhouse(ddl: str, rows: str, index: str, table: str, where: str) -> None:
    """The ids `where` selects in skipidx (with `index` declared) and in chDB (without) are equal."""
    db = skipidx.connect()
    db.sql(ddl.format(t=table, ix=index))
    db.sql(rows.format(t=table))
    name = chdb_oracle.scratch_database(table)
    chdb_oracle.query(ddl.format(t=f"{name}.{table}", ix=""))
    chdb_oracle.query(rows.format(t=f"{name}.{table}"))
    ours = [r[0] for r in db.sql(f"SELECT id FROM {table} WHERE {where} ORDER BY id").fetchall()]
    theirs = [int(x) for x in chdb_oracle.query(f"SELECT id FROM {name}.{table} WHERE {where} ORDER BY id", "TSV")
              .bytes().decode().split()]
    assert ours == theirs, where


BOOL_WHERES = ["f IN (true)", "f NOT IN (1)", "f IN (0, 1)", "g IN (true, NULL)", "g NOT IN (false)", "f IN (2)",
               "f IN ('true')", "f = 1", "NOT f"]


@pytest.mark.parametrize("where", BOOL_WHERES, ids=BOOL_WHERES)
def test_in_on_bool_columns(where):
    _same_ids_as_clickhouse("CREATE TABLE {t} (id UInt8, f Bool, g Nullable(Bool){ix}) ENGINE = MergeTree ORDER BY id",
                            "INSERT INTO {t} VALUES (1, true, NULL), (2, false, false), (3, true, true)",
                            ", INDEX s f TYPE set(2) GRANULARITY 1", "bools", where)


FIXED_WHERES = ["fs = 'ab'", "fs != 'ab'", "fs IN ('abcd', '')", "fs = 'abcd'", "fs < 'abc'", "fs NOT IN ('ab')"]


@pytest.mark.parametrize("where", FIXED_WHERES, ids=FIXED_WHERES)
def test_fixedstring_compares_with_padded_strings(where):
    """ClickHouse compares FixedString(n) with a string constant padded with zero bytes to n."""
    _same_ids_as_clickhouse("CREATE TABLE {t} (id UInt8, fs FixedString(4){ix}) ENGINE = MergeTree ORDER BY id",
                            "INSERT INTO {t} VALUES (1, 'ab'), (2, 'abcd'), (3, '')",
                            ", INDEX b fs TYPE bloom_filter GRANULARITY 1", "fixed", where)


ILIKE_WORDS = ["Alpha", "BETA", "gamma", "Delta", "kraken", "Kraken", "salt", "Élan", "élan", "ümlaut", "ÜMLAUT", "Rare"]
ILIKE_CASES = [("%needle%", 1), ("%NEEDLE%", 1), ("%Needle here", 1), ("the%", 1), ("%zzz%", 0),
               ("%rare%", None), ("%élan%", None), ("%kraken%", None)]


def _text_table_vs_chdb(tmp_path, words: list[str], seed: int, ddl_indexes: str, where: str):
    """3000 rows of three random words (row 2000: 'the NEEDLE here') in skipidx with `ddl_indexes`
    and in chDB; returns (skipidx count/sum, chDB count/sum, skipidx stats) for `where`."""
    rnd = random.Random(seed)
    n = 3000
    rows = [" ".join(rnd.choice(words) for _ in range(3)) for _ in range(n)]
    rows[2000] = "the NEEDLE here"
    data = pa.table({"id": pa.array(range(n), pa.uint32()), "msg": rows})
    db = skipidx.connect()
    db.sql(f"CREATE TABLE t (id UInt32, msg String, {ddl_indexes}) ENGINE = MergeTree ORDER BY id "
           "SETTINGS index_granularity = 64")
    db.insert("t", data)
    path = str(tmp_path / "t.parquet")
    pq.write_table(data, path)
    name = chdb_oracle.scratch_database("text")
    chdb_oracle.query(f"CREATE TABLE {name}.t (id UInt32, msg String) ENGINE = MergeTree ORDER BY id")
    chdb_oracle.query(f"INSERT INTO {name}.t SELECT * FROM file('{path}', Parquet)")
    r = db.sql(f"SELECT count(), sum(id) FROM t WHERE {where}")
    ours = tuple(r.fetchall()[0])
    theirs = tuple(int(x) for x in chdb_oracle.query(f"SELECT count(), sum(id) FROM {name}.t WHERE {where}", "TSV")
                   .bytes().decode().split())
    return (ours[0], ours[1] or 0), theirs, r.stats


@pytest.mark.parametrize("pattern,kept", ILIKE_CASES, ids=[c[0] for c in ILIKE_CASES])
def test_ilike_prunes_with_lower_indexes(tmp_path, pattern, kept):
    """ILIKE of an ASCII pattern without k/s is LIKE lower(pattern) over lower(x), so indexes on lower(x)
    answer it; patterns a non-ASCII case fold could reach (the Kelvin sign, the long s) keep every granule."""
    w = f"msg ILIKE '{pattern}'"
    ours, theirs, st = _text_table_vs_chdb(
        tmp_path, ILIKE_WORDS, 3, "INDEX lt lower(msg) TYPE tokenbf_v1(512, 3, 0) GRANULARITY 1, "
        "INDEX ln lower(msg) TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 1", w)
    assert ours == theirs, w
    if kept is not None:
        assert st.granules_selected == kept, (w, st.granules_selected)
    if "k" in pattern or "s" in pattern:
        assert st.granules_selected == st.granules_total, w


ARRAY_JOIN_QUERIES = [
    "SELECT id, arrayJoin(tags) FROM {t} ORDER BY id, arrayJoin(tags)",
    "SELECT arrayJoin(tags) AS x, count() FROM {t} GROUP BY x ORDER BY x",
    "SELECT id, arrayJoin(n) * 2 AS y FROM {t} ORDER BY id, y",
    "SELECT arrayJoin(tags) AS x FROM {t} WHERE id > 1 ORDER BY x LIMIT 2",
    "SELECT DISTINCT arrayJoin(tags) FROM {t} ORDER BY 1",
    "SELECT id, tags, length(n) FROM {t} ORDER BY id",
]


@pytest.mark.parametrize("query", ARRAY_JOIN_QUERIES, ids=ARRAY_JOIN_QUERIES)
def test_array_join_and_array_literals_match_clickhouse(query):
    """arrayJoin repeats a row per element (empty arrays drop the row); INSERT VALUES takes array literals."""
    from skipidx.engine.formats import write_table

    ddl = "CREATE TABLE {t} (id UInt32, tags Array(String), n Array(UInt8)) ENGINE = MergeTree ORDER BY id"
    rows = "INSERT INTO {t} VALUES (1, ['a','b'], [1]), (2, [], [2,3]), (3, ['c','a','a'], [])"
    db = skipidx.connect()
    db.sql(ddl.format(t="t"))
    db.sql(rows.format(t="t"))
    name = chdb_oracle.scratch_database("aj")
    chdb_oracle.query(ddl.format(t=f"{name}.t"))
    chdb_oracle.query(rows.format(t=f"{name}.t"))
    r = db.sql(query.format(t="t"))
    ours = write_table(r.to_arrow(), "TSVWithNames", types=r.types).decode()
    assert ours == chdb_oracle.query(query.format(t=f"{name}.t"), "TSVWithNames").bytes().decode(), query


def test_array_join_outside_select_is_a_clear_error():
    db = skipidx.connect()
    db.sql("CREATE TABLE t (id UInt32, tags Array(String)) ENGINE = MergeTree ORDER BY id")
    db.sql("INSERT INTO t VALUES (1, ['a'])")
    with pytest.raises(skipidx.SkipidxError, match="arrayJoin is supported in the SELECT list"):
        db.sql("SELECT id FROM t WHERE arrayJoin(tags) = 'a'").fetchall()


POSITION_CASES = [("position(msg, 'NEEDLE') > 0", 1), ("position(msg, 'needle') > 0", 0),
                  ("positionCaseInsensitive(msg, 'needle') > 0", 1), ("position(msg, 'NEEDLE') >= 1", 1),
                  ("position(msg, '50%_') >= 1", None), ("position(msg, 'a\\\\b') > 0", None),
                  ("NOT position(msg, 'NEEDLE') > 0", None), ("position(msg, '') > 0", None),
                  ("positionCaseInsensitive(msg, 'kraken') > 0", None), ("position(msg, 'NEEDLE') = 0", None)]


@pytest.mark.parametrize("where,kept", POSITION_CASES, ids=[c[0] for c in POSITION_CASES])
def test_position_tests_prune_as_like(tmp_path, where, kept):
    """position(x, s) > 0 prunes as x LIKE '%s%' (wildcards in s escaped), positionCaseInsensitive as ILIKE."""
    words = ["Alpha", "BETA", "gamma", "Delta", "kraken", "salt", "Élan", "50%_off", "a\\b", "Rare"]
    ours, theirs, st = _text_table_vs_chdb(
        tmp_path, words, 5, "INDEX ng msg TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 1, "
        "INDEX ln lower(msg) TYPE ngrambf_v1(3, 512, 2, 0) GRANULARITY 1", where)
    assert ours == theirs, where
    if kept is not None:
        assert st.granules_selected == kept, (where, st.granules_selected)
