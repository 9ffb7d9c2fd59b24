"""SQL front end of skipidx: the Lark grammar (grammar.lark), the parser and the AST.

    from skipidx.sql import parse, parse_expression, ast
    [stmt] = parse("SELECT count() FROM logs WHERE hasToken(msg, 'timeout')")
    expr = parse_expression("msg LIKE '%timeout%' OR level = 'ERROR'")

Errors are :class:`skipidx.core.errors.ParseError` with 1-based `line`/`column` and,
for syntax errors, the readable tuple `expected`.

The names load on first use (``import skipidx`` does not import the parser).
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ast", "parse", "parse_expression", "MAX_EXPRESSION_DEPTH"]

_FROM_PARSER = ("parse", "parse_expression", "MAX_EXPRESSION_DEPTH")


def __getattr__(name: str) -> Any:
    if name in _FROM_PARSER:
        return getattr(importlib.import_module("skipidx.sql.parser"), name)
    if name == "ast":
        return importlib.import_module("skipidx.sql.ast")
    raise AttributeError(f"module 'skipidx.sql' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
