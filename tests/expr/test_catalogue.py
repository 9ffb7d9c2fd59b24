"""The function catalogue: every entry is complete, every name resolves, and the
stages read it (binder, evaluator, RPN builder)."""
from __future__ import annotations

import pyarrow as pa
import pytest

import skipidx
from skipidx.core.errors import SkipidxError
from skipidx.expr import kernels as K
from skipidx.expr.binder import KNOWN_FUNCTIONS, bind_where
from skipidx.expr.bound import BCall, BColumn, BConst
from skipidx.expr.catalogue import (
    CATALOGUE, RULES, STRING, Catalogue, Function, IndexHint, SAME_AS_FIRST,
)
from skipidx.expr.evaluate import evaluate
from skipidx.planner.rpn import ATOM_FUNCS, NEGATED, Op, build_rpn
from skipidx.sql.parser import parse_expression


def test_every_scalar_entry_has_a_kernel_and_an_output_name():
    for fn in CATALOGUE:
        assert fn.rule in RULES, fn.name
        assert fn.column_name(fn.name, ["x"] * len(fn.args)).startswith(fn.name + "("), fn.name
        if fn.rule != "aggregate" and not fn.constant:
            assert callable(fn.kernel), f"{fn.name} has no kernel"


def test_every_name_and_alias_resolves_in_any_case():
    for fn in CATALOGUE:
        for name in (fn.name, *fn.aliases):
            assert CATALOGUE.lookup(name) is fn
            assert CATALOGUE.lookup(name.upper()) is fn
    assert CATALOGUE.lookup("noSuchFunction") is None
    assert KNOWN_FUNCTIONS == sorted(f.name for f in CATALOGUE)


def test_duplicate_names_and_unknown_rules_are_refused():
    c = Catalogue()
    c.add(Function("f", "scalar", (STRING,), kernel=K.lower))
    with pytest.raises(ValueError, match="declared twice"):
        c.add(Function("g", "scalar", (STRING,), kernel=K.lower, aliases=("F",)))
    with pytest.raises(ValueError, match="unknown rule"):
        c.add(Function("h", "nonsense"))


def test_rpn_atoms_come_from_the_index_hints():
    assert ATOM_FUNCS == {f.name for f in CATALOGUE if f.index and not f.index.negation_of}
    assert NEGATED == {"notEquals": "equals", "notIn": "in", "notLike": "like", "isNotNull": "isNull"}
    # every negation names a positive atom
    assert set(NEGATED.values()) <= ATOM_FUNCS
    assert CATALOGUE.learning("range") >= {"less", "greater", "equals", "in"}
    assert "hasToken" not in CATALOGUE.learning("range")


def test_operators_map_to_their_functions():
    for op, name in {"=": "equals", "!=": "notEquals", "<": "less", "<=": "lessOrEquals", ">": "greater",
                     ">=": "greaterOrEquals", "+": "plus", "-": "minus", "*": "multiply", "/": "divide",
                     "%": "modulo"}.items():
        assert CATALOGUE.operator(op).name == name


class _Meta:
    """A one-column table's metadata as the binder reads it."""

    name = "t"

    def __init__(self, **cols):
        from skipidx.core.types import parse_type

        class C:
            def __init__(self, name, t):
                self.name, self.type = name, parse_type(t)

        self.columns = [C(n, t) for n, t in cols.items()]


def test_a_new_scalar_entry_binds_evaluates_and_folds():
    """Adding a function is one entry: the generic rule checks it, the evaluator runs it."""
    reverse = Function("reverseBytesForTest", "scalar", (STRING,), returns=SAME_AS_FIRST,
                       kernel=lambda a: pa.array([None if v is None else v[::-1] for v in a.to_pylist()],
                                                 a.type))
    CATALOGUE.add(reverse)
    try:
        meta = _Meta(s="String")
        e = bind_where(meta, parse_expression("reverseBytesForTest(s) = 'cba'"))
        assert isinstance(e, BCall) and e.func == "equals" and e.args[0].func == "reverseBytesForTest"
        out = evaluate(e, pa.table({"s": pa.array(["abc", "x", None])}))
        assert out.to_pylist() == [True, False, None]
        folded = bind_where(meta, parse_expression("reverseBytesForTest('abc') = 'cba'"))
        assert folded is None   # constant true: no filter
        with pytest.raises(SkipidxError, match="illegal type UInt8 of argument 1 of function reverseBytesForTest"):
            bind_where(meta, parse_expression("reverseBytesForTest(1) = 'x'"))
        with pytest.raises(SkipidxError, match="takes 1 argument, got 2"):
            bind_where(meta, parse_expression("reverseBytesForTest(s, s) = 'x'"))
    finally:
        CATALOGUE.functions.pop("reverseBytesForTest")
        CATALOGUE._by_key.pop("reversebytesfortest")


def test_index_hint_of_case_insensitive_token_search():
    h = CATALOGUE["hasTokenCaseInsensitive"].index
    assert h == IndexHint(frozenset({"tokens"}), None, "hasToken")


def test_rpn_reads_negations_from_the_catalogue():
    meta = _Meta(s="String")
    rpn = build_rpn(bind_where(meta, parse_expression("NOT (s NOT LIKE 'a%')")))
    assert [it.op for it in rpn.items] == [Op.ATOM, Op.NOT, Op.NOT]
    assert rpn.atoms[0].func == "like"


def test_unknown_function_suggests_the_close_names_only():
    with skipidx.connect() as db:
        with pytest.raises(SkipidxError, match="unknown function 'hasTokn'; maybe you meant 'hasToken'") as e:
            db.sql("SELECT hasTokn('a b', 'a')")
        assert "^" in str(e.value), f"no caret under the name: {e.value}"
        with pytest.raises(SkipidxError, match="unknown function 'nope'") as e:
            db.sql("SELECT nope(1)")
        first = str(e.value).splitlines()[0]
        assert "known:" not in first and len(first) < 120, f"the message lists the catalogue: {first[:200]}"


def test_evaluator_passes_constants_as_values_where_the_kernel_takes_them():
    t = pa.table({"x": pa.array([1, 2, 3], pa.uint8())})
    e = BCall("in", (BColumn("x", pa.uint8()), BConst((1, 3), pa.uint8())), pa.uint8())
    assert evaluate(e, t).to_pylist() == [True, False, True]


def test_index_expressions_are_catalogue_entries():
    """An index expression is a catalogue function marked index_expression: its kernel over the
    column, its fold over the constants, its canonical name (aliases too)."""
    import pyarrow as pa

    from skipidx.expr.catalogue import CATALOGUE
    from skipidx.expr.index_expressions import get_expression
    from skipidx.planner.ddl import index_def_from_ast
    from skipidx.sql.parser import parse

    assert CATALOGUE.index_expressions() == {"lower"}
    e = get_expression("lcase")
    assert e.name == "lower" and e.sql("msg") == "lower(msg)"
    arr = pa.array(["AbC", None, "ÀB"])
    assert e.apply(arr).equals(CATALOGUE["lower"].kernel(arr))
    assert e.apply_scalar(b"AbC") == CATALOGUE["lower"].fold(b"AbC") == b"abc"
    ic = parse("CREATE TABLE t (msg String, INDEX i lcase(msg) TYPE tokenbf_v1(256, 2, 0))")[0].indexes[0]
    assert index_def_from_ast(ic, ["msg"]).expr_func == "lower"
    assert CATALOGUE.case_insensitive() == {"hasTokenCaseInsensitive": "hasToken",
                                            "hasTokenCaseInsensitiveOrNull": "hasTokenOrNull", "ilike": "like"}


def test_spark_filters_name_catalogue_functions():
    from skipidx.apps.spark.filters import SPARK_FUNCTIONS
    from skipidx.expr.catalogue import CATALOGUE

    for func in SPARK_FUNCTIONS.values():
        assert CATALOGUE.get(func) is not None and CATALOGUE[func].index is not None, func
