"""SQL front end of skipidx: the Lark grammar (grammar.lark), the parser and the AST.

    from skipidx.sql import parse, parse_expression, ast
    [stmt] = parse("SELECT count() FROM logs WHERE hasToken(msg, 'timeout')")
    expr = parse_expression("msg LIKE '%timeout%' OR level = 'ERROR'")

Errors are :class:`skipidx.core.errors.ParseError` with 1-based `line`/`column` and,
for syntax errors, the readable tuple `expected`.
"""
from __future__ import annotations

from skipidx.sql import ast
from skipidx.sql.parser import MAX_EXPRESSION_DEPTH, parse, parse_expression

__all__ = ["ast", "parse", "parse_expression", "MAX_EXPRESSION_DEPTH"]

