"""Shared by the golden-table tests of tests/sql: one skipidx database and one chDB
scratch database holding the same tables, and the comparison of a query's column
names, ClickHouse types and rows between the two."""
from __future__ import annotations

import datetime as _dt

import skipidx
from skipidx.apps.research import chdb_session as ch


class Pair:
    """The same tables in skipidx (``db``) and in a chDB scratch database (``name``):
    queries write ``{db}t`` for a table, which reads ``t`` here and ``name.t`` there."""

    def __init__(self, setup: list[str], prefix: str) -> None:
        self.name = ch.scratch_database(prefix)
        self.db = skipidx.connect()
        for q in setup:
            ch.query(q.format(db=f"{self.name}."))
            self.db.sql(q.format(db=""))

    def theirs(self, q: str):
        """(column names, types, rows) of `q` in chDB."""
        sql = q.format(db=f"{self.name}.")
        table = ch.query(sql, "ArrowTable")
        types = [line.split("\t")[1] for line in
                 ch.query(f"DESCRIBE ({sql})", "TabSeparated").bytes().decode().splitlines()]
        return table.column_names, types, table.to_pylist()

    def check(self, q: str) -> None:
        names, types, rows = self.theirs(q)
        mine = self.db.sql(q.format(db=""))
        assert mine.columns == names
        assert mine.types == types
        assert [_comparable(r, t) for r, t in zip(mine.to_arrow().to_pylist(), rows)] == rows
        assert mine.num_rows == len(rows)

    def chdb_error(self, q: str) -> str:
        """chDB's error text for `q` (it must fail there)."""
        try:
            ch.query(q.format(db=f"{self.name}."), "ArrowTable")
        except Exception as e:      # chDB raises its own RuntimeError subclass
            return str(e)
        raise AssertionError(f"chDB ran {q!r} without an error")

    def close(self) -> None:
        self.db.close()
        ch.query(f"DROP DATABASE IF EXISTS {self.name}")


def _comparable(row: dict, theirs: dict) -> dict:
    """`row` with a DateTime as chDB's Arrow output writes one (seconds since the epoch)
    where chDB has an int: the only representation the two differ in."""
    out = {}
    for (k, v), tv in zip(row.items(), theirs.values()):
        if isinstance(v, _dt.datetime) and isinstance(tv, int):
            v = int(v.replace(tzinfo=_dt.timezone.utc).timestamp()) if v.tzinfo is None else int(v.timestamp())
        out[k] = v
    return out
