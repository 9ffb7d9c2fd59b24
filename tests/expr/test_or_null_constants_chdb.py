"""A call folded at bind time keeps its call's type: ``toUUIDOrNull('<uuid>')`` is
Nullable(UUID) as in ClickHouse, though the value is not NULL. Every *OrNull and
*OrZero function of the catalogue, on a good and a bad constant, against chDB
(toTypeName, the value, and the result column's type)."""
from __future__ import annotations

import pytest

import skipidx
from skipidx.expr.catalogue import CATALOGUE

pytestmark = pytest.mark.chdb

_UUID = "61f0c404-5cb3-11e7-907b-a6006ad3dba0"


def _good_args(name: str) -> str:
    """A constant argument list each conversion accepts."""
    base = name.removesuffix("OrNull").removesuffix("OrZero")
    if base.startswith(("toInt", "toUInt")):
        return "'5'"
    if base.startswith("toFloat"):
        return "'1.5'"
    if base == "toUUID":
        return f"'{_UUID}'"
    if base == "toDate":
        return "'2020-01-02'"
    if base in ("toDateTime", "parseDateTimeBestEffort"):
        return "'2020-01-02 03:04:05'"
    if base == "toDateTime64":
        return "'2020-01-02 03:04:05.25', 3"
    if base.startswith("hasToken"):
        return "'a b', 'a'"
    raise AssertionError(f"no sample argument for {name}: add one to this test")


def _bad_args(name: str) -> str:
    good = _good_args(name)
    if name.startswith("hasToken"):
        return "'a b', 'c'"
    return "'nonsense'" + good[good.index("'", 1) + 1:]


_FUNCS = sorted(f.name for f in CATALOGUE if f.name.endswith(("OrNull", "OrZero")))
_CASES = [f"{f}({args(f)})" for f in _FUNCS for args in (_good_args, _bad_args)]


def test_every_or_null_function_is_covered():
    assert len(_FUNCS) >= 30, _FUNCS
    assert {"toUUIDOrNull", "toUUIDOrZero", "toInt32OrNull", "toDateOrNull", "hasTokenOrNull"} <= set(_FUNCS)


@pytest.mark.parametrize("call", _CASES, ids=_CASES)
def test_folded_or_null_call_type_matches_clickhouse(chdb, call):
    q = f"SELECT {call} AS v, toTypeName({call}) AS t"
    with skipidx.connect() as db:
        r = db.sql(q)
        ours = (r.fetchall(), r.types)
    got = chdb.query(q, "TSVWithNamesAndTypes").bytes().decode().splitlines()
    names, types, row = got[0].split("\t"), got[1].split("\t"), got[2].split("\t")
    assert names == ["v", "t"]
    assert ours[1] == types, f"{call}: result types {ours[1]} vs chDB {types}"
    (value, type_name), = ours[0]
    assert type_name == row[1], f"{call}: toTypeName {type_name!r} vs chDB {row[1]!r}"
    if row[0] == "\\N":
        assert value is None, call
    else:
        assert value is not None, call
