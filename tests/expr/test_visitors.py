"""Visitors over the bound tree: the post-order visitor, transform, and the shared analyses."""
from __future__ import annotations

import pyarrow as pa

from skipidx.expr.bound import BAgg, BCall, BColumn, BConst, BFolded
from skipidx.expr.visitors import BoundVisitor, columns_of, contains_agg, source_column, transform, visit

A = BColumn("a", pa.int64())
B = BColumn("b", pa.string(), nullable=True)
ONE = BConst(1, pa.uint8())
CALL = BCall("and", (BCall("equals", (A, ONE), pa.uint8()), BFolded(False, B)), pa.uint8())


class _Depth(BoundVisitor[int]):
    def visit_column(self, e):
        return 1

    def visit_const(self, e):
        return 1

    def visit_call(self, e, args):
        return 1 + max(args, default=0)

    def visit_folded(self, e, source):
        return 1 + (source or 0)

    def visit_agg(self, e, arg):
        return 1 + (arg or 0)


def test_visit_is_post_order_over_every_node_kind():
    assert visit(CALL, _Depth()) == 3
    assert visit(BAgg("sum", A, pa.int64()), _Depth()) == 2
    assert visit(BAgg("count", None, pa.uint64()), _Depth()) == 1


def test_columns_and_aggregates():
    assert columns_of(CALL) == {"a", "b"}
    assert columns_of(None) == set()
    out = {"z"}
    assert columns_of(A, out) is out and out == {"a", "z"}
    assert not contains_agg(CALL)
    assert contains_agg(BCall("plus", (BAgg("sum", A, pa.int64()), ONE), pa.int64()))
    assert columns_of(BAgg("sum", A, pa.int64())) == {"a"}


def test_source_column_is_the_first_column_read():
    assert source_column(CALL) is A
    assert source_column(ONE) is None


def test_transform_replaces_top_down_and_keeps_untouched_nodes():
    X = BColumn("x", pa.int64())
    out = transform(CALL, lambda e: X if e == A else None)
    assert columns_of(out) == {"x", "b"}
    assert transform(CALL, lambda e: None) is CALL
    agg = BAgg("sum", A, pa.int64(), distinct=True)
    assert transform(agg, lambda e: X if e == A else None) == BAgg("sum", X, pa.int64(), distinct=True)
