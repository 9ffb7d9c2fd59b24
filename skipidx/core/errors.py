"""Errors.

`SkipidxError` is the one exception users see for bad input: bad SQL, bad
names, bad types, bad parameters, bad or damaged files. It carries a place
where there is one (line/column in SQL text, a file path).

Broken invariants (bugs in skipidx itself) are *not* SkipidxError: they are
plain `AssertionError`/`RuntimeError`, so they are never mistaken for a user's
mistake.
"""
from __future__ import annotations

from typing import Any


class SkipidxError(Exception):
    """A user-facing error, with an optional place (SQL line/column or file)."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        path: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.path = path
        super().__init__(self._render())

    def show_in(self, sql: str) -> None:
        """Add the SQL line this error points at, with a caret under the column, to
        the error's text (``str(e)``); `message` stays as it was."""
        if self.line is None or getattr(self, "sql_context", None) is not None or not isinstance(sql, str):
            return
        lines = sql.split("\n")
        if not 1 <= self.line <= len(lines):
            return
        text = lines[self.line - 1].rstrip("\r")
        col = max(1, min(self.column or 1, len(text) + 1))
        shown, start = text, 0
        if len(text) > 120:     # long line: the part around the column
            start = max(0, col - 60)
            shown = ("..." if start else "") + text[start:start + 120] + ("..." if start + 120 < len(text) else "")
            col = col - start + (3 if start else 0)
        caret = "".join("\t" if ch == "\t" else " " for ch in shown[: col - 1]) + "^"
        self.sql_context = f"{shown}\n{caret}"
        self.args = (self._render() + "\n" + self.sql_context,)

    def __str__(self) -> str:
        return self.args[0] if self.args else self._render()

    def _render(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.line is not None:
            where.append(f"line {self.line}" + (f", column {self.column}" if self.column is not None else ""))
        return f"{self.message} ({'; '.join(where)})" if where else self.message


class ParseError(SkipidxError):
    """SQL text that does not parse; `line`/`column` are 1-based, `expected` lists tokens."""

    def __init__(self, message: str, *, line: int, column: int, expected: tuple[str, ...] = ()) -> None:
        self.expected = tuple(expected)
        super().__init__(message, line=line, column=column)


class BindError(SkipidxError):
    """A name, type or function that does not resolve (unknown column, wrong argument type...)."""

    @classmethod
    def at(cls, msg: str, node: Any = None) -> "BindError":
        """The error placed at a syntax node's position (a node of ``skipidx.sql.ast`` or
        anything else carrying such a ``pos``), unplaced where there is none."""
        pos = getattr(node, "pos", None)
        if pos is not None and pos.line > 0:
            return cls(msg, line=pos.line, column=pos.column)
        return cls(msg)


class CorruptionError(SkipidxError):
    """A file of a part that is missing, truncated, or fails its checksum; `path` names it."""
