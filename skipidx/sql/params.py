"""Query parameters: ClickHouse's ``{name:Type}`` placeholders bound to values.

``bind_params(stmt, {"name": value})`` returns the statement with every
:class:`~skipidx.sql.ast.Param` replaced by a node of the value -- a literal
(an array literal for ``Array(T)``, ``NULL`` for ``Nullable(T)``), or for
``{name:Identifier}`` a column or table name. Values never pass through SQL
text, so a string holding quotes, ``--`` or ``;`` stays one string value.

Each value is converted to its declared type as ClickHouse converts a
parameter: a Python value of that kind, or its text form (what
``--param_name=...`` gives on the command line: ``'42'`` for UInt8,
``'2024-01-02'`` for Date, ``'[1,2]'`` for Array(UInt8), ``'\\N'`` for NULL).
A missing parameter, an unknown type or a value that does not convert is a
:class:`~skipidx.core.errors.BindError` naming the parameter, with its place.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import re
from typing import Any, Mapping

from skipidx.core.errors import BindError
from skipidx.sql import ast as A

__all__ = ["bind_params", "statement_params", "IDENTIFIER"]

IDENTIFIER = "Identifier"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_RANGES = {f"UInt{b}": (0, 2**b - 1) for b in (8, 16, 32, 64)}
_INT_RANGES.update({f"Int{b}": (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for b in (8, 16, 32, 64)})
_FLOATS = ("Float32", "Float64")
_STRINGS = ("String",)
_WRAP = re.compile(r"^(Nullable|LowCardinality|Array)\s*\((.*)\)\s*$", re.S)


_err = BindError.at   # (the error at the node's position)


def statement_params(stmt: A.Node) -> list[A.Param]:
    """Every Param in `stmt`, in order of appearance (tables and settings included)."""
    return list(A.memo(stmt, "params", _find_params))


def _find_params(stmt: A.Node) -> tuple[A.Param, ...]:
    out: list[A.Param] = []
    _walk(stmt, lambda n: out.append(n) if isinstance(n, A.Param) else None)
    for t in _table_refs(stmt):
        if t.param is not None:
            out.append(A.Param(t.param, IDENTIFIER, pos=t.pos))
    return tuple(out)


def _walk(node: Any, fn) -> None:
    if isinstance(node, A.Node):
        fn(node)
        for name in A.node_fields(type(node)):
            _walk(getattr(node, name), fn)
    elif isinstance(node, tuple):
        for x in node:
            _walk(x, fn)


def _table_refs(node: Any) -> list[A.TableRef]:
    out: list[A.TableRef] = []
    _walk(node, lambda n: out.append(n) if isinstance(n, A.TableRef) else None)
    return out


def bind_params(stmt: A.Statement, params: Mapping[str, Any] | None) -> A.Statement:
    """`stmt` with its parameters replaced by the values of `params` (see module doc)."""
    found = statement_params(stmt)
    if not found:
        return stmt
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise BindError(f"params must be a mapping of names to values, got {type(params).__name__}")
    for p in found:
        if p.name not in params:
            given = ", ".join(sorted(map(str, params))) or "none"
            raise _err(f"query parameter '{p.name}' ({p.type_name}) has no value; params given: {given}", p)
    return _replace(stmt, params)


def _replace(node: Any, params: Mapping[str, Any]) -> Any:
    if isinstance(node, tuple):
        return tuple(_replace(x, params) for x in node)
    if not isinstance(node, A.Node):
        return node
    if isinstance(node, A.Param):
        return _value_node(node, params[node.name])
    if isinstance(node, A.TableRef) and node.param is not None:
        value = params[node.param]
        if isinstance(value, str) and value.count(".") == 1 and all(map(_IDENT.match, value.split("."))):
            # ClickHouse's compound identifier: {t:Identifier} = 'system.parts'
            db, name = value.split(".")
            return A.TableRef(name, pos=node.pos, database=db)
        return A.TableRef(_identifier(value, node.param, node), pos=node.pos)
    changes = {}
    for f in dataclasses.fields(node):
        if f.name == "pos":
            continue
        old = getattr(node, f.name)
        new = _replace(old, params)
        if f.name in ("limit", "offset") and isinstance(old, A.Param):
            new = _limit_value(old, params[old.name])
        if new is not old:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node


def _limit_value(p: A.Param, value: Any) -> int:
    lit = _value_node(p, value)
    if not isinstance(lit, A.Literal) or lit.kind != "int" or lit.value < 0:
        raise _err(f"query parameter '{p.name}' in LIMIT/OFFSET must be a non-negative integer, got {value!r}", p)
    return int(lit.value)


def _identifier(value: Any, name: str, node: A.Node) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise _err(f"query parameter '{name}' (Identifier) must be a name [A-Za-z_][A-Za-z0-9_]*, "
                   f"got {value!r}", node)
    return value


def _value_node(p: A.Param, value: Any) -> A.Expr:
    if p.type_name == IDENTIFIER:
        return A.Column(_identifier(value, p.name, p), pos=p.pos)
    try:
        return _convert(p.type_name.strip(), value, p)
    except _Bad as e:
        raise _err(f"query parameter '{p.name}': cannot convert {value!r} to {p.type_name}: {e}", p) from None


class _Bad(Exception):
    pass


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _convert(t: str, value: Any, p: A.Param) -> A.Expr:
    m = _WRAP.match(t)
    if m:
        wrapper, inner = m.group(1), m.group(2).strip()
        if wrapper == "Nullable":
            if value is None or _text(value) == "\\N":
                return A.Literal(None, "null", pos=p.pos)
            return _convert(inner, value, p)
        if wrapper == "LowCardinality":
            return _convert(inner, value, p)
        return _array(inner, value, p)
    if value is None:
        raise _Bad(f"NULL is not a value of {t} (declare it Nullable({t}))")
    text = _text(value)
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        if isinstance(value, bool):
            v = int(value)
        elif isinstance(value, int):
            v = value
        elif isinstance(value, float) and value.is_integer():
            v = int(value)
        elif text is not None and re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
            v = int(text)
        else:
            raise _Bad("not an integer")
        if not lo <= v <= hi:
            raise _Bad(f"out of range [{lo}, {hi}]")
        return A.Literal(v, "int", pos=p.pos)
    if t in _FLOATS or t == "Float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value)
        elif text is not None:
            try:
                v = float(text.strip())
            except ValueError:
                raise _Bad("not a number") from None
        else:
            raise _Bad("not a number")
        if t == "Float32" and math.isfinite(v) and abs(v) > 3.4028234663852886e38:
            raise _Bad("out of Float32's range")
        return A.Literal(v, "float", pos=p.pos)
    if t in ("Bool", "Boolean"):
        if isinstance(value, bool):
            return A.Literal(value, "bool", pos=p.pos)
        if isinstance(value, int) and value in (0, 1):
            return A.Literal(bool(value), "bool", pos=p.pos)
        if text is not None and text.strip().lower() in ("true", "false", "1", "0"):
            return A.Literal(text.strip().lower() in ("true", "1"), "bool", pos=p.pos)
        raise _Bad("not a Bool (true, false, 1 or 0)")
    if t in _STRINGS or t.startswith("FixedString"):
        if isinstance(value, bytes):
            return A.Literal(bytes(value), "string", pos=p.pos)
        if isinstance(value, str):
            return A.Literal(value.encode("utf-8", "surrogateescape"), "string", pos=p.pos)
        raise _Bad("not a string")
    if t == "Date":
        if isinstance(value, _dt.datetime):
            raise _Bad("a datetime is not a Date")
        if isinstance(value, _dt.date):
            return A.Literal(value.isoformat().encode(), "string", pos=p.pos)
        if text is not None:
            try:
                d = _dt.date.fromisoformat(text.strip())
            except ValueError:
                raise _Bad("not a date YYYY-MM-DD") from None
            return A.Literal(d.isoformat().encode(), "string", pos=p.pos)
        raise _Bad("not a date")
    if t == "DateTime" or t.startswith("DateTime("):
        if isinstance(value, _dt.datetime):
            return A.Literal(value.strftime("%Y-%m-%d %H:%M:%S").encode(), "string", pos=p.pos)
        if isinstance(value, int) and not isinstance(value, bool):
            return A.Literal(value, "int", pos=p.pos)
        if text is not None:
            s = text.strip()
            if s.isdigit():
                return A.Literal(int(s), "int", pos=p.pos)
            try:
                v = _dt.datetime.fromisoformat(s)
            except ValueError:
                raise _Bad("not a date and time 'YYYY-MM-DD hh:mm:ss'") from None
            return A.Literal(v.strftime("%Y-%m-%d %H:%M:%S").encode(), "string", pos=p.pos)
        raise _Bad("not a date and time")
    raise _Bad(f"unsupported parameter type {t!r}; supported: (U)Int8..64, Float32/64, Bool, String, Date, "
               "DateTime, Nullable(T), Array(T), Identifier")


def _array(inner: str, value: Any, p: A.Param) -> A.Expr:
    text = _text(value)
    if text is not None:
        items = _split_array_text(text)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise _Bad("not an array (a list, or text such as [1,2])")
    return A.ArrayLiteral(tuple(_convert(inner, v, p) for v in items), pos=p.pos)


def _split_array_text(text: str) -> list[Any]:
    """ClickHouse's text form of an array: ``[1,2]``, ``['a','b\\'c']``."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        raise _Bad("array text must be [v1, v2, ...]")
    body = s[1:-1].strip()
    out: list[Any] = []
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " \t":
            i += 1
        if i < n and body[i] == "'":
            j, buf = i + 1, []
            while j < n and body[j] != "'":
                if body[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(body[j])
                j += 1
            if j >= n:
                raise _Bad("unterminated string in array text")
            out.append("".join(buf))
            i = j + 1
        else:
            j = body.find(",", i)
            j = n if j < 0 else j
            item = body[i:j].strip()
            if not item:
                raise _Bad("empty array element")
            out.append(None if item in ("NULL", "\\N") else item)
            i = j
        while i < n and body[i] in " \t":
            i += 1
        if i < n:
            if body[i] != ",":
                raise _Bad("array elements must be separated by commas")
            i += 1
    return out
