"""Bound SBBF conditions are shared (bloom.py ``_CONDITIONS``) only where they must be equal.

Binding encodes and hashes an atom's constants; the memo keys that work by
subject, tokenizer, column type and seed, so ``bloom_filter`` and
``sbbf('value')`` on one column share a condition while a UInt32 column, an
index with another seed or tokenizer, or a differently typed constant gets
its own -- checked against freshly built conditions and the rows.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skipidx
from skipidx.indexes import bloom
from skipidx.indexes.base import Atom
from skipidx.expr.binder import bind_where
from skipidx.expr.select import BoundSelect
from skipidx.planner.plan import plan_query
from skipidx.sql.parser import parse_expression


@pytest.fixture()
def db(tmp_path):
    with skipidx.connect(tmp_path / "db") as d:
        for name, t in (("a", "UInt64"), ("b", "UInt32")):
            d.sql(f"""CREATE TABLE {name} (id UInt64, u {t}, msg String,
                INDEX ub u TYPE bloom_filter GRANULARITY 1,
                INDEX ua u TYPE sbbf('value', fpp = 0.001) GRANULARITY 1,
                INDEX t0 msg TYPE tokenbf_v1(256, 2, 0) GRANULARITY 1,
                INDEX t7 msg TYPE tokenbf_v1(256, 2, 7) GRANULARITY 1)
                ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 32""")
            ids = np.arange(2000, dtype=np.uint64)
            d.insert(name, pa.table({"id": ids, "u": pa.array((ids * 7919) % 1500, pa.uint64() if t == "UInt64"
                                                              else pa.uint32()),
                                     "msg": pa.array([f"w{i % 97} z{i // 50}" for i in ids.tolist()])}))
        yield d


def _conditions(db, table: str, where: str) -> dict[str, object]:
    snap = db.catalog.table(table).snapshot()
    with snap:
        plan = plan_query(snap, BoundSelect(table, [], bind_where(snap.meta, parse_expression(where))), db.index_cache)
        return {u.name: next(iter(u.conditions.values())) for u in plan.uses if u.conditions}


def _hashes(cond) -> list[int]:
    return cond._hashes[0].tolist()


def test_same_column_value_indexes_share_one_condition(db) -> None:
    c = _conditions(db, "a", "u IN (3, 77, 1499)")
    assert c["ub"] is c["ua"], "bloom_filter and sbbf('value') on one column hash a value alike"
    again = _conditions(db, "a", "u IN (3, 77, 1499)")
    assert again["ub"] is c["ub"], "a repeated lookup reuses the bound condition"


def test_other_column_type_seed_or_constant_type_is_not_shared(db) -> None:
    a = _conditions(db, "a", "u IN (3, 77)")["ub"]
    b = _conditions(db, "b", "u IN (3, 77)")["ub"]
    assert a is not b
    assert {len(t) for g in a.requirement.any_of for t in g} == {8} and \
        {len(t) for g in b.requirement.any_of for t in g} == {4}, "UInt64 vs UInt32 PLAIN encodings"
    tok = _conditions(db, "a", "hasToken(msg, 'w5')")
    assert tok["t0"] is not tok["t7"] and _hashes(tok["t0"]) != _hashes(tok["t7"]), "seeds 0 and 7 hash differently"


@pytest.mark.parametrize("args", [((1.0,),), ((-0.0,),), ((True,),)], ids=["1.0", "-0.0", "True"])
def test_equal_but_differently_typed_constants_get_their_own_condition(db, args) -> None:
    """1 == 1.0 == True and 0.0 == -0.0 in Python: the memo keys by repr too."""
    snap = db.catalog.table("a").snapshot()
    with snap:
        use = next(u for u in plan_query(snap, BoundSelect("a", [], bind_where(
            snap.meta, parse_expression("u = 1"))), db.index_cache).uses if u.name == "ub")
    itype = use.itype
    ref = Atom("in", "u", None, ((1,),)) if args[0][0] != 0 else Atom("in", "u", None, ((0,),))
    first = itype.condition(ref)
    other = itype.condition(Atom("in", "u", None, args))
    assert other is not first


@pytest.mark.parametrize("table", ["a", "b"])
@pytest.mark.parametrize("where", ["u IN (3, 77, 1499)", "u = 1234", "hasToken(msg, 'z7')", "u NOT IN (5)",
                                   "u IS NULL"])
def test_memoized_condition_equals_a_fresh_one_and_prunes_soundly(db, table: str, where: str) -> None:
    for name, cond in _conditions(db, table, where).items():
        snap = db.catalog.table(table).snapshot()
        with snap:
            use = next(u for u in plan_query(snap, BoundSelect(table, [], bind_where(
                snap.meta, parse_expression(where))), db.index_cache).uses if u.name == name)
        fresh = use.itype._condition(cond.atom)
        assert type(fresh) is type(cond) and fresh.describe() == cond.describe(), f"{where} on {name}"
        if isinstance(cond, bloom.SBBFCondition) and cond._hashes is not None:
            assert _hashes(fresh) == _hashes(cond), f"{where} on {name}: hashes differ"
    r = db.sql(f"SELECT count() FROM {table} WHERE {where}").scalar()
    col = db.sql(f"SELECT u, msg FROM {table}").to_arrow()   # no WHERE: every row
    u = col.column("u")
    want = {"u IN (3, 77, 1499)": pc.is_in(u, pa.array([3, 77, 1499], u.type)),
            "u = 1234": pc.equal(u, 1234),
            "hasToken(msg, 'z7')": pc.match_substring_regex(col.column("msg"), r"(^|[^a-zA-Z0-9])z7($|[^a-zA-Z0-9])"),
            "u NOT IN (5)": pc.not_equal(u, 5),
            "u IS NULL": pc.is_null(u)}[where]
    n_want = int(pc.sum(pc.cast(want, pa.int64())).as_py() or 0)
    assert r == n_want, f"{table}: WHERE {where} counted {r}, the rows say {n_want}"


def test_plugin_tokenizer_configured_by_ddl_gets_its_own_condition(tmp_path):
    """A plugin tokenizer whose `params` is empty is configured by the DDL's
    parameters (n = 3 vs n = 5): two such indexes on one column must not share
    a bound condition (they hash different n-grams: sharing dropped every
    matching granule)."""
    from skipidx.core.tokenizer_api import register_tokenizer
    from skipidx_tokenizers.ngram import NgramTokenizer

    class DdlGrams(NgramTokenizer):
        name = "ddl_grams_memo"
        version = "1"

        @property
        def params(self):
            return {}

    register_tokenizer("ddl_grams_memo", DdlGrams)
    rows = ", ".join(f"({i}, '{'needle here' if i % 100 == 7 else f'other text {i}'}')" for i in range(1600))
    with skipidx.connect(tmp_path / "db") as d:
        d.sql("""CREATE TABLE t (id UInt32, msg String,
                 INDEX g3 msg TYPE sbbf('ddl_grams_memo', n = 3, fpp = 0.0001) GRANULARITY 1,
                 INDEX g5 msg TYPE sbbf('ddl_grams_memo', n = 5, fpp = 0.0001) GRANULARITY 1)
                 ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 16""")
        d.sql("INSERT INTO t VALUES " + rows)
        res = d.sql("SELECT count() FROM t WHERE msg LIKE '%needle%'")
        assert res.fetchall() == [(16,)], "16 rows hold 'needle'"
        for name in ("g3", "g5"):
            assert res.stats.index(name).granules_after >= 16, \
                f"{name} alone must keep the 16 granules holding 'needle'"


def test_in_list_plans_keep_zero_and_negative_zero_apart(tmp_path):
    """``IN (0.)`` and ``IN (-0.)`` are equal to Python but not to ClickHouse
    (floats in IN compare by bits): a cached IN list must not answer for the
    other, whatever ran before. chDB is the oracle."""
    from skipidx.apps.research import chdb_session as _chdb

    ddl = ("CREATE TABLE {t} (id UInt32, f Float64, INDEX b f TYPE bloom_filter GRANULARITY 1) "
           "ENGINE = MergeTree ORDER BY id SETTINGS index_granularity = 2")
    ins = "INSERT INTO {t} VALUES (1, -0.), (2, -0.), (3, 1.), (4, 2.), (5, 0.), (6, 0.)"
    sch = _chdb.scratch_database("inzero")
    _chdb.query(ddl.format(t=f"{sch}.t"))
    _chdb.query(ins.format(t=f"{sch}.t"))
    with skipidx.connect(tmp_path / "db") as d:
        d.sql(ddl.format(t="t"))
        d.sql(ins.format(t="t"))
        for lst in ("-0., 5.", "0., 5.", "-0.", "0.", "0., -0.", "-0., 0."):
            got = [r[0] for r in d.sql(f"SELECT id FROM t WHERE f IN ({lst}) ORDER BY id").fetchall()]
            text = str(_chdb.query(f"SELECT id FROM {sch}.t WHERE f IN ({lst}) ORDER BY id", "CSV")).split()
            assert got == [int(x) for x in text], f"f IN ({lst}): skipidx {got}, chDB {text}"
