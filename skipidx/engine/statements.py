"""Running the second-round statements for :class:`~skipidx.engine.database.Database`.

Kept apart from database.py: SELECT with query SETTINGS, PREWHERE, table
functions and output clauses; ``INSERT ... SELECT``; ``CREATE TABLE ... AS
SELECT``; ``TRUNCATE``; multi-command ``ALTER`` with ADD/DROP COLUMN and
MODIFY SETTING; ``SHOW CREATE TABLE``; ``EXISTS``; ``SET``.

:func:`run` returns a Result for the statements it handles and None for
those the database runs itself.
"""
from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import Any

import pyarrow as pa
from skipidx.core.lazy import compute as pc

from skipidx.core.errors import BindError, SkipidxError
from skipidx.engine.result import Result
from skipidx.engine.settings import (
    QueryLimitError, QuerySettings, _quantity, resolve_settings, result_rows_exceeded, setting_value,
)
from skipidx.sql import ast as A

__all__ = ["run", "session_settings", "session_params", "select_result", "show_create_text"]

INDEX_NOT_USED = 277
TOO_MANY_ROWS = 158
TOO_MANY_BYTES = 307


_err = BindError.at   # (the error at the node's position)


def session_settings(db: Any) -> dict[str, Any]:
    """The settings `SET` gave this database connection."""
    return db.session_settings


def session_params(db: Any) -> dict[str, Any]:
    """The query parameters `SET param_name = value` gave this database connection."""
    return db.session_params


def _param_value(kv: A.KeywordArg) -> Any:
    if not isinstance(kv.value, A.Literal):
        raise _err(f"SET {kv.name}: the value must be a literal", kv)
    v = kv.value.value
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v


def resolve_subqueries(db: Any, s: A.Statement) -> A.Statement:
    """`s` with every ``x [NOT] IN (SELECT ...)`` replaced by the list of the subquery's
    values (run first, as ClickHouse builds the set before index analysis): the IN then
    binds, prunes and filters as a constant IN list does; and every scalar subquery
    ``(SELECT ...)`` by its one value (:class:`~skipidx.sql.ast.ScalarValue`), run once
    before the outer query is bound, so the indexes prune on that constant. A new
    statement object each run: a plan kept on the statement never holds an old value."""
    if not isinstance(s, (A.Select, A.Explain, A.InsertSelect, A.CreateTable, A.Union)):
        return s
    from skipidx.sql.with_clause import inline_with

    # (the same rewritten object for a repeated statement: its plans stay kept)
    def exists(name: str) -> bool:
        return _is_name(name) and db.catalog.exists(name)

    from skipidx.expr.binder import resolve_limits

    # LIMIT k folded first (subqueries run below see their own folded), and again after
    # the scalar subqueries have run (`LIMIT (SELECT 3)`)
    s = A.memo(s, "with_inlined", lambda st: resolve_limits(inline_with(st, exists)))
    if not A.memo(s, "has_subquery_in", _has_subquery_in):
        return s
    return resolve_limits(_resolve(db, s, _Scope()))


class _Scope:
    """The SELECT being resolved: how many scalar subqueries it has numbered, and its
    WITH aliases whose expression holds a subquery (resolved, and numbered, where the
    query first names them -- ClickHouse numbers them there -- or at the end)."""

    def __init__(self, select: A.Select | None = None) -> None:
        self.n = 0
        self.with_ = list(select.with_) if select is not None else []
        self.pending = {w.name: i for i, w in enumerate(self.with_)
                        if w.expr is not None and _has_subquery_in(w.expr)}

    def use(self, db: Any, name: str) -> None:
        i = self.pending.pop(name, None)
        if i is not None:
            w = self.with_[i]
            self.with_[i] = dataclasses.replace(w, expr=_resolve(db, w.expr, self))

    def finish(self, db: Any) -> tuple:
        for name in list(self.pending):
            self.use(db, name)
        return tuple(self.with_)


def _is_in_subquery(node: Any) -> bool:
    return isinstance(node, A.InList) and len(node.items) == 1 and isinstance(node.items[0], A.Subquery)


def _has_subquery_in(node: Any) -> bool:
    """Whether `node` holds an ``x [NOT] IN (SELECT ...)`` or a scalar subquery anywhere
    (what _resolve replaces)."""
    if isinstance(node, (A.Literal, A.Column)):
        return False      # leaves (a long IN list is mostly literals)
    if _is_in_subquery(node) or isinstance(node, A.ScalarSubquery):
        return True
    if isinstance(node, tuple):
        return any(_has_subquery_in(x) for x in node if isinstance(x, (A.Node, tuple)))
    if isinstance(node, A.Node):
        return any(_has_subquery_in(getattr(node, name)) for name in A.node_fields(type(node)))
    return False


def _resolve(db: Any, node: Any, counter: "_Scope") -> Any:
    """`node` resolved; `counter` numbers the scalar subqueries of the SELECT being walked
    (ClickHouse names them _subquery_1, ... in the order its analyzer meets them: the
    SELECT list first, left to right; each SELECT counts its own)."""
    if isinstance(node, A.Column):
        if node.table is None and counter.pending:
            counter.use(db, node.name)
        return node
    if isinstance(node, A.Literal):
        return node
    if _is_in_subquery(node):
        return dataclasses.replace(node, expr=_resolve(db, node.expr, counter), items=_in_values(db, node))
    if isinstance(node, A.ScalarSubquery):
        counter.n += 1
        return _scalar_value(db, node, f"_subquery_{counter.n}")
    if isinstance(node, A.Select):
        scope = _Scope(node)
        changes = {}
        for name in A.node_fields(A.Select):
            if name == "with_":
                continue
            v = getattr(node, name)
            nv = _resolve_value(db, v, scope)
            if nv is not v:
                changes[name] = nv
        with_ = scope.finish(db)
        if any(a is not b for a, b in zip(with_, node.with_)):
            changes["with_"] = with_
        return dataclasses.replace(node, **changes) if changes else node
    if isinstance(node, A.Node) and dataclasses.is_dataclass(node):
        changes = {}
        for name in A.node_fields(type(node)):
            v = getattr(node, name)
            nv = _resolve_value(db, v, counter)
            if nv is not v:
                changes[name] = nv
        return dataclasses.replace(node, **changes) if changes else node
    return node


def _resolve_value(db: Any, v: Any, counter: "_Scope") -> Any:
    if isinstance(v, A.Node):
        return _resolve(db, v, counter)
    if isinstance(v, tuple) and v and any(isinstance(x, (A.Node, tuple)) for x in v):
        items = tuple(_resolve_value(db, x, counter) for x in v)
        return v if all(a is b for a, b in zip(items, v)) else items
    return v


#: ClickHouse's error code of a scalar subquery with more than one row (or an empty one
#: of a type that cannot be Nullable).
INCORRECT_RESULT_OF_SCALAR_SUBQUERY = 125


def _scalar_value(db: Any, node: A.ScalarSubquery, name: str) -> A.ScalarValue:
    """Run the scalar subquery `node` and return its value, typed as ClickHouse types it:
    Nullable(T) where T can be inside Nullable (an empty result is then NULL), else T
    (an empty result of such a type is an error); more than one row is an error."""
    if not isinstance(node.query, (A.Select, A.Union)):
        raise _err("a scalar subquery must be a SELECT, not EXPLAIN", node)
    table, _stats, types = _select_table(db, _resolve(db, node.query, _Scope()))
    if types is None:
        types = Result(table).types
    if table.num_columns != 1:
        raise _err(f"a scalar subquery returning {table.num_columns} columns (a Tuple) is not supported: "
                   "select one column", node)
    if table.num_rows > 1:
        raise _err("Scalar subquery returned more than one row. (INCORRECT_RESULT_OF_SCALAR_SUBQUERY)", node)
    t = types[0]
    nullable_ok = not t.startswith(("Array(", "LowCardinality(", "Map(", "Tuple(", "Nullable(")) and t != "Nothing"
    if table.num_rows == 0 and not nullable_ok and not t.startswith("Nullable("):
        raise _err(f"Scalar subquery returned empty result of type {t} which cannot be Nullable. "
                   "(INCORRECT_RESULT_OF_SCALAR_SUBQUERY)", node)
    value = _python_value(table.column(0)[0].as_py()) if table.num_rows else None
    return A.ScalarValue(value, f"Nullable({t})" if nullable_ok else t, name, pos=node.pos)


def _python_value(v: Any) -> Any:
    """A value of an Arrow column as the binder's constants hold it (bytes for a String,
    tuples for arrays)."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if isinstance(v, list):
        return tuple(_python_value(x) for x in v)
    return v


def _in_values(db: Any, node: A.InList) -> tuple[A.Expr, ...]:
    sub = node.items[0]
    if not isinstance(sub.query, (A.Select, A.Union)):
        raise _err("IN takes a SELECT subquery, not EXPLAIN", sub)
    table, _stats, _types = _select_table(db, _resolve(db, sub.query, _Scope()))
    tup = node.expr.items if isinstance(node.expr, A.TupleLiteral) else (
        node.expr.args if isinstance(node.expr, A.FunctionCall) and node.expr.name.lower() == "tuple" else None)
    left = len(tup) if tup is not None else 1
    if table.num_columns != left:
        raise _err(f"Number of columns in section IN doesn't match. {left} at left, {table.num_columns} at right. "
                   "(NUMBER_OF_COLUMNS_DOESNT_MATCH)", sub)
    if tup is None:
        items = tuple(_literals(table.column(0), sub))
        if not items:       # an empty set: nothing is IN it
            items = (A.Literal(None, "null", pos=sub.pos),)
        return items
    # several columns: the rows as tuples (the binder drops repeats), not each column's distinct values
    cols = [_literals(table.column(i), sub, distinct=False) for i in range(table.num_columns)]
    items = tuple(A.TupleLiteral(tuple(r), pos=sub.pos) for r in zip(*cols))
    if not items:           # an empty set: a tuple of NULLs never matches
        items = (A.TupleLiteral(tuple(A.Literal(None, "null", pos=sub.pos) for _ in range(left)), pos=sub.pos),)
    return items


def _literals(col: Any, at: Any, distinct: bool = True) -> list[A.Expr]:
    """The values of a subquery's column as literals (distinct, in first-seen order, unless
    not `distinct`: then one per row)."""
    import datetime as _dt

    import uuid as _uuid

    from skipidx.core.types import is_uuid, uuid_array
    from skipidx.core.arrays import one_array

    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    # (Arrow's unique refuses the UUID extension type: its bytes are deduplicated)
    if distinct:
        col = uuid_array(pc.unique(one_array(col).storage)) if is_uuid(col.type) else pc.unique(col)
    out: list[A.Expr] = []
    for v in col.to_pylist():
        if v is None:
            out.append(A.Literal(None, "null", pos=at.pos))
        elif isinstance(v, bool):
            out.append(A.Literal(v, "bool", pos=at.pos))
        elif isinstance(v, int):
            out.append(A.Literal(v, "int", pos=at.pos))
        elif isinstance(v, float):
            out.append(A.Literal(v, "float", pos=at.pos))
        elif isinstance(v, str):
            out.append(A.Literal(v.encode("utf-8", "surrogateescape"), "string", pos=at.pos))
        elif isinstance(v, bytes):
            out.append(A.Literal(v, "string", pos=at.pos))
        elif isinstance(v, _uuid.UUID):
            out.append(A.Literal(str(v).encode(), "string", pos=at.pos))
        elif isinstance(v, _dt.datetime) and v.tzinfo is None:
            out.append(A.Literal(v.strftime("%Y-%m-%d %H:%M:%S").encode(), "string", pos=at.pos))
        elif isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
            out.append(A.Literal(v.isoformat().encode(), "string", pos=at.pos))
        else:
            raise _err(f"IN (SELECT ...): values of type {col.type} are not supported in the set", at)
    return out


def run(db: Any, s: A.Statement) -> Result | None:
    """Run `s` if it is one of this module's statements; None otherwise."""
    if isinstance(s, A.Union):
        table, stats, types = _select_table(db, s)
        res = Result(table, stats, types=types)
        res.format_name = s.format
        res.outfile = s.outfile
        return res
    if isinstance(s, A.Select):
        return select_result(db, s)
    if isinstance(s, A.InsertSelect):
        return _insert_select(db, s)
    if isinstance(s, A.InsertValues):
        resolve_settings(session_settings(db), s.settings)    # validated; none changes an insert here
        return _insert_values_with_defaults(db, s)
    if isinstance(s, A.CreateTable) and s.as_select is not None:
        return _create_as_select(db, s)
    if isinstance(s, A.Truncate):
        return _truncate(db, s)
    if isinstance(s, A.Alter):
        return _alter(db, s)
    if isinstance(s, (A.AlterAddColumn, A.AlterDropColumn, A.AlterModifySetting)):
        return _alter_command(db, s)
    if isinstance(s, (A.AlterAddIndex, A.AlterDropIndex, A.AlterMaterializeIndex)):
        return _alter_index_group(db, s)
    if isinstance(s, A.ShowCreate):
        t = db._table(s.table)
        engine = t.engine_sql if getattr(t, "kind", None) == "external" else None
        return Result(pa.table({"statement": pa.array([show_create_text(t.meta, engine)], pa.string())}))
    if isinstance(s, A.ExistsTable):
        name = s.table.name
        exists = db.catalog.exists(name) if _is_name(name) else False
        return Result(pa.table({"result": pa.array([1 if exists else 0], pa.uint8())}))
    if isinstance(s, A.SetStatement):
        # `SET param_x = v` defines query parameter x, as in clickhouse-client
        params = {kv.name[len("param_"):]: _param_value(kv) for kv in s.settings if kv.name.startswith("param_")}
        new = {kv.name: setting_value(kv.name, kv.value, kv) for kv in s.settings
               if not kv.name.startswith("param_")}
        session_settings(db).update(new)
        session_params(db).update(params)
        return Result(message="set")
    return None


def _is_name(name: str) -> bool:
    from skipidx.store.metadata import check_identifier

    try:
        check_identifier(name, "table")
    except SkipidxError:
        return False
    return True


# ---------------------------------------------------------------------------- SELECT

def _with_prewhere(s: A.Select) -> A.Select:
    """PREWHERE p WHERE w reads as WHERE p AND w (same rows; the read order is the
    performance engineer's)."""
    if s.prewhere is None:
        return s
    where = s.prewhere if s.where is None else A.BoolOp("and", (s.prewhere, s.where), pos=s.prewhere.pos)
    return dataclasses.replace(s, where=where, prewhere=None)


def select_result(db: Any, s: A.Select) -> Result:
    """Run a SELECT (any source) under its settings; the Result carries FORMAT/INTO OUTFILE.
    A large SELECT of a table's rows streams (skipidx.engine.streaming)."""
    res = _select_streamed(db, s)
    if res is None:
        table, stats, types = _select_table(db, s)
        res = Result(table, stats, types=types)
    res.format_name = s.format
    res.outfile = s.outfile
    return res


#: Plans kept per statement object (one per table metadata, database and settings it ran with).
PLAN_TEMPLATES_PER_STATEMENT = 4
_PLANS_LOCK = threading.Lock()


def _plan_templates(db: Any, snap: Any, s: A.Select, qs: QuerySettings) -> tuple[dict | None, Any]:
    """Where the plans of SELECT `s` are kept, and this run's key there (None: not kept).

    A plan is a function of the statement, the table's metadata (the same TableMeta
    object while the metadata is unchanged: store/commit.py shares it by its canonical
    JSON) and the settings, never of the parts: a repeated statement -- the parse cache
    hands back the same object -- binds and plans once per metadata. Kept on the
    statement itself (A.memo), so the plans live as long as the statement; the entry
    checks the metadata and the index cache by identity (an ALTER by any connection or
    process gives a new metadata object, so a stale plan is never used)."""
    if snap.kind != "merge_tree" or db.index_cache is None:
        return None, None
    try:
        key = (id(db.index_cache), id(snap.meta), tuple(sorted(qs.values.items())))
        hash(key)
    except TypeError:
        return None, None
    return A.memo(s, "plans", lambda _: {}), key


def _plan_select(db: Any, snap: Any, q: A.Select, s: A.Select, qs: QuerySettings):
    """(bound select, plan, before_scan) of SELECT `q` (`s` as written) over `snap`, with
    the query's settings applied: expression indexes, index settings, PREWHERE, threads;
    `before_scan` checks forced indexes and read limits once the pruning is known."""
    from skipidx.expr.binder import bind_select
    from skipidx.planner.plan import copy_plan, plan_query, retain_parts

    plans, key = _plan_templates(db, snap, s, qs)
    hit = plans.get(key) if plans is not None else None
    if hit is not None and hit[0]() is db.index_cache and hit[1] is snap.meta:
        plan = copy_plan(hit[2], snap)
        retain_parts(snap, db.index_cache)
        plan.executor = db.executor
    else:
        bs = bind_select(snap.meta, q)
        plan = plan_query(snap, bs, db.index_cache)
        _use_expression_indexes(plan, snap.meta, db.index_cache)
        _apply_index_settings(plan, qs)
        apply_prewhere(plan, qs, s)
        apply_threads(plan, qs, db.executor)
        if plans is not None and not bs.per_query:
            template = copy_plan(plan, None)
            template.executor = None
            with _PLANS_LOCK:
                while len(plans) >= PLAN_TEMPLATES_PER_STATEMENT:
                    plans.pop(next(iter(plans)))
                plans[key] = (weakref.ref(db.index_cache), snap.meta, template)
    bs = plan.select

    def before_scan(selections: list, stats: Any) -> None:
        _check_forced_indexes(plan, qs)
        _check_read_limits(selections, plan, qs, bs)

    return bs, plan, before_scan


def _select_streamed(db: Any, s: A.Select) -> Result | None:
    """A SELECT over a table as a (possibly streamed) Result with ClickHouse's
    column types; None for table functions and SELECTs without FROM."""
    from skipidx.engine.streaming import select_stream

    qs = resolve_settings(session_settings(db), s.settings)
    q = _with_prewhere(s)
    if q.table_function is not None or q.table is None or q.subquery is not None or q.limit_by is not None:
        return None
    from skipidx.engine.window import has_windows

    if has_windows(q):
        return None
    ref = db._local_ref(q.table)
    if ref.database is not None:     # a system table: built, not streamed
        return None
    q = dataclasses.replace(q, table=ref)
    table = db._table(q.table)
    snap = table.snapshot()
    try:
        _bs, plan, before_scan = _plan_select(db, snap, q, s, qs)
        # select_stream owns the snapshot from here on (closed when the rows are done)
        return select_stream(snap, plan, force=False, before_scan=before_scan,
                             max_result_rows=qs.get("max_result_rows"))
    except BaseException:
        snap.close()
        raise


def select_table(db: Any, s: A.Select):
    """(Arrow table, stats) of a SELECT."""
    return _select_table(db, s)[:2]


def _select_table(db: Any, s: A.Select):
    """(Arrow table, stats, ClickHouse types or None) of a SELECT: the types are the
    bound ones for a table function (a Nullable column stays Nullable without NULLs)."""
    from skipidx.expr.binder import bind_select
    from skipidx.engine.query import run_constant_select, run_query

    if isinstance(s, A.Union):
        from skipidx.engine.union import union_table

        return union_table(db, s, _select_table)
    from skipidx.engine.window import has_windows

    if has_windows(s):
        from skipidx.engine.window import window_table

        return window_table(db, s, _select_table)
    if s.limit_by is not None:
        from skipidx.engine.limit_by import limit_by_table

        return limit_by_table(db, s, _select_table)
    qs = resolve_settings(session_settings(db), s.settings)
    q = _with_prewhere(s)
    if q.subquery is not None:
        return _select_derived(db, q, qs)
    if q.table_function is not None:
        return _select_table_function(q, qs)
    if q.table is None:
        from skipidx.engine.streaming import bound_types

        bs = bind_select(None, q)
        out = run_constant_select(bs)
        return out, None, bound_types(bs, out)
    ref = db._local_ref(q.table)
    if ref.database is not None:     # a system table (engine/system_tables.py)
        data, meta = db._system_table(ref.name, dict(qs.values), q)
        return _select_from_data(dataclasses.replace(q, table=None), qs, data, meta, ref.to_sql())
    q = dataclasses.replace(q, table=ref)
    table = db._table(q.table)
    with table.snapshot() as snap:
        bs, plan, before_scan = _plan_select(db, snap, q, s, qs)
        out, stats = run_query(plan, before_scan=before_scan)
    limit = qs.get("max_result_rows")
    if limit and out.num_rows > limit:
        raise result_rows_exceeded(limit, out.num_rows)
    from skipidx.engine.streaming import bound_types

    return out, stats, bound_types(bs, out)


def _group_of(meta: Any) -> dict[str, str]:
    """Index name -> the name it was declared under (a tuple-form index's members
    ``i``, ``i__1``, ... all map to ``i``)."""
    return {im.name: (im.definition.group[0] if im.definition.group else im.name)
            for im in meta.indexes}


def _bound_key(e: Any) -> Any:
    """A bound expression compared by meaning (function, arguments, type), not by its text."""
    from skipidx.expr.bound import BCall, BColumn, BConst

    if isinstance(e, BColumn):
        return ("col", e.name)
    if isinstance(e, BConst):
        return ("const", repr(e.value), str(e.type))
    if isinstance(e, BCall):
        return ("call", e.func, tuple(_bound_key(a) for a in e.args), str(e.type))
    return ("other", id(e))


def _use_expression_indexes(plan: Any, meta: Any, cache: Any) -> None:
    """Indexes on expressions (``INDEX i id * 2 TYPE ...``): where the WHERE holds the
    same expression, the RPN sees the index's virtual column there, so the index
    answers those atoms. The scan still evaluates the WHERE as written."""
    exprs = [im.definition for im in meta.indexes if getattr(im.definition, "expression", None)]
    if not exprs or plan.select.where is None:
        return
    from skipidx.expr.binder import Binder
    from skipidx.expr.bound import BCall, BColumn
    from skipidx.planner.prune import plan_indexes
    from skipidx.planner.rpn import build_rpn
    from skipidx.sql.parser import parse_expression

    virtual = {}
    for d in exprs:
        try:
            b = Binder(meta).expr(parse_expression(d.expression))
        except SkipidxError:
            continue      # a definition that no longer binds answers nothing (its index stays unused)
        virtual[_bound_key(b)] = BColumn(d.column, b.type, getattr(b, "nullable", False), d.expression_type)

    def rewrite(e: Any) -> Any:
        v = virtual.get(_bound_key(e)) if isinstance(e, BCall) else None
        if v is not None:
            return v
        if isinstance(e, BCall):
            args = tuple(rewrite(a) for a in e.args)
            if any(x is not y for x, y in zip(args, e.args)):
                return dataclasses.replace(e, args=args)
        return e

    where = rewrite(plan.select.where)
    if where is plan.select.where:
        return
    plan.rpn = build_rpn(where)
    plan.uses = plan_indexes(plan.rpn, meta, cache)




def apply_prewhere(plan: Any, qs: QuerySettings, s: A.Select) -> None:
    """Which filter the scan reads first: an explicit ``PREWHERE p`` (p's columns,
    whatever the setting), else the whole WHERE unless optimize_move_to_prewhere = 0
    (ClickHouse moves conditions to PREWHERE by default too)."""
    from skipidx.expr.binder import bind_where
    from skipidx.planner.plan import set_prewhere

    if s.prewhere is not None:
        try:
            p = bind_where(plan.snapshot.meta, s.prewhere)
        except SkipidxError:
            p = None    # e.g. a SELECT alias: the query bound it with the WHERE; read it all first
        if p is not None:
            set_prewhere(plan, p, explicit=True)
            return
    # (decided again: the index settings may have dropped indexes since plan_query)
    set_prewhere(plan, plan.select.where if qs.get("optimize_move_to_prewhere") else None)


def apply_threads(plan: Any, qs: QuerySettings, executor: Any) -> None:
    """max_threads = n reads with at most n concurrent scan jobs (0: the executor's default,
    the database's max_threads or the machine's cores), on the database's scan executor."""
    plan.threads = int(qs.get("max_threads")) or None
    plan.executor = executor


def _apply_index_settings(plan: Any, qs: QuerySettings) -> None:
    """use_skip_indexes = 0 drops every skip index (the ORDER BY key's min/max stays,
    as ClickHouse's primary key); ignore_data_skipping_indices drops the named ones;
    query_plan_direct_read_from_text_index = 0 reads the column for count()s too;
    text_index_row_filter = 0 evaluates such a WHERE per row over the column read."""
    plan.direct_read = bool(qs.get("query_plan_direct_read_from_text_index"))
    plan.row_filter = bool(qs.get("text_index_row_filter"))
    if not qs.get("use_skip_indexes"):
        plan.uses = [u for u in plan.uses if u.is_primary_key]
        return
    ignored = set(qs.index_names("ignore_data_skipping_indices"))
    if ignored:
        group = _group_of(plan.snapshot.meta)
        plan.uses = [u for u in plan.uses if u.is_primary_key or group.get(u.name, u.name) not in ignored]


def _check_forced_indexes(plan: Any, qs: QuerySettings) -> None:
    """ClickHouse's force_data_skipping_indices: each named index must be usable for
    the WHERE clause (it may still keep every granule); skipped when use_skip_indexes = 0."""
    if not qs.get("use_skip_indexes"):
        return
    forced = qs.index_names("force_data_skipping_indices")
    group = _group_of(plan.snapshot.meta) if forced else {}
    used = {group.get(u.name, u.name) for u in plan.uses if not u.is_primary_key and _index_used(u)}
    for name in forced:
        if name not in used:
            raise QueryLimitError(f"Index `{name}` is not used and setting 'force_data_skipping_indices' "
                                  "contains it", INDEX_NOT_USED, "INDEX_NOT_USED")
    if qs.get("force_primary_key") and plan.select.where is not None:
        if not any(u.is_primary_key and _index_used(u) for u in plan.uses):
            raise QueryLimitError("Primary key is not used and setting 'force_primary_key' is set",
                                  277, "INDEX_NOT_USED")


def _index_used(use: Any) -> bool:
    """Whether an index can answer the WHERE in a way that prunes (the planner
    reads exactly those; ClickHouse's 'useful' index: `s != 'x'` makes a bloom
    filter useless)."""
    return bool(use.useful)


def _size(n: float) -> str:
    """ClickHouse's formatReadableSizeWithBinarySuffix."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    i = 0
    v = float(n)
    while abs(v) >= 1024 and i < len(units) - 1:
        v /= 1024
        i += 1
    return f"{v:.2f} {units[i]}"


def _trivial_count(bs: Any) -> bool:
    """``SELECT count() FROM t`` without WHERE: ClickHouse answers it from part
    metadata, reading no rows (so no read limit applies)."""
    from skipidx.expr.bound import BAgg

    return (bs.where is None and bs.aggregate and not bs.group_by
            and all(isinstance(i.expr, BAgg) and i.expr.func == "count" and i.expr.arg is None
                    and i.expr.cond is None for i in bs.items))


def _row_bytes(meta: Any, columns: list[str]) -> int:
    """Uncompressed bytes per row of `columns` as ClickHouse counts them for
    max_bytes_to_read (fixed width; a String as its 8-byte offset plus 8 bytes of text)."""
    total = 0
    for name in columns:
        t = meta.column(name).type
        at = t.arrow_type
        if pa.types.is_string(at) or pa.types.is_binary(at):
            w = 16
        elif pa.types.is_boolean(at):
            w = 1
        else:
            w = max(1, at.bit_width // 8)
        total += w + (1 if t.nullable else 0)
    return total


def _check_read_limits(selections: list, plan: Any, qs: QuerySettings, bs: Any) -> None:
    max_rows, max_bytes = qs.get("max_rows_to_read"), qs.get("max_bytes_to_read")
    if not (max_rows or max_bytes) or _trivial_count(bs):
        return
    from skipidx.execution.scan import rows_in_ranges

    rows = sum(rows_in_ranges(sel.part, sel.ranges) for sel in selections)
    if max_rows and rows > max_rows:
        raise QueryLimitError(f"Limit for rows or bytes to read exceeded, max rows: {_quantity(max_rows)}, "
                              f"current rows: {_quantity(rows)}", TOO_MANY_ROWS, "TOO_MANY_ROWS")
    if max_bytes:
        nbytes = rows * _row_bytes(plan.snapshot.meta, plan.columns)
        if nbytes > max_bytes:
            raise QueryLimitError(f"Limit for rows or bytes to read exceeded, max bytes: {_size(max_bytes)}, "
                                  f"current bytes: {_size(nbytes)}", TOO_MANY_BYTES, "TOO_MANY_BYTES")


def _select_derived(db: Any, q: A.Select, qs: QuerySettings):
    """``SELECT ... FROM (SELECT ...)``: the inner result is the table, with its
    ClickHouse types."""
    from skipidx.core.types import parse_type
    from skipidx.store.metadata import ColumnMeta, TableMeta

    sub = q.subquery
    if not isinstance(sub.query, (A.Select, A.Union)):
        raise _err("FROM (EXPLAIN ...) is not supported: skipidx's EXPLAIN text is its own, not "
                   "ClickHouse's, so filtering its lines would not give ClickHouse's answer", sub)
    inner, _stats, types = _select_table(db, sub.query)
    if types is None:
        from skipidx.engine.result import Result as _R

        types = _R(inner).types
    if len(set(inner.column_names)) != inner.num_columns:
        raise _err("a derived table needs distinct column names (give the repeated one an alias)", sub)
    cols = [ColumnMeta(name, parse_type(t)) for name, t in zip(inner.column_names, types)]
    data = pa.table(inner.columns, schema=pa.schema([pa.field(c.name, f.type, nullable=c.type.nullable)
                                                     for c, f in zip(cols, inner.schema)]))
    meta = TableMeta(name=sub.alias or "_subquery", columns=cols)
    return _select_from_data(dataclasses.replace(q, subquery=None), qs, data, meta, sub.to_sql())


def _select_table_function(q: A.Select, qs: QuerySettings):
    from skipidx.engine.table_functions import run_table_function

    data, meta = run_table_function(q.table_function)
    return _select_from_data(q, qs, data, meta, q.table_function.to_sql())


def _select_from_data(q: A.Select, qs: QuerySettings, data: pa.Table, meta: Any, source: str):
    from skipidx.expr.evaluate import where_mask
    from skipidx.execution.select import run_select
    from skipidx.expr.binder import bind_select
    from skipidx.planner.stats import QueryStats

    bs = bind_select(meta, q)
    if q.table_function is not None and q.table_function.name.lower() == "numbers":
        # ClickHouse limits the rows numbers() produces (file() is not limited)
        max_rows = qs.get("max_rows_to_read")
        if max_rows and data.num_rows > max_rows and not _trivial_count(bs):
            raise QueryLimitError(f"Limit for rows (controlled by 'max_rows_to_read' setting) exceeded, max rows: "
                                  f"{_quantity(max_rows)}, current rows: {_quantity(data.num_rows)}",
                                  TOO_MANY_ROWS, "TOO_MANY_ROWS")
    stats = QueryStats(table=source, rows_total=data.num_rows, rows_read=data.num_rows)
    mask = where_mask(bs.where, data)
    filtered = data if mask is None else data.filter(mask)
    stats.rows_matched = filtered.num_rows
    from skipidx.engine.streaming import bound_types

    out = run_select(bs, iter([filtered]))
    return out, stats, bound_types(bs, out)


# ---------------------------------------------------------------------------- INSERT

def _target_columns(meta: Any, columns: tuple[str, ...] | None, node: Any) -> list[str]:
    from skipidx.core.hints import did_you_mean

    names = meta.column_names
    if columns is None:
        return list(names)
    for c in columns:
        if c not in names:
            raise _err(f"unknown column '{c}' in table '{meta.name}'{did_you_mean(c, names)}", node)
    return list(columns)


def fill_defaults(meta: Any, data: dict[str, pa.Array], n: int) -> pa.Table:
    """A table with every column of `meta`: those in `data`, the rest from their
    DEFAULT expression (over the given columns) or their type's default."""
    from skipidx.core.types import cast_to
    from skipidx.expr.evaluate import evaluate
    from skipidx.expr.binder import Binder
    from skipidx.planner.ddl import _column_array, _default
    from skipidx.sql.parser import parse_expression

    arrays = []
    given = pa.table(data) if data else None
    for cm in meta.columns:
        if cm.name in data:
            arrays.append(data[cm.name])
            continue
        if cm.default is not None:
            from skipidx.store.metadata import TableMeta

            sub = TableMeta(name=meta.name, columns=[c for c in meta.columns if c.name in data])
            e = Binder(sub).expr(parse_expression(cm.default))
            base = given if given is not None else pa.table({"_": pa.nulls(n)})
            v = evaluate(e, base)
            if isinstance(v, pa.Scalar):
                v = pa.array([v.as_py()] * n, v.type)
            arrays.append(cast_to(cm.type, v, cm.name))
            continue
        arrays.append(_column_array(cm.type, [_default(cm.type)] * n, cm.name, [None] * n))
    return pa.Table.from_arrays(arrays, names=meta.column_names)


def _insert_values_with_defaults(db: Any, s: A.InsertValues) -> Result | None:
    """INSERT ... VALUES with a column list that leaves out a column with a DEFAULT
    expression; None (the database's own path) otherwise."""
    t = db._table(s.table)
    meta = t.meta
    if s.columns is None or not any(c.default is not None and c.name not in s.columns for c in meta.columns):
        return None
    from skipidx.planner.ddl import values_table

    full = values_table(meta, s)
    data = {c: full.column(c) for c in s.columns}
    n = t.insert(fill_defaults(meta, data, full.num_rows))
    return Result(message=f"inserted {n} rows")


def _insert_select(db: Any, s: A.InsertSelect) -> Result:
    resolve_settings(session_settings(db), s.settings)
    t = db._table(s.table)
    meta = t.meta
    cols = _target_columns(meta, s.columns, s)
    rows, _stats = select_table(db, s.select)
    if rows.num_columns != len(cols):
        raise _err(f"INSERT ... SELECT: the SELECT gives {rows.num_columns} columns, the INSERT expects "
                   f"{len(cols)} ({', '.join(cols)})", s.select)
    # ClickHouse maps the SELECT's columns to the target columns by position
    data = {c: rows.column(i) for i, c in enumerate(cols)}
    full = fill_defaults(meta, data, rows.num_rows)
    n = t.insert(full) if full.num_rows else t.insert(full.slice(0, 0))
    return Result(message=f"inserted {n} rows")


def _ch_type_of_output(e: Any) -> str:
    from skipidx.core.types import ch_type_of

    ch = getattr(e, "ch_type", "") or ch_type_of(e.type)
    if getattr(e, "nullable", False) and not ch.startswith("Nullable") and not ch.startswith("LowCardinality"):
        ch = f"Nullable({ch})"
    return ch


def _create_as_select(db: Any, s: A.CreateTable) -> Result:
    from skipidx.expr.binder import bind_select
    from skipidx.planner.ddl import table_meta_from_ast

    if db.catalog.exists(s.table.name):
        if s.if_not_exists:
            return Result(message="table exists")
        raise _err(f"table {s.table.name!r} already exists", s.table)
    q = _with_prewhere(s.as_select)
    # the column types: the query's output types (bound, not run), unless columns are given
    from skipidx.engine.window import has_windows

    if s.has_elements and s.columns:
        ddl = dataclasses.replace(s, as_select=None)
    elif has_windows(q):
        # window columns are computed by the engine, not bound: the types of the rows it gives
        table, _stats, types = _select_table(db, q)
        coldefs = tuple(A.ColumnDef(n, _type_expr(t)) for n, t in zip(table.column_names, types))
        ddl = dataclasses.replace(s, columns=coldefs + tuple(s.columns), as_select=None, has_elements=True)
    else:
        if q.table_function is not None:
            from skipidx.engine.table_functions import run_table_function

            _data, src_meta = run_table_function(q.table_function)
        elif q.table is not None:
            ref = db._local_ref(q.table)
            # a system table's columns (engine/system_tables.py), else the table's
            src_meta = db._system_meta(ref.name) if ref.database is not None else db._table(ref).meta
        else:
            src_meta = None
        bs = bind_select(src_meta, q)
        coldefs = tuple(A.ColumnDef(i.name, _type_expr(_ch_type_of_output(i.expr))) for i in bs.items)
        ddl = dataclasses.replace(s, columns=coldefs + tuple(s.columns), as_select=None, has_elements=True)
    meta = table_meta_from_ast(ddl)
    db.catalog.create_table(meta)
    try:
        res = _insert_select(db, A.InsertSelect(s.table, None, s.as_select, pos=s.pos))
    except BaseException:
        db.catalog.drop_table(s.table.name, if_exists=True)    # all or nothing
        raise
    return Result(message=f"created table, {res.message}")


def _type_expr(ch: str) -> A.TypeExpr:
    from skipidx.sql.parser import parse

    [stmt] = parse(f"CREATE TABLE t (c {ch})")
    return stmt.columns[0].type


# ---------------------------------------------------------------------------- TRUNCATE / ALTER

def _truncate(db: Any, s: A.Truncate) -> Result:
    from skipidx.store.schema_change import truncate

    if s.if_exists and not db.catalog.exists(s.table.name):
        return Result(message="no such table")
    t = db._table(s.table)
    n = truncate(t)
    db.index_cache.clear()
    return Result(message=f"truncated {n} rows")


def _alter(db: Any, s: A.Alter) -> Result:
    db._table(s.table)       # an unknown table fails before any command runs
    # validate what can be checked up front, so a bad later command changes nothing
    for c in s.commands:
        if isinstance(c, A.AlterModifySetting):
            from skipidx.planner.ddl import check_table_setting

            for kv in c.settings:
                check_table_setting(kv)
    messages = []
    for c in s.commands:
        r = db.execute(c)
        if r.message:
            messages.append(r.message)
    return Result(message="; ".join(messages))


def _alter_command(db: Any, s: A.Statement) -> Result:
    from skipidx.store import schema_change as sc

    t = db._table(s.table)
    try:
        if isinstance(s, A.AlterAddColumn):
            return _add_column(t, s)
        if isinstance(s, A.AlterDropColumn):
            done = sc.drop_column(t, s.name, if_exists=s.if_exists)
            return Result(message=f"dropped column {s.name}" if done else "no such column")
        from skipidx.planner.ddl import _literal_value, check_table_setting

        values: dict[str, Any] = {}
        gran = None
        for kv in s.settings:
            check_table_setting(kv)
            if kv.name == "index_granularity":
                gran = _literal_value(kv.value)
            else:
                values[kv.name] = _literal_value(kv.value)
        sc.modify_settings(t, values, gran)
        return Result(message="modified settings")
    except BindError:
        raise
    except SkipidxError as e:
        if e.line is None and s.pos.line:
            raise BindError(e.message, line=s.pos.line, column=s.pos.column) from None
        raise


def _add_column(t: Any, s: A.AlterAddColumn) -> Result:
    from skipidx.core.types import cast_to, parse_type
    from skipidx.expr.evaluate import evaluate
    from skipidx.expr.binder import Binder
    from skipidx.planner.ddl import _at, _column_array, _default, default_text
    from skipidx.store import schema_change as sc
    from skipidx.store.metadata import ColumnMeta

    meta = t.meta
    c = s.column
    try:
        ctype = parse_type(c.type.to_sql())
    except SkipidxError as e:
        raise _at(e, c.type) from None
    if c.codec:
        raise _err("ADD COLUMN ... CODEC: declare codecs in CREATE TABLE", c.codec[0])
    default = default_text(c, list(meta.columns))
    cm = ColumnMeta(c.name, ctype, None, default)
    bound = Binder(meta).expr(c.default) if c.default is not None else None

    def fill(part_data: pa.Table) -> pa.Array:
        n = part_data.num_rows
        if bound is None:
            return _column_array(ctype, [_default(ctype)] * n, c.name, [None] * n).cast(ctype.arrow_type) \
                if n else pa.array([], ctype.arrow_type)
        v = evaluate(bound, part_data)
        if isinstance(v, pa.Scalar):
            v = pa.array([v.as_py()] * n, v.type)
        if isinstance(v, pa.ChunkedArray):
            v = v.combine_chunks()
        return cast_to(ctype, v, c.name)

    done = sc.add_column(t, cm, after=s.after, first=s.first, if_not_exists=s.if_not_exists, fill=fill)
    return Result(message=f"added column {c.name}" if done else "column exists")


def _alter_index_group(db: Any, s: A.Statement) -> Result | None:
    """ADD INDEX in the tuple form, and DROP/MATERIALIZE INDEX of such an index (each
    of its members); None for the plain forms (the database runs those)."""
    from skipidx.planner.ddl import index_defs_from_ast

    t = db._table(s.table)
    if isinstance(s, A.AlterAddIndex):
        defs = index_defs_from_ast(s.index, t.meta)
        if len(defs) == 1:
            return None
        if s.if_not_exists and any(im.name == s.index.name for im in t.meta.indexes):
            return Result(message="index exists")
        for d in defs:
            t.add_index(d)
        return Result(message=f"added index {s.index.name}")
    members = [im.name for im in t.meta.indexes
               if getattr(im.definition, "group", None) is not None and im.definition.group[0] == s.name]
    if len(members) < 2:
        return None
    for m in members:
        if isinstance(s, A.AlterDropIndex):
            t.drop_index(m)
        else:
            t.materialize_index(m)
    db.index_cache.clear()
    return Result(message=f"{'dropped' if isinstance(s, A.AlterDropIndex) else 'materialized'} index {s.name}")


# ---------------------------------------------------------------------------- SHOW CREATE

def show_create_text(meta: Any, engine: str | None = None) -> str:
    """CREATE TABLE as ClickHouse's SHOW CREATE TABLE prints it (database `default`);
    `engine`: the ENGINE clause of a table that is no MergeTree (an external table's)."""
    from skipidx.sql.parser import parse_expression

    lines = []
    for c in meta.columns:
        line = f"    `{c.name}` {c.type.name}"
        if c.default is not None:
            line += f" DEFAULT {parse_expression(c.default).to_sql()}"
        if c.codec:
            line += f" CODEC({c.codec})"
        lines.append(line)
    for im in meta.indexes:
        g = getattr(im.definition, "group", None)
        if g is not None and g[1] > 0:
            continue                         # a tuple-form index prints once, as declared
        name, expr = (g[0], g[2]) if g is not None else (im.name, _index_expr_sql(im))
        lines.append(f"    INDEX {name} {expr} TYPE {_index_type_sql(im)} GRANULARITY {im.definition.granularity}")
    engine = engine or getattr(meta, "engine", "MergeTree")
    text = f"CREATE TABLE default.{A.quote_identifier(meta.name)}\n(\n" + ",\n".join(lines) + f"\n)\nENGINE = {engine}"
    if engine != "MergeTree":
        return text
    if getattr(meta, "partition_by", None):
        text += "\nPARTITION BY " + meta.partition_by
    if meta.primary_key is not None:
        text += "\nPRIMARY KEY " + _key_sql(meta.primary_key)
    text += "\nORDER BY " + _key_sql(meta.order_by)
    settings = [f"index_granularity = {meta.index_granularity}"]
    for k, v in meta.settings.items():
        settings.append(f"{k} = {_setting_sql(v)}")
    text += "\nSETTINGS " + ", ".join(settings)
    return text


def _key_sql(cols: list[str]) -> str:
    if not cols:
        return "tuple()"
    if len(cols) == 1:
        return cols[0]
    return "(" + ", ".join(cols) + ")"


def _setting_sql(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return str(v)
    return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _index_expr_sql(im: Any) -> str:
    d = im.definition
    expr_sql = getattr(d, "expr_sql", None)
    if expr_sql:
        return expr_sql
    return f"{d.expr_func}({d.column})" if d.expr_func else d.column


def _index_type_sql(im: Any) -> str:
    d = im.definition
    parts = [_setting_sql(a) for a in d.args] + [f"{k} = {_setting_sql(v)}" for k, v in d.kwargs]
    return d.type_name + (f"({', '.join(parts)})" if parts else "")
