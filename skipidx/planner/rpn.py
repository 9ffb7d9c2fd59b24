"""The WHERE clause as one RPN over index atoms, and its BoolMask evaluation.

As ClickHouse's ``KeyCondition``/``MergeTreeIndexConditionBloomFilter``, but
one RPN for the whole clause: every leaf that compares an indexable subject
(a column, or ``lower(column)``) with constants becomes an :class:`Atom`;
every other leaf is UNKNOWN. Negated leaves (``!=``, ``NOT IN``, ``NOT
LIKE``, ``IS NOT NULL``) become ``NOT`` of the positive atom, so an index
only ever answers positive questions and "negation only" is a property of
where an atom sits in the tree (its polarity), not of the index.

Evaluation keeps, per data granule, the two bits of ClickHouse's BoolMask
(can_be_true, can_be_false):

==========  =====================================
UNKNOWN     (1, 1)
TRUE        (1, 0)
FALSE       (0, 1)
NULL        (0, 0)   -- neither true nor false, and NOT NULL is NULL
NOT         (f, t)
AND         (t1 & t2, f1 | f2)
OR          (t1 | t2, f1 & f2)
==========  =====================================

A granule may be skipped iff can_be_true is false. This is sound with SQL
NULLs: a row where a leaf is NULL contributes to neither bit, and AND/OR/NOT
of three-valued rows never produce TRUE from bits that were not set.
"""
from __future__ import annotations

from dataclasses import field
from skipidx.core.dataclass_codes import dataclass
from enum import IntEnum
from typing import Callable, Mapping

import numpy as np

from skipidx.indexes.base import Atom, BoolMask
from skipidx.expr.catalogue import CATALOGUE
from skipidx.expr.bound import BCall, BColumn, BConst, BExpr, BFolded

#: Atom functions (the subject first, only constants after it): the catalogue's
#: functions with an index hint, and the negated ones with the atom they are NOT of.
ATOM_FUNCS = CATALOGUE.atoms()
NEGATED = CATALOGUE.negations()
INDEX_EXPRESSIONS = CATALOGUE.index_expressions()


class Op(IntEnum):
    ATOM = 0
    TRUE = 1
    FALSE = 2
    NULL = 3
    UNKNOWN = 4
    NOT = 5
    AND = 6
    OR = 7


@dataclass(frozen=True)
class RPNItem:
    op: Op
    atom: int = -1                 # index into RPN.atoms for Op.ATOM
    positive: bool = True          # polarity: under an even number of NOTs


@dataclass
class RPN:
    """Items in reverse Polish order plus the distinct atoms they reference."""

    items: list[RPNItem] = field(default_factory=list)
    atoms: list[Atom] = field(default_factory=list)

    def __str__(self) -> str:
        out = []
        for it in self.items:
            out.append(f"atom{it.atom}" if it.op == Op.ATOM else it.op.name)
        return " ".join(out)


def subject_of(e: BExpr) -> tuple[str, str | None] | None:
    """(column, expr_func) when `e` is an indexable subject: a column, or an index expression
    of the catalogue over a column (``lower(column)``)."""
    if isinstance(e, BColumn):
        return e.name, None
    if isinstance(e, BCall) and e.func in INDEX_EXPRESSIONS and len(e.args) == 1 and isinstance(e.args[0], BColumn):
        return e.args[0].name, e.func
    return None


def _atom_of(e: BCall) -> Atom | None:
    if e.func not in ATOM_FUNCS or not e.args:
        return None
    subj = subject_of(e.args[0])
    if subj is None or not all(isinstance(a, BConst) for a in e.args[1:]):
        return None
    args = tuple(a.value for a in e.args[1:])
    return Atom(e.func, subj[0], subj[1], args, e.text)


#: Array predicates that indexes over the elements answer: has(a, x) as x = element,
#: hasAny(a, [..]) as element IN (..), hasAll(a, [x, y]) as x = element AND y = element.
ARRAY_ATOMS = frozenset({"has", "hasAny", "hasAll"})


def _array_atoms(e: BCall, items: list, atom_id: Callable[[Atom], int]) -> bool:
    """Element atoms for an array predicate; False when it has no indexable form.

    Only where the predicate is not under NOT: an element index can say a granule
    holds no matching element (the predicate is false for every row), but not that
    every row matches (an empty array holds no element at all), so the atoms' can_be_false
    answers must never reach the result."""
    if len(e.args) != 2 or not isinstance(e.args[1], BConst) or not isinstance(e.args[0], BColumn):
        return False
    col = e.args[0].name
    v = e.args[1].value
    if e.func == "has":
        if v is None:
            return False
        items.append(RPNItem(Op.ATOM, atom_id(Atom("equals", col, None, (v,), e.text)), True))
        return True
    values = tuple(x for x in (v if isinstance(v, (tuple, list)) else (v,)) if x is not None)
    if not values:
        return False
    if e.func == "hasAny":
        items.append(RPNItem(Op.ATOM, atom_id(Atom("in", col, None, (values,), e.text)), True))
        return True
    for i, x in enumerate(values):
        items.append(RPNItem(Op.ATOM, atom_id(Atom("equals", col, None, (x,), e.text)), True))
        if i:
            items.append(RPNItem(Op.AND))
    return True


#: ``position(x, s) > 0`` (and ``>= 1``) is ``x LIKE '%s%'``; with positionCaseInsensitive,
#: ``ILIKE``, which token and n-gram indexes answer (ILIKE on indexes over lower(x)).
POSITION_TESTS = frozenset({"greater", "greaterOrEquals"})
_POSITION_LIKE = {"position": "like", "positionCaseInsensitive": "ilike"}


def _position_atom(e: BCall, items: list, atom_id: Callable[[Atom], int]) -> bool:
    """A LIKE atom for a test that a substring occurs; False when `e` is not one. Only where
    not under NOT: the atom stands for "the substring occurs", nothing about its absence."""
    if len(e.args) != 2 or not isinstance(e.args[1], BConst) or not isinstance(e.args[0], BCall):
        return False
    call, bound = e.args[0], e.args[1].value
    if call.func not in _POSITION_LIKE or len(call.args) != 2 or not isinstance(call.args[1], BConst):
        return False
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        return False
    if not ((e.func == "greater" and bound == 0) or (e.func == "greaterOrEquals" and bound == 1)):
        return False
    needle = call.args[1].value
    subj = subject_of(call.args[0])
    if subj is None or not isinstance(needle, bytes) or not needle:
        return False
    escaped = needle.replace(b"\\", b"\\\\").replace(b"%", b"\\%").replace(b"_", b"\\_")
    atom = Atom(_POSITION_LIKE[call.func], subj[0], subj[1], (b"%" + escaped + b"%",), e.text)
    items.append(RPNItem(Op.ATOM, atom_id(atom), True))
    return True


def build_rpn(where: BExpr | None) -> RPN:
    """The RPN of a bound WHERE expression (``None``: no WHERE = TRUE)."""
    rpn = RPN()
    ids: dict[Atom, int] = {}

    def atom_id(a: Atom) -> int:
        key = Atom(a.func, a.column, a.expr_func, a.args)   # text does not identify an atom
        if key not in ids:
            ids[key] = len(rpn.atoms)
            rpn.atoms.append(a)
        return ids[key]

    def walk(e: BExpr, positive: bool) -> None:
        items = rpn.items
        if isinstance(e, BConst):
            if e.value is None:
                items.append(RPNItem(Op.NULL))
            else:
                items.append(RPNItem(Op.TRUE if e.value else Op.FALSE))
            return
        if isinstance(e, BFolded):
            items.append(RPNItem(Op.TRUE if e.value else Op.FALSE))
            return
        if isinstance(e, BCall):
            if e.func in ("and", "or") and e.args:
                op = Op.AND if e.func == "and" else Op.OR
                walk(e.args[0], positive)
                for a in e.args[1:]:
                    walk(a, positive)
                    items.append(RPNItem(op))
                return
            if e.func == "not" and len(e.args) == 1:
                walk(e.args[0], not positive)
                items.append(RPNItem(Op.NOT))
                return
            if e.func in NEGATED:
                pos = BCall(NEGATED[e.func], e.args, e.type, e.nullable, e.text)
                a = _atom_of(pos)
                if a is not None:
                    items.append(RPNItem(Op.ATOM, atom_id(a), not positive))
                    items.append(RPNItem(Op.NOT))
                    return
            elif e.func in ARRAY_ATOMS:
                if positive and _array_atoms(e, items, atom_id):
                    return
            elif e.func in POSITION_TESTS and positive and _position_atom(e, items, atom_id):
                return
            else:
                a = _atom_of(e)
                if a is not None:
                    items.append(RPNItem(Op.ATOM, atom_id(a), positive))
                    return
        items.append(RPNItem(Op.UNKNOWN))

    if where is None:
        rpn.items.append(RPNItem(Op.TRUE))
    else:
        walk(where, True)
    return rpn


def evaluate(rpn: RPN, n: int, atom_mask: Callable[[int], BoolMask | None] | Mapping[int, BoolMask]) -> BoolMask:
    """Evaluate the RPN over `n` granules at once.

    `atom_mask(i)` (or a mapping) gives atom i's BoolMask, or None for
    UNKNOWN. Returns the (can_be_true, can_be_false) of the whole clause.

    Two properties the pruner's sequential narrowing
    (:func:`skipidx.planner.prune._prune_parts`) rests on:

    * *Granule-wise*: every operation is element-wise, so a granule's result
      depends only on the atoms' answers for that granule.
    * *Monotone*: order the masks bitwise, (t, f) <= (t', f') iff t <= t' and
      f <= f'. Each operation preserves the order -- NOT (f, t) swaps both
      components of both sides; AND (t1 & t2, f1 | f2) and OR (t1 | t2,
      f1 & f2) are built from & and |, monotone in every argument;
      constants and UNKNOWN items do not depend on the atoms. So tighter
      atom answers (more indexes ANDed in) can only clear bits of the root:
      a granule whose can_be_true is False with some indexes' answers stays
      False when other indexes' answers are ANDed in, and answering UNKNOWN
      (1, 1) -- the top element -- for a granule gives the same result as
      leaving that index out there.
    """
    get = atom_mask.get if isinstance(atom_mask, Mapping) else atom_mask
    ones = np.ones(n, dtype=bool)
    zeros = np.zeros(n, dtype=bool)
    stack: list[tuple[np.ndarray, np.ndarray]] = []
    for it in rpn.items:
        op = it.op
        if op == Op.ATOM:
            m = get(it.atom)
            stack.append((ones, ones) if m is None else (m[0], m[1]))
        elif op == Op.UNKNOWN:
            stack.append((ones, ones))
        elif op == Op.TRUE:
            stack.append((ones, zeros))
        elif op == Op.FALSE:
            stack.append((zeros, ones))
        elif op == Op.NULL:
            stack.append((zeros, zeros))
        elif op == Op.NOT:
            t, f = stack.pop()
            stack.append((f, t))
        else:
            t2, f2 = stack.pop()
            t1, f1 = stack.pop()
            if op == Op.AND:
                stack.append((t1 & t2, f1 | f2))
            else:
                stack.append((t1 | t2, f1 & f2))
    if len(stack) != 1:
        raise AssertionError(f"malformed RPN: {rpn}")
    t, f = stack[0]
    return BoolMask(np.broadcast_to(t, (n,)).copy() if t.shape != (n,) else t,
                    np.broadcast_to(f, (n,)).copy() if f.shape != (n,) else f)


def useful_answers(rpn: RPN, can_refute: Mapping[int, bool],
                   can_confirm: Mapping[int, bool]) -> dict[int, set[str]]:
    """Which answers of which atoms can make a granule skippable.

    `can_refute[i]`: some index can answer atom i with can_be_true = False for
    some granule (a bloom filter proving a token absent, minmax proving
    ``x = 5`` out of range); `can_confirm[i]`: with can_be_false = False
    (minmax proving ``x < 10`` for a whole zone, which lets ``NOT`` prune).

    Returns, per atom, the kinds of answers that matter: ``"refute"`` and/or
    ``"confirm"``. An answer matters iff it can flow to the root's
    can_be_true: through AND always (one refuted operand refutes the AND),
    through OR only if every sibling can be refuted too, and under NOT with
    the roles of the two bits swapped. So ``hasToken(msg, 'x') OR level =
    'INFO'`` (no index on level) needs nothing, ``NOT hasToken(...)`` needs a
    confirmation no bloom filter can give (negation only), and ``hasToken(msg,
    'x') OR trace_id = 'y'`` needs refutations of both atoms.
    """
    # Rebuild the tree from the postfix items, with what each subtree can reach:
    # t0 = its can_be_true can be False, f0 = its can_be_false can be False.
    nodes: list[tuple] = []          # (op, children, atom, t0, f0)
    stack: list[int] = []
    for it in rpn.items:
        op = it.op
        if op == Op.ATOM:
            t0, f0 = bool(can_refute.get(it.atom, False)), bool(can_confirm.get(it.atom, False))
            nodes.append((op, (), it.atom, t0, f0))
        elif op in (Op.TRUE, Op.FALSE, Op.NULL, Op.UNKNOWN):
            t0 = op in (Op.FALSE, Op.NULL)
            f0 = op in (Op.TRUE, Op.NULL)
            nodes.append((op, (), -1, t0, f0))
        elif op == Op.NOT:
            c = stack.pop()
            nodes.append((op, (c,), -1, nodes[c][4], nodes[c][3]))
        else:
            b = stack.pop()
            a = stack.pop()
            ta, fa, tb, fb = nodes[a][3], nodes[a][4], nodes[b][3], nodes[b][4]
            if op == Op.AND:
                nodes.append((op, (a, b), -1, ta or tb, fa and fb))
            else:
                nodes.append((op, (a, b), -1, ta and tb, fa or fb))
        stack.append(len(nodes) - 1)
    out: dict[int, set[str]] = {}
    if len(stack) != 1:
        raise AssertionError(f"malformed RPN: {rpn}")
    # Walk down from the root, which needs "t" (can_be_true = False).
    todo = [(stack[0], "t")]
    while todo:
        k, need = todo.pop()
        op, ch, atom, _, _ = nodes[k]
        if op == Op.ATOM:
            out.setdefault(atom, set()).add("refute" if need == "t" else "confirm")
        elif op == Op.NOT:
            todo.append((ch[0], "f" if need == "t" else "t"))
        elif op in (Op.AND, Op.OR):
            a, b = ch
            # AND reaches t0 through either operand, OR through both; f0 the other way round
            either = (op == Op.AND) == (need == "t")
            flag = 3 if need == "t" else 4
            for x, sib in ((a, b), (b, a)):
                if either or nodes[sib][flag]:
                    todo.append((x, need))
    return out


def polarity(rpn: RPN) -> dict[int, set[bool]]:
    """For each atom, the polarities it occurs with (True = positive)."""
    out: dict[int, set[bool]] = {}
    for it in rpn.items:
        if it.op == Op.ATOM:
            out.setdefault(it.atom, set()).add(it.positive)
    return out
