"""Parser of the skipidx SQL dialect: a hand-written lexer feeding an LALR(1) parser.

Public API::

    parse(text) -> list[Statement]        # one or more statements separated by ';'
    parse_expression(text) -> Expr        # a single expression (the Spark `where` option)

Both raise :class:`skipidx.core.errors.ParseError` -- with a 1-based line and column
and, for syntax errors, the tuple `expected` -- for every input that is not
valid SQL; nothing else escapes for any ``str`` input.

Why a hand-written lexer: ClickHouse's lexical rules (nested ``/* */``
comments, string escapes that keep the backslash before unknown characters,
``\\N``, doubled quotes, numbers glued to letters) are easier to get exactly
right -- and to report at the exact character -- in plain code than as
terminal regexes; and the lexer asks the LALR parser which terminals its
current state accepts, so a word is a keyword only where that keyword may
stand (``type``, ``index``, ``format``, ``if`` stay usable as names).

The LALR tables are Lark's, generated from grammar.lark into _lalr_tables.py
(``python -m skipidx.sql._generate``); a small driver of our own (_lalr.py) runs
them, doing what Lark's LALR parser does, so that a process parsing SQL does not
import Lark. Lark parses (built from the grammar) when the tables are stale.

The AST is built during parsing by inline callbacks, one per rule (no tree, no
recursion), so long ``OR`` chains or long VALUES lists cost no stack; nesting
depth (NOT NOT ..., f(f(...)), a + a + ...; not mere parentheses) is capped at
:data:`MAX_EXPRESSION_DEPTH` so that the binder's recursive walks stay safe.

String literal escapes, as ClickHouse's ``parseComplexEscapeSequence`` (checked
against chDB in tests/test_parser.py):

- ``''`` inside a string is one quote;
- ``\\xHH`` is the byte 0xHH (exactly two hex digits, else an error -- ClickHouse
  rejects ``'\\x4'`` too, and turns non-hex digits into garbage bytes);
- ``\\N`` is nothing (ClickHouse's NULL marker in TSV, kept for parity);
- ``\\a \\b \\e \\f \\n \\r \\t \\v \\0`` are the control characters;
- ``\\\\ \\' \\" \\` \\/ \\=`` and a backslash before a character below 0x20
  give that character;
- a backslash before any other character is kept with it (``'100\\%'`` is the
  four characters ``100\\%``, so LIKE patterns read naturally).

Integer literals (decimal, ``0x`` hex, ``0b`` binary) must fit UInt64, or Int64
when written with a minus sign; ClickHouse silently turns larger ones into
Float64, skipidx rejects them.
"""
from __future__ import annotations

import bisect
import copy
import dataclasses
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator

import sys

from skipidx.core.errors import ParseError
from skipidx.sql._lalr import Token, UnexpectedToken
from skipidx.sql import ast as A
from skipidx.sql.ast import Pos

__all__ = ["parse", "parse_expression", "MAX_EXPRESSION_DEPTH", "EXPLAIN_OPTIONS"]

#: Deepest expression nesting accepted (ClickHouse's max_parser_depth is 1000 for
#: a parser that recurses; ours does not, but its consumers do).
MAX_EXPRESSION_DEPTH = 200

#: Options accepted by ``EXPLAIN name = value, ... SELECT``.
EXPLAIN_OPTIONS = ("indexes",)

UINT64_MAX = 2**64 - 1
INT64_MIN = -(2**63)

# ---------------------------------------------------------------- lexer

#: Words that are keywords where the parser accepts them; value = terminal name.
_KEYWORD_TERMINALS = {
    w: w
    for w in """
    ADD ALTER AND AS ASC BETWEEN BY CODEC CREATE DESC DESCRIBE DISTINCT DROP ENGINE EXISTS EXPLAIN
    FALSE FINAL FIRST FORMAT FROM GRANULARITY GROUP HAVING IF ILIKE IN INDEX INFILE INSERT INTO
    IS LAST LIKE LIMIT MATERIALIZE NOT NULL NULLS OFFSET OPTIMIZE OR ORDER PLAN REFRESH SELECT SETTINGS SHOW
    TABLE TABLES TRUE TYPE VALUES WHERE
    AFTER COLUMN DEFAULT KEY MODIFY OUTFILE PREWHERE PRIMARY SET SETTING TRUNCATE
    CAST CASE WHEN THEN ELSE END INTERVAL
    ATTACH PARTS MERGES PARTITION WITH UNION ALL OVER
    """.split()
}
# The logical operators are keywords wherever they stand: read as names, a
# misplaced one would only move the error to the word after it.
_ALWAYS_KEYWORDS = frozenset({"AND", "OR", "NOT"})
#: Clause keywords: a bare one read as a column name (``SELECT a, FROM t``) cannot
#: take an alias without AS, so the word after it is a syntax error, not an alias.
_CLAUSE_WORDS = frozenset({"SELECT", "DISTINCT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT",
                           "OFFSET", "BY", "AS"})
#: Words that never become an alias without AS (ClickHouse's ParserAlias restricted
#: keywords, read from chDB: ``SELECT a WORD FROM t`` fails for exactly these among
#: system.keywords). ``SELECT a format FROM t`` is a syntax error, not a column `format`.
IMPLICIT_ALIAS_RESTRICTED = frozenset("""
    ALL AND ANTI ANY ARRAY AS ASOF BETWEEN CROSS DIV ELSE EXCEPT FINAL FORMAT FROM FULL GLOBAL GROUP
    HAVING ILIKE IN INNER INTERSECT INTO JOIN LEFT LIKE LIMIT MOD NATURAL NOT OFFSET ON ONLY OR ORDER
    PARALLEL PASTE PREWHERE QUALIFY REGEXP RIGHT SAMPLE SEMI SETTINGS STREAM UNION USING WHERE WINDOW WITH
    """.split())
#: Words after IS that make it the IS operator; before any other word (or none) ClickHouse
#: backtracks and reads IS as an alias (``SELECT a is FROM t`` names the column `is`).
_IS_OPERATOR_NEXT = frozenset({"NULL", "NOT", "TRUE", "FALSE", "DISTINCT", "UNKNOWN"})
_FLOAT_WORDS = {"INF": float("inf"), "INFINITY": float("inf"), "NAN": float("nan")}
_NOT_COMPOUNDS = {"LIKE": "NOT_LIKE", "ILIKE": "NOT_ILIKE", "IN": "NOT_IN", "BETWEEN": "NOT_BETWEEN"}

_CASE_NOT_BEFORE = frozenset({"AS", "FROM", "WHERE", "AND", "OR", "IS", "IN", "LIKE", "ILIKE", "BETWEEN",
                              "ORDER", "GROUP", "LIMIT", "HAVING", "SETTINGS", "FORMAT", "PREWHERE"})
#: Expression keywords that are keywords only before what they need.
_NEEDS_NEXT = {
    "CAST": lambda nxt: nxt[0] == "LPAR",
    "CASE": lambda nxt: nxt[0] in ("int", "float", "string", "LPAR", "param", "ident", "LSQB")
    or (nxt[0] == "word" and nxt[3] not in _CASE_NOT_BEFORE),
    "INTERVAL": lambda nxt: nxt[0] in ("int", "float", "string", "LPAR", "param", "MINUS"),
}

_PUNCT = {
    "::": "DCOLON", "||": "CONCAT", "->": "ARROW",
    "==": "EQ", "!=": "NE", "<>": "NE", "<=": "LE", ">=": "GE",
    "(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", ",": "COMMA", ";": "SEMI", ".": "DOT",
    "=": "EQ", "<": "LT", ">": "GT", "+": "PLUS", "-": "MINUS", "*": "STAR", "/": "SLASH", "%": "PERCENT",
}

_WS = re.compile(r"[ \t\n\r\f\v]+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")
_WORD_CHAR = re.compile(r"[A-Za-z_0-9]")
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")
_COMMENT_DELIM = re.compile(r"/\*|\*/")

# ClickHouse's parseEscapeSequence: the character after the backslash -> its meaning.
_SIMPLE_ESCAPES = {"a": "\x07", "b": "\x08", "e": "\x1b", "f": "\x0c", "n": "\n", "r": "\r",
                   "t": "\t", "v": "\x0b", "0": "\x00"}
# Characters after which the backslash is dropped (besides those below 0x20);
# ClickHouse 26.9 keeps it before ':' and DEL (checked with chDB in the tests).
_BACKSLASH_DROPPED = frozenset("\\'\"`/=")


class _LexError(Exception):
    """Internal: a lexical error at a text offset (turned into ParseError with line/column)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class _Lines:
    """Offset -> (line, column), both 1-based."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect.bisect_right(self.starts, offset)
        return Pos(line, offset - self.starts[line - 1] + 1)


class SqlToken(Token):
    """A token that also carries its decoded value (`decoded`): bytes for
    STRING, str for IDENT, int for INT, float for FLOAT."""

    __slots__ = ("decoded",)


def _skip_space(text: str, i: int) -> int:
    """Offset of the first character at or after `i` that is not whitespace or comment."""
    n = len(text)
    while i < n:
        m = _WS.match(text, i)
        if m:
            i = m.end()
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if text.startswith("/*", i):
            # Block comments nest, as in ClickHouse: /* a /* b */ c */ is one comment.
            depth, j = 0, i
            while True:
                m = _COMMENT_DELIM.search(text, j)
                if m is None:
                    raise _LexError("unterminated comment", i)
                depth += 1 if m.group() == "/*" else -1
                j = m.end()
                if depth == 0:
                    break
            i = j
            continue
        break
    return i


def _unescape(text: str, start: int, quote: str, what: str) -> tuple[bytes, int]:
    """Decode the quoted literal opening at `start`; returns (bytes, end offset)."""
    out = bytearray()
    n = len(text)
    i = start + 1
    stop = re.compile("[" + re.escape(quote) + "\\\\]")
    while True:
        m = stop.search(text, i)
        if m is None:
            raise _LexError(f"unterminated {what}", start)
        j = m.start()
        if j > i:
            out += _utf8(text, i, j)
        c = text[j]
        if c == quote:
            if j + 1 < n and text[j + 1] == quote:  # doubled quote
                out += quote.encode()
                i = j + 2
                continue
            return bytes(out), j + 1
        # backslash
        if j + 1 >= n:
            raise _LexError(f"unterminated {what}", start)
        e = text[j + 1]
        if e == "x":
            hh = _HEX2.match(text, j + 2)
            if hh is None:
                raise _LexError("invalid escape sequence: \\x must be followed by two hex digits", j)
            out.append(int(hh.group(), 16))
            i = j + 4
        elif e == "N":
            i = j + 2
        else:
            if e in _SIMPLE_ESCAPES:
                out += _SIMPLE_ESCAPES[e].encode()  # all control characters: backslash dropped
            else:
                o = ord(e)
                if e not in _BACKSLASH_DROPPED and o >= 0x20:
                    out.append(0x5C)  # unknown escape: ClickHouse keeps the backslash
                out += _utf8(text, j + 1, j + 2)
            i = j + 2


def _utf8(text: str, i: int, j: int) -> bytes:
    try:
        return text[i:j].encode("utf-8")
    except UnicodeEncodeError as exc:
        # Only a lone surrogate (from a str built with surrogateescape etc.) gets here.
        raise _LexError("text holds a lone surrogate, which is not valid Unicode", i + exc.start) from None


def _scan(text: str, i: int) -> tuple[str, int, int, Any] | None:
    """The raw token at or after offset `i`: (kind, start, end, payload), or None at the end.

    kind: 'word' (payload: upper-cased word), 'ident' (quoted identifier; payload str),
    'string' (bytes), 'int' (int), 'float' (float) or a punctuation terminal name.
    """
    i = _skip_space(text, i)
    if i >= len(text):
        return None
    c = text[i]
    if c == "'":
        value, end = _unescape(text, i, "'", "string literal")
        return "string", i, end, value
    if c == "`" or c == '"':
        raw, end = _unescape(text, i, c, "quoted identifier")
        if not raw:
            raise _LexError("empty quoted identifier", i)
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _LexError("quoted identifier is not valid UTF-8", i) from None
        return "ident", i, end, name
    if c == "{":
        return _scan_param(text, i)
    m = _WORD.match(text, i)
    if m:
        return "word", i, m.end(), m.group().upper()
    m = _NUMBER.match(text, i)
    if m:
        end = m.end()
        if end < len(text) and _WORD_CHAR.match(text, end):
            w = _WORD.match(text, end)
            bad = text[i : w.end() if w else end + 1]
            raise _LexError(f"invalid number literal '{bad}'", i)
        s = m.group()
        low = s.lower()
        if low.startswith("0x"):
            digits, base, max_digits = s[2:], 16, 16
        elif low.startswith("0b"):
            digits, base, max_digits = s[2:], 2, 64
        elif "." in s or "e" in low:
            return "float", i, end, float(s)
        else:
            digits, base, max_digits = s, 10, 20
        # Count significant digits first: int() of a huge decimal string is slow
        # and, past 4300 digits, a ValueError.
        significant = digits.lstrip("0")
        v = int(significant, base) if 0 < len(significant) <= max_digits else (0 if not significant else -1)
        if v < 0 or v > UINT64_MAX:
            shown = s if len(s) <= 30 else s[:27] + "..."
            raise _LexError(f"integer literal out of range (more than {UINT64_MAX}): {shown}", i)
        return "int", i, end, v
    two = text[i : i + 2]
    if len(two) == 2 and two in _PUNCT:
        return _PUNCT[two], i, i + 2, None
    if c in _PUNCT:
        return _PUNCT[c], i, i + 1, None
    raise _LexError(f"unexpected character {c!r}", i)


_PARAM = re.compile(r"\{\s*([A-Za-z_][A-Za-z_0-9]*)\s*:\s*([^{}]*?)\s*\}")


def _scan_param(text: str, i: int) -> tuple[str, int, int, Any]:
    """A query parameter ``{name:Type}`` at offset `i` (ClickHouse's placeholder);
    payload: (name, type text)."""
    m = _PARAM.match(text, i)
    if m is None:
        raise _LexError("invalid query parameter: expected {name:Type}", i)
    if not m.group(2):
        raise _LexError(f"query parameter '{m.group(1)}' has no type: expected {{{m.group(1)}:Type}}", i)
    return "param", i, m.end(), (m.group(1), m.group(2))


class SqlLexer:
    """The lexer (Lark's lexer interface 2): scans with :func:`_scan` and classifies words by
    the terminals the parser's current state accepts."""

    __future_interface__ = 2

    def __init__(self, lexer_conf: Any) -> None:  # Lark passes its lexer configuration
        pass

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        src = lexer_state.text
        text: str = src.text if hasattr(src, "text") else src
        lines = _Lines(text)
        states = parser_state.parse_conf.states
        i = 0
        clause_word_as_name: str | None = None  # the previous token, if a bare clause keyword read as a name
        try:
            while True:
                raw = _scan(text, i)
                if raw is None:
                    return
                kind, start, end, payload = raw
                decoded = payload
                if kind == "word":
                    accepts = states[parser_state.position]
                    word = payload
                    kind, end, decoded = _classify_word(text, payload, start, end, accepts, parser_state,
                                                        clause_word_as_name)
                    clause_word_as_name = decoded if kind == "IDENT" and word in _CLAUSE_WORDS else None
                else:
                    clause_word_as_name = None
                    if kind == "string":
                        kind = "STRING"
                    elif kind == "ident":
                        kind = "IDENT"
                    elif kind == "int":
                        kind = "INT"
                    elif kind == "float":
                        kind = "FLOAT"
                    elif kind == "param":
                        kind = "IDENT_PARAM" if payload[1] == "Identifier" else "PARAM"
                p, q = lines.pos(start), lines.pos(end)
                tok = SqlToken(kind, text[start:end], start, p.line, p.column, q.line, q.column, end)
                tok.decoded = decoded
                yield tok
                i = end
        except _LexError as e:
            p = lines.pos(e.offset)
            raise ParseError(e.message, line=p.line, column=p.column) from None


#: Restricted alias words that open a clause right after a select item.
_CLAUSE_OPENERS = frozenset({"FORMAT", "SETTINGS", "INTO", "PREWHERE"})


def _opens_clause(text: str, word: str, end: int) -> bool:
    """Whether `word` at `end` is followed by what its clause needs (FORMAT name,
    SETTINGS name =, INTO OUTFILE, PREWHERE expression)."""
    try:
        nxt = _scan(text, end)
        if nxt is None:
            return False
        if word == "INTO":
            return nxt[0] == "word" and nxt[3] == "OUTFILE"
        if word == "PREWHERE":
            return not (nxt[0] == "word" and nxt[3] in _CLAUSE_WORDS) and nxt[0] not in ("COMMA", "SEMI", "RPAR")
        if nxt[0] not in ("word", "ident") or (nxt[0] == "word" and nxt[3] in _CLAUSE_WORDS):
            return False
        if word == "SETTINGS":
            after = _scan(text, nxt[2])
            return after is not None and after[0] == "EQ"
        return True
    except _LexError:
        return True


def _lark_errors() -> tuple[type, type] | None:
    """Lark's (UnexpectedToken, UnexpectedInput) when Lark is parsing (the tables are stale,
    or a test compares), else None: the driver raises only its own UnexpectedToken."""
    if "lark.exceptions" not in sys.modules:
        return None
    from lark.exceptions import UnexpectedInput as LarkInput, UnexpectedToken as LarkToken

    return LarkToken, LarkInput


def _really_accepts(parser_state: Any, terminal: str) -> bool:
    """Whether the parser, in its current state, can shift `terminal` (after reductions)."""
    quiet = copy.copy(parser_state.parse_conf)
    quiet.callbacks = {}  # simulate without building AST nodes
    trial = parser_state.copy(deepcopy_values=False)
    trial.parse_conf = quiet
    try:
        trial.feed_token(Token(terminal, ""))
    except Exception as e:
        lark = _lark_errors()
        if isinstance(e, UnexpectedToken) or (lark is not None and isinstance(e, lark[0])):
            return False
        raise
    return True


def _classify_word(text: str, word: str, start: int, end: int, accepts: dict,
                   parser_state: Any, after_clause_word: str | None = None) -> tuple[str, int, Any]:
    """(terminal, end, decoded) of a bare word in a parser state accepting `accepts`.

    `after_clause_word`: the token before, when it was a clause keyword read as
    a column name (``SELECT a, FROM t``); the word cannot be its alias without AS."""
    if word == "NOT":
        compounds = [c for c in _NOT_COMPOUNDS.values() if c in accepts]
        if compounds:
            nxt = _scan(text, end)
            if nxt is not None and nxt[0] == "word" and _NOT_COMPOUNDS.get(nxt[3]) in compounds:
                return _NOT_COMPOUNDS[nxt[3]], nxt[2], None
    if word in ("AND", "OR") and "STRING" in accepts:
        # where an operand may start, `and(...)`/`or(...)` is the function (ClickHouse
        # accepts `SELECT and(a, b)`); AND/OR as operators never stand there
        nxt = _scan(text, end)
        if nxt is not None and nxt[0] == "LPAR" and _really_accepts(parser_state, "STRING") \
                and _really_accepts(parser_state, "IDENT"):
            return "IDENT", end, text[start:end]
    if word == "IS" and "AS" in accepts:
        nxt = _scan(text, end)
        if (nxt is None or nxt[0] != "word" or nxt[3] not in _IS_OPERATOR_NEXT) \
                and _really_accepts(parser_state, "AS"):   # (LALR merges lookaheads: really here?)
            ctx = getattr(_local, "ctx", None)
            if ctx is not None:
                ctx.implicit_alias = (text[start:end], end)
            return "IDENT", end, text[start:end]
    if word in _NEEDS_NEXT and "IDENT" in accepts:
        # CAST(, CASE WHEN, INTERVAL n: otherwise the word is a name (a column `cast`)
        nxt = _scan(text, end)
        if nxt is None or not _NEEDS_NEXT[word](nxt):
            return "IDENT", end, text[start:end]
    term = _KEYWORD_TERMINALS.get(word)
    if term is not None and word in _CLAUSE_OPENERS and "AS" in accepts and term in accepts \
            and not _opens_clause(text, word, end):
        # `SELECT count() SETTINGS FROM t`: a word that could open a clause but is
        # not followed by one reads as a (refused) alias, as ClickHouse reports it
        return "RESTRICTED_ALIAS", end, text[start:end]
    if term is not None:
        if word in _ALWAYS_KEYWORDS or "IDENT" not in accepts:
            return term, end, None
        # Both fit this LALR state; its lookahead sets may be wider than the
        # grammar allows here, so try the keyword on a copy of the parser.
        if term in accepts and _really_accepts(parser_state, term):
            return term, end, None
    if word in _FLOAT_WORDS and "FLOAT" in accepts:
        return "FLOAT", end, _FLOAT_WORDS[word]
    if "AS" in accepts:
        # Only just after a select item do both AS and a name fit: this word is
        # an alias without AS. Remembered so that a syntax error right after it
        # can say so ("SELECT a FORM t" reads FORM as an alias, then fails at t).
        # A terminal no rule accepts makes the parser report the word at once,
        # in this state (so the expected set still lists the operators).
        if after_clause_word:
            # `SELECT a, FROM t`: not a column `FROM` aliased t, but a misplaced FROM
            return "NOT_AN_ALIAS", end, after_clause_word
        if word in IMPLICIT_ALIAS_RESTRICTED:
            # `SELECT a format FROM t`: ClickHouse never reads these words as an alias
            return "RESTRICTED_ALIAS", end, text[start:end]
        if not _really_accepts(parser_state, "IDENT"):
            # LALR merges lookaheads: after an expression in WHERE, a name is in
            # the table (from `SELECT expr alias`) but cannot really follow
            return "UNEXPECTED_WORD", end, text[start:end]
        ctx = getattr(_local, "ctx", None)
        if ctx is not None:
            ctx.implicit_alias = (text[start:end], end)
    return "IDENT", end, text[start:end]


# ---------------------------------------------------------------- AST builder


class _Ctx:
    """Per-parse state of the builder (the Lark parser object is shared)."""

    def __init__(self) -> None:
        self.depth: dict[int, int] = {}  # id(node) -> nesting depth
        self.parenthesized: set[int] = set()
        self.foldable: set[int] = set()  # number literals written as such (a minus may fold into them)
        self.keep: list[Any] = []  # keeps ids in the sets above alive and unique
        self.implicit_alias: tuple[str, int] | None = None  # last word read as an alias without AS, its end


_local = threading.local()


def _ctx() -> _Ctx:
    return _local.ctx


def _pos(x: Any) -> Pos:
    if isinstance(x, Token):
        return Pos(x.line, x.column)
    return x.pos


def _error(message: str, at: Any) -> ParseError:
    p = _pos(at)
    return ParseError(message, line=p.line, column=p.column)


class _Clause:
    """Internal: a tagged piece of a statement handed up to the statement's callback."""

    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind: str, value: Any, pos: Pos) -> None:
        self.kind, self.value, self.pos = kind, value, pos


def _clauses(children: list) -> dict[str, _Clause]:
    out = {}
    for c in children:
        if isinstance(c, _Clause):
            for x in (c.value if c.kind == "limits" else (c,)):   # LIMIT ... BY ... and LIMIT
                out[x.kind] = x
    return out


def _exprs(children: list) -> tuple[A.Expr, ...]:
    return tuple(c for c in children if isinstance(c, A.Expr))


_BINARY_OPS = {"EQ": "=", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=",
               "PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "PERCENT": "%"}


class _AstBuilder:
    """Inline callbacks, one per grammar rule/alias (a method named as it); children include tokens
    (keywords and punctuation are kept so every node knows where it starts)."""

    # -- helpers

    @staticmethod
    def _expr(node: A.Expr, *children: Any) -> A.Expr:
        ctx = _ctx()
        d = 1
        for c in children:
            if isinstance(c, A.Node):
                d = max(d, ctx.depth.get(id(c), 1) + 1)
        if d > MAX_EXPRESSION_DEPTH:
            raise _error(f"expression is nested too deeply (more than {MAX_EXPRESSION_DEPTH} levels)", node)
        ctx.depth[id(node)] = d
        ctx.keep.append(node)
        return node

    # -- entry points

    def start(self, c: list) -> list[A.Statement]:
        return [s for s in c if isinstance(s, A.Statement)]

    def expr_only(self, c: list) -> A.Expr:
        return c[0]

    # -- literals and names

    def literal(self, c: list) -> A.Literal:
        t = c[0]
        p = _pos(t)
        if t.type == "STRING":
            return A.Literal(t.decoded, "string", pos=p)
        if t.type in ("INT", "FLOAT"):
            node = A.Literal(t.decoded, t.type.lower(), pos=p)
            ctx = _ctx()
            ctx.foldable.add(id(node))
            ctx.keep.append(node)
            return node
        if t.type == "NULL":
            return A.Literal(None, "null", pos=p)
        return A.Literal(t.type == "TRUE", "bool", pos=p)

    def const(self, c: list) -> A.Literal:
        if len(c) == 1:
            return c[0]
        minus, t = c
        return _negative_literal(t.decoded, "int" if t.type == "INT" else "float", minus)

    def param(self, c: list) -> A.Param:
        name, type_name = c[0].decoded
        return self._expr(A.Param(name, type_name, pos=_pos(c[0])))

    def table_name(self, c: list) -> A.TableRef:
        t = c[0]
        if t.type == "IDENT_PARAM":
            return A.TableRef("", t.decoded[0], pos=_pos(t))
        if len(c) == 3:
            return A.TableRef(c[2].decoded, pos=_pos(t), database=t.decoded)
        return A.TableRef(t.decoded, pos=_pos(t))

    def column(self, c: list) -> A.Expr:
        if len(c) == 1 and c[0].type == "IDENT_PARAM":
            return self._expr(A.Param(c[0].decoded[0], "Identifier", pos=_pos(c[0])))
        if len(c) == 1:
            return self._expr(A.Column(c[0].decoded, pos=_pos(c[0])))
        return self._expr(A.Column(c[2].decoded, c[0].decoded, pos=_pos(c[0])))

    def func_call(self, c: list) -> A.FunctionCall:
        name = c[0]
        distinct = any(isinstance(t, Token) and t.type == "DISTINCT" for t in c)
        if any(isinstance(t, Token) and t.type == "STAR" for t in c):
            star = next(t for t in c if isinstance(t, Token) and t.type == "STAR")
            args: tuple[A.Expr, ...] = (A.Star(pos=_pos(star)),)
        else:
            args = _exprs(c[1:])
        return self._expr(A.FunctionCall(name.decoded, args, distinct, pos=_pos(name)), *args)

    def param_func_call(self, c: list) -> A.FunctionCall:
        # quantile(0.5)(x): the first call's arguments are the parameters
        head = c[0]
        args = _exprs(c[1:])
        node = A.FunctionCall(head.name, args, head.distinct, pos=head.pos, params=head.args)
        return self._expr(node, *head.args, *args)

    def window_partition(self, c: list) -> _Clause:
        return _Clause("partition", _exprs(c[2:]), _pos(c[0]))

    def window_order(self, c: list) -> _Clause:
        return _Clause("order", tuple(x for x in c[2:] if isinstance(x, A.OrderItem)), _pos(c[0]))

    def window_spec(self, c: list) -> dict:
        return {x.kind: x.value for x in c if isinstance(x, _Clause)}

    def window_call(self, c: list) -> A.WindowCall:
        head, spec = c[0], c[3]
        part, order = spec.get("partition", ()), spec.get("order", ())
        node = A.WindowCall(head, part, order, pos=head.pos)
        return self._expr(node, head, *part, *(o.expr for o in order))

    def window_named(self, c: list) -> A.Expr:
        raise _error(f"named windows (OVER {c[2].decoded}, WINDOW ... AS) are not supported: write the window "
                     f"in the OVER clause", c[2])

    def concat_op(self, c: list) -> A.Expr:
        left, op, right = c
        return self._expr(A.FunctionCall("concat", (left, right), pos=_pos(left)), left, right)

    def _cast(self, x: A.Expr, type_: A.TypeExpr | A.Expr, pos) -> A.Expr:
        target = (A.Literal(type_.to_sql().encode(), "string", pos=type_.pos)
                  if isinstance(type_, A.TypeExpr) else type_)
        return self._expr(A.FunctionCall("CAST", (x, target), pos=pos), x, target)

    def cast_op(self, c: list) -> A.Expr:
        x, _, type_ = c
        return self._cast(x, type_, _pos(c[1]))

    def cast_expr(self, c: list) -> A.Expr:
        items = [x for x in c if not isinstance(x, Token)]
        return self._cast(items[0], items[1], _pos(c[0]))

    def case_when(self, c: list) -> tuple:
        return ("when", _exprs(c))

    def case_expr(self, c: list) -> A.Expr:
        subject = None
        pairs: list[A.Expr] = []
        default: A.Expr = A.Literal(None, "null", pos=_pos(c[0]))
        seen_else = False
        for x in c[1:]:
            if isinstance(x, Token):
                seen_else = seen_else or x.type == "ELSE"
                continue
            if x is None:
                continue
            if isinstance(x, tuple) and x and x[0] == "when":
                pairs.extend(x[1])
            elif seen_else:
                default = x
            else:
                subject = x
        args = (*((subject,) if subject is not None else ()), *pairs, default)
        name = "caseWithExpression" if subject is not None else "multiIf"
        return self._expr(A.FunctionCall(name, args, pos=_pos(c[0])), *args)

    def interval_expr(self, c: list) -> A.Expr:
        _, value, unit = c
        u = unit.decoded.lower()
        units = {"second": "Second", "minute": "Minute", "hour": "Hour", "day": "Day", "week": "Week",
                 "month": "Month", "quarter": "Quarter", "year": "Year", "millisecond": "Millisecond",
                 "microsecond": "Microsecond", "nanosecond": "Nanosecond"}
        key = u[:-1] if u.endswith("s") and u[:-1] in units else u
        if key not in units:
            raise _error(f"unknown INTERVAL unit {unit.decoded!r}; expected one of "
                         f"{', '.join(k.upper() for k in units)}", unit)
        return self._expr(A.FunctionCall(f"toInterval{units[key]}", (value,), pos=_pos(c[0])), value)

    def tuple(self, c: list) -> A.TupleLiteral:
        items = _exprs(c)
        return self._expr(A.TupleLiteral(items, pos=_pos(c[0])), *items)

    def array(self, c: list) -> A.ArrayLiteral:
        items = _exprs(c)
        return self._expr(A.ArrayLiteral(items, pos=_pos(c[0])), *items)

    def paren(self, c: list) -> A.Expr:
        inner = c[1]
        ctx = _ctx()
        ctx.parenthesized.add(id(inner))
        ctx.keep.append(inner)
        return inner

    def subscript(self, c: list) -> A.Expr:
        # arr[i] is ClickHouse's arrayElement(arr, i) (its column name too)
        x, lsqb, i, _ = c
        return self._expr(A.FunctionCall("arrayElement", (x, i), pos=_pos(lsqb)), x, i)

    def _tuple_index(self, x: A.Expr, dot: Token, n: Token) -> A.Expr:
        k = A.Literal(n.decoded, "int", pos=_pos(n))
        return self._expr(A.FunctionCall("tupleElement", (x, k), pos=_pos(dot)), x)

    def tuple_index(self, c: list) -> A.Expr:
        x, dot, n = c
        return self._tuple_index(x, dot, n)

    def column_tuple_index(self, c: list) -> A.Expr:
        name, dot, n = c
        return self._tuple_index(self._expr(A.Column(name.decoded, pos=_pos(name))), dot, n)

    def lambda_expr(self, c: list) -> A.Expr:
        params, arrow, body = c
        if isinstance(params, A.Column) and params.table is None:
            names = (params.name,)
        elif isinstance(params, A.TupleLiteral) and params.items and all(
                isinstance(i, A.Column) and i.table is None for i in params.items):
            names = tuple(i.name for i in params.items)
        else:
            raise _error("a lambda's parameters are names: x -> expr or (x, y) -> expr", params)
        _check_unique([(n, params) for n in names], "lambda parameter")
        return self._expr(A.Lambda(names, body, pos=_pos(params)), body)

    def scalar_subquery(self, c: list) -> A.Expr:
        return self._expr(A.ScalarSubquery(c[1], pos=_pos(c[0])))

    # -- operators

    def neg(self, c: list) -> A.Expr:
        minus, x = c
        ctx = _ctx()
        if id(x) in ctx.foldable and id(x) not in ctx.parenthesized:
            # "-5" is the literal -5 (ClickHouse folds it too); "-(5)" and "- -5" keep their negations.
            return self._expr(_negative_literal(x.value, x.kind, minus))
        return self._expr(A.UnaryOp("neg", x, pos=_pos(minus)), x)

    def not_op(self, c: list) -> A.Expr:
        return self._expr(A.UnaryOp("not", c[1], pos=_pos(c[0])), c[1])

    def _bool_chain(self, c: list, op: str) -> A.Expr:
        args = _exprs(c)
        return self._expr(A.BoolOp(op, args, pos=_pos(args[0])), *args)

    def or_expr(self, c: list) -> A.Expr:
        return self._bool_chain(c, "or")

    def and_expr(self, c: list) -> A.Expr:
        return self._bool_chain(c, "and")

    def binary(self, c: list) -> A.Expr:
        left, op, right = c
        return self._expr(A.BinaryOp(_BINARY_OPS[op.type], left, right, pos=_pos(left)), left, right)

    def like(self, c: list) -> A.Expr:
        left, op, right = c
        node = A.Like(left, right, negated=op.type.startswith("NOT_"), case_insensitive="ILIKE" in op.type,
                      pos=_pos(left))
        return self._expr(node, left, right)

    def in_list(self, c: list) -> _Clause:
        items = _exprs(c)
        if len(items) == 1 and isinstance(c[-2], Token) and c[-2].type == "COMMA":
            # `x IN (1,)`: the list is the one-element tuple, as ClickHouse reads it
            items = (self._expr(A.TupleLiteral(items, pos=_pos(c[0])), *items),)
        return _Clause("in", items, _pos(c[0]))

    def in_op(self, c: list) -> A.Expr:
        left, op, lst = c
        # `x IN [1, 2]`: the array is the list's one item (the binder unwraps it)
        items = (lst,) if isinstance(lst, (A.ArrayLiteral, A.Param)) else lst.value
        node = A.InList(left, items, negated=op.type == "NOT_IN", pos=_pos(left))
        return self._expr(node, left, *items)

    def in_subquery(self, c: list) -> A.Expr:
        left, op, lpar, sel, _ = c
        sub = A.Subquery(sel, pos=_pos(lpar))
        node = A.InList(left, (sub,), negated=op.type == "NOT_IN", pos=_pos(left))
        return self._expr(node, left, sub)

    def is_null(self, c: list) -> A.Expr:
        return self._expr(A.IsNull(c[0], False, pos=_pos(c[0])), c[0])

    def is_not_null(self, c: list) -> A.Expr:
        return self._expr(A.IsNull(c[0], True, pos=_pos(c[0])), c[0])

    def between(self, c: list) -> A.Expr:
        x, op, low, _and, high = c
        node = A.Between(x, low, high, negated=op.type == "NOT_BETWEEN", pos=_pos(x))
        return self._expr(node, x, low, high)

    # -- optional clauses: each `opt_*` rule hands up its clause or None

    def _opt(self, c: list) -> Any:
        return c[0]

    opt_from = opt_prewhere = opt_where = opt_group = opt_having = opt_order = opt_limit = opt_with = _opt
    opt_engine = opt_settings = _opt

    # -- SELECT

    def select_item(self, c: list) -> A.SelectItem:
        if isinstance(c[0], Token):  # STAR
            return A.SelectItem(A.Star(pos=_pos(c[0])), None, pos=_pos(c[0]))
        if len(c) == 1:
            return A.SelectItem(c[0], None, pos=_pos(c[0]))
        expr, _as, alias = c
        return A.SelectItem(expr, alias.decoded, pos=_pos(expr))

    def implicit_alias(self, c: list) -> A.SelectItem:
        expr, alias = c  # `count() c`: ClickHouse's alias without AS
        return A.SelectItem(expr, alias.decoded, pos=_pos(expr))

    def from_clause(self, c: list) -> _Clause:
        # FROM t [AS alias]: (the table, its alias or None)
        return _Clause("from", (c[1], c[3].decoded if c[3] is not None else None), _pos(c[0]))

    def from_function(self, c: list) -> _Clause:
        name = c[1]
        args = _exprs(c[2:])
        return _Clause("from_function", A.TableFunction(name.decoded, args, pos=_pos(name)), _pos(c[0]))

    def from_subquery(self, c: list) -> _Clause:
        query = c[2]
        alias = c[-1].decoded if isinstance(c[-1], Token) and c[-1].type == "IDENT" else None
        return _Clause("from_subquery", A.Subquery(query, alias, pos=_pos(c[1])), _pos(c[0]))

    def prewhere_clause(self, c: list) -> _Clause:
        return _Clause("prewhere", c[1], _pos(c[0]))

    def where_clause(self, c: list) -> _Clause:
        return _Clause("where", c[1], _pos(c[0]))

    def group_clause(self, c: list) -> _Clause:
        return _Clause("group", _exprs(c), _pos(c[0]))

    def having_clause(self, c: list) -> _Clause:
        return _Clause("having", c[1], _pos(c[0]))

    def order_clause(self, c: list) -> _Clause:
        return _Clause("order", tuple(x for x in c if isinstance(x, A.OrderItem)), _pos(c[0]))

    def nulls(self, c: list) -> _Clause:
        return _Clause("nulls", c[1].type == "FIRST", _pos(c[0]))

    def order_item(self, c: list) -> A.OrderItem:
        expr, direction, nulls = c
        desc = direction is not None and direction.type == "DESC"
        return A.OrderItem(expr, desc, None if nulls is None else nulls.value, pos=_pos(expr))

    def limit_value(self, c: list) -> Any:
        e = c[0]
        if isinstance(e, A.Literal) and e.kind == "int":
            if e.value < 0:
                # ClickHouse reads a negative LIMIT as "the last n rows"; skipidx has no such step
                raise ParseError("syntax error: unexpected '-' (a negative LIMIT / OFFSET is not supported)",
                                 line=e.pos.line, column=e.pos.column)
            return e.value
        if isinstance(e, A.Param) and e.type_name == "Identifier":
            # a column name is no LIMIT (as before, refused where it is written)
            raise ParseError("syntax error: unexpected {name:Identifier} (a LIMIT / OFFSET is a constant)",
                             line=e.pos.line, column=e.pos.column)
        return e   # a Param, or a constant expression the engine folds (expr.binder.resolve_limits)

    def limit_clause(self, c: list) -> _Clause:
        _limit, n, _offset, m = c
        return _Clause("limit", (n, m), _pos(c[0]))

    def limit_comma(self, c: list) -> _Clause:
        _limit, m, _comma, n = c  # ClickHouse's LIMIT offset, count
        return _Clause("limit", (n, m), _pos(c[0]))

    def limit_by_clause(self, c: list) -> _Clause:
        _limit, n, _offset, m = c[:4]
        return _Clause("limit_by", A.LimitBy(_exprs(c[4:]), n, m, pos=_pos(c[0])), _pos(c[0]))

    def limit_by_comma(self, c: list) -> _Clause:
        _limit, m, _comma, n = c[:4]   # LIMIT offset, count BY ...
        return _Clause("limit_by", A.LimitBy(_exprs(c[4:]), n, m, pos=_pos(c[0])), _pos(c[0]))

    def limits(self, c: list) -> _Clause:
        return _Clause("limits", [x for x in c if isinstance(x, _Clause)], c[0].pos)

    def with_item(self, c: list) -> A.WithItem:
        expr, _as, name = c
        return A.WithItem(name.decoded, expr, pos=_pos(expr))

    def with_cte(self, c: list) -> A.WithItem:
        name, query = c[0], c[3]
        if not isinstance(name, A.Column) or name.table is not None:
            raise _error("a common table expression is named by one identifier: WITH name AS (SELECT ...)", name)
        return A.WithItem(name.name, None, query, pos=_pos(name))

    def with_clause(self, c: list) -> _Clause:
        items = tuple(x for x in c if isinstance(x, A.WithItem))
        _check_unique([(i.name, i) for i in items], "WITH name")
        return _Clause("with", items, _pos(c[0]))

    def union_mode(self, c: list) -> _Clause | None:
        return _Clause("union", c[0].type == "DISTINCT", _pos(c[0])) if c else None

    def union_query(self, c: list) -> A.Union:
        left, union, mode, right = c
        if mode is None:
            raise _error("Expected ALL or DISTINCT after UNION: write UNION ALL to keep duplicate rows or "
                         "UNION DISTINCT to remove them (EXPECTED_ALL_OR_DISTINCT)", union)
        if isinstance(left, A.Union) and left.distinct == mode.value and left.format is None:
            return dataclasses.replace(left, queries=left.queries + (right,))
        return A.Union((left, right), mode.value, pos=_pos(left))

    def select(self, c: list) -> A.Select:
        with_, c = c[0], c[1:]
        cl = _clauses(c)
        limit, offset = cl["limit"].value if "limit" in cl else (None, None)
        return A.Select(
            items=tuple(x for x in c if isinstance(x, A.SelectItem)),
            table=cl["from"].value[0] if "from" in cl else None,
            table_alias=cl["from"].value[1] if "from" in cl else None,
            table_function=cl["from_function"].value if "from_function" in cl else None,
            subquery=cl["from_subquery"].value if "from_subquery" in cl else None,
            prewhere=cl["prewhere"].value if "prewhere" in cl else None,
            settings=cl["settings"].value if "settings" in cl else (),
            where=cl["where"].value if "where" in cl else None,
            group_by=cl["group"].value if "group" in cl else (),
            having=cl["having"].value if "having" in cl else None,
            order_by=cl["order"].value if "order" in cl else (),
            limit=limit,
            offset=offset,
            distinct=c[1] is not None,
            with_=with_.value if with_ is not None else (),
            limit_by=cl["limit_by"].value if "limit_by" in cl else None,
            pos=_pos(c[0]) if with_ is None else with_.pos,
        )

    def outfile_clause(self, c: list) -> _Clause:
        path = c[2]
        try:
            text = path.decoded.decode("utf-8")
        except UnicodeDecodeError:
            raise _error("OUTFILE path is not valid UTF-8", path) from None
        if "\x00" in text or not text:
            raise _error("OUTFILE path must be a non-empty path without NUL characters", path)
        return _Clause("outfile", text, _pos(c[0]))

    def format_clause(self, c: list) -> _Clause:
        return _Clause("format", c[1].decoded, _pos(c[0]))

    def output_clause(self, c: list) -> _Clause:
        return _Clause("output", _clauses(c), _pos(next(x for x in c if x is not None)))

    def select_query(self, c: list) -> A.Statement:
        sel, out = c
        if out is None:
            return sel
        cl = out.value
        if isinstance(sel, A.Union):
            # FORMAT / INTO OUTFILE are the whole union's; SETTINGS after them join the last SELECT's
            last = sel.queries[-1]
            if "settings" in cl:
                last = self.select_query([last, _Clause("output", {"settings": cl["settings"]}, out.pos)])
            return dataclasses.replace(sel, queries=sel.queries[:-1] + (last,),
                                       format=cl["format"].value if "format" in cl else None,
                                       outfile=cl["outfile"].value if "outfile" in cl else None)
        settings = sel.settings
        if "settings" in cl:
            settings = settings + cl["settings"].value
            _check_unique([(k.name, k) for k in settings], "setting")
        return dataclasses.replace(sel, settings=settings,
                                   format=cl["format"].value if "format" in cl else None,
                                   outfile=cl["outfile"].value if "outfile" in cl else None)

    def explain_options(self, c: list) -> _Clause:
        opts = [k for k in c if isinstance(k, A.KeywordArg)]
        _check_unique([(k.name, k) for k in opts], "EXPLAIN option")
        indexes = False
        for k in opts:
            if k.name not in EXPLAIN_OPTIONS:
                raise _error(f"unknown EXPLAIN option '{k.name}'; expected one of: {', '.join(EXPLAIN_OPTIONS)}", k)
            if k.value.kind not in ("int", "bool") or k.value.value not in (0, 1):
                raise _error(f"EXPLAIN option '{k.name}' must be 0 or 1", k.value)
            indexes = bool(k.value.value)
        return _Clause("explain", indexes, _pos(c[0]))

    def explain(self, c: list) -> A.Explain:
        _explain, _plan, opts, select = c
        return A.Explain(select, indexes=False if opts is None else opts.value, pos=_pos(c[0]))

    # -- DDL

    def enum_value(self, c: list) -> A.EnumValue:
        name, _, value = c
        return A.EnumValue(name, value, pos=name.pos)

    def type_expr(self, c: list) -> A.TypeExpr:
        args = tuple(x for x in c[1:] if isinstance(x, (A.TypeExpr, A.Literal, A.EnumValue)))
        return A.TypeExpr(c[0].decoded, args, pos=_pos(c[0]))

    def codec_item(self, c: list) -> A.CodecSpec:
        args = tuple(x for x in c[1:] if isinstance(x, A.Literal))
        return A.CodecSpec(c[0].decoded, args, pos=_pos(c[0]))

    def codec_clause(self, c: list) -> _Clause:
        return _Clause("codec", tuple(x for x in c if isinstance(x, A.CodecSpec)), _pos(c[0]))

    def column_def(self, c: list) -> A.ColumnDef:
        name, type_, null, default, codec = c
        return A.ColumnDef(name.decoded, type_, () if codec is None else codec.value,
                           default=None if default is None else default.value,
                           null=None if null is None else null.value, pos=_pos(name))

    def null_modifier(self, c: list) -> _Clause:
        return _Clause("null", len(c) == 1, _pos(c[0]))

    def default_clause(self, c: list) -> _Clause:
        return _Clause("default", c[1], _pos(c[0]))

    def kwarg(self, c: list) -> A.KeywordArg:
        return A.KeywordArg(c[0].decoded, c[2], pos=_pos(c[0]))

    def kwarg_param(self, c: list) -> A.KeywordArg:
        name, type_name = c[2].decoded
        return A.KeywordArg(c[0].decoded, A.Param(name, type_name, pos=_pos(c[2])), pos=_pos(c[0]))

    def call_kwarg_arg(self, c: list) -> str:
        lits = [x for x in c if isinstance(x, A.Literal)]
        if len(c) == 1 and lits:
            return lits[0].to_sql()
        if len(c) == 1 and isinstance(c[0], Token) and c[0].type == "IDENT":
            return str(c[0].decoded)
        return "[" + ", ".join(x.to_sql() for x in lits) + "]"

    def call_kwarg(self, c: list) -> A.KeywordArg:
        # key = name / key = name(args): the value is kept as the text 'name' / 'name(args)'
        # (a string literal), which the index type parses (text(tokenizer = ngrams(3)))
        name = c[2].decoded
        args = [x for x in c[3:] if type(x) is str]   # lark Tokens (LPAR, COMMA) are str subclasses
        called = any(isinstance(x, Token) and x.type == "LPAR" for x in c[3:])
        text = f"{name}({', '.join(args)})" if called else name
        return A.KeywordArg(c[0].decoded, A.Literal(text.encode(), "string", pos=_pos(c[2])), pos=_pos(c[0]))

    def granularity(self, c: list) -> _Clause:
        n = c[1]
        if n.decoded < 1:
            raise _error("GRANULARITY must be a positive integer", n)
        return _Clause("granularity", n.decoded, _pos(c[0]))

    def index_type(self, c: list) -> _Clause:
        args: list[A.Literal] = []
        kwargs: list[A.KeywordArg] = []
        for x in c[1:]:
            if isinstance(x, A.KeywordArg):
                kwargs.append(x)
            elif isinstance(x, A.Literal):
                if kwargs:
                    raise _error("positional index argument after a keyword argument", x)
                args.append(x)
        _check_unique([(k.name, k) for k in kwargs], "index argument")
        return _Clause("index_type", (c[0].decoded, tuple(args), tuple(kwargs)), _pos(c[0]))

    @staticmethod
    def _index(name: Token, expr: A.Expr, itype: _Clause, gran: _Clause | None, at: Any) -> A.IndexClause:
        type_name, args, kwargs = itype.value
        return A.IndexClause(name.decoded, expr, type_name, args, kwargs,
                             None if gran is None else gran.value, pos=_pos(at))

    def index_clause(self, c: list) -> A.IndexClause:
        _index, name, expr, _type, itype, gran = c
        return self._index(name, expr, itype, gran, c[0])

    def engine_clause(self, c: list) -> _Clause:
        name = next(t for t in c[1:] if isinstance(t, Token) and t.type == "IDENT")
        args = tuple(x for x in c if isinstance(x, A.Literal))
        return _Clause("engine", (name.decoded, args), _pos(c[0]))

    def partition_clause(self, c: list) -> _Clause:
        return _Clause("partition_by", c[2], _pos(c[0]))

    def primary_key_clause(self, c: list) -> _Clause:
        cl = self.key_clause(c)
        return _Clause("primary_key", cl.value, cl.pos)

    def key_clause(self, c: list) -> _Clause:
        key = c[2]
        if isinstance(key, A.TupleLiteral) and id(key) not in _ctx().parenthesized:
            items = key.items
        elif isinstance(key, A.FunctionCall) and key.name.lower() == "tuple" and not key.distinct:
            if any(isinstance(a, A.Star) for a in key.args):
                raise _error("ORDER BY tuple(*) is not a sorting key", key)
            items = key.args
        else:
            items = (key,)
        return _Clause("key", items, _pos(c[0]))

    def settings_clause(self, c: list) -> _Clause:
        items = tuple(x for x in c if isinstance(x, A.KeywordArg))
        _check_unique([(k.name, k) for k in items], "setting")
        return _Clause("settings", items, _pos(c[0]))

    def if_not_exists(self, c: list) -> _Clause:
        return _Clause("if_not_exists", True, _pos(c[0]))

    def if_exists(self, c: list) -> _Clause:
        return _Clause("if_exists", True, _pos(c[0]))

    def table_elements(self, c: list) -> _Clause:
        return _Clause("elements", tuple(x for x in c if isinstance(x, (A.ColumnDef, A.IndexClause))), _pos(c[0]))

    def as_select(self, c: list) -> _Clause:
        return _Clause("as_select", c[1], _pos(c[0]))

    def create_table(self, c: list) -> A.CreateTable:
        table = c[3]
        cl = _clauses(c)
        elements = cl["elements"].value if "elements" in cl else ()
        columns = tuple(x for x in elements if isinstance(x, A.ColumnDef))
        indexes = tuple(x for x in elements if isinstance(x, A.IndexClause))
        _check_unique([(x.name, x) for x in columns], "column")
        _check_unique([(x.name, x) for x in indexes], "index")
        seen: set[str] = set()
        for x in c:
            if isinstance(x, _Clause) and x.kind in ("key", "primary_key", "settings", "partition_by"):
                if x.kind in seen:
                    raise _error(f"duplicate {x.kind.replace('_', ' ').replace('key', 'ORDER BY') if x.kind == 'key' else x.kind.upper().replace('_', ' ')} clause", x)
                seen.add(x.kind)
        engine, engine_args = cl["engine"].value if "engine" in cl else (None, ())
        return A.CreateTable(
            table=table,
            columns=columns,
            indexes=indexes,
            engine=engine,
            order_by=cl["key"].value if "key" in cl else None,
            settings=cl["settings"].value if "settings" in cl else (),
            if_not_exists="if_not_exists" in cl,
            primary_key=cl["primary_key"].value if "primary_key" in cl else None,
            as_select=cl["as_select"].value if "as_select" in cl else None,
            engine_args=engine_args,
            has_elements="elements" in cl,
            partition_by=cl["partition_by"].value if "partition_by" in cl else None,
            pos=_pos(c[0]),
        )

    def drop_table(self, c: list) -> A.DropTable:
        return A.DropTable(c[3], if_exists=c[2] is not None, pos=_pos(c[0]))

    def truncate(self, c: list) -> A.Truncate:
        _truncate, _table, ie, table = c
        return A.Truncate(table, if_exists=ie is not None, pos=_pos(c[0]))

    # ALTER commands are built with a placeholder table; `alter` fills it in.
    _NO_TABLE = A.TableRef("")

    def alter_add_index(self, c: list) -> A.AlterAddIndex:
        _add, index_kw, ine, name, expr, _type, itype, gran = c
        return A.AlterAddIndex(self._NO_TABLE, self._index(name, expr, itype, gran, index_kw),
                               if_not_exists=ine is not None, pos=_pos(c[0]))

    def alter_drop_index(self, c: list) -> A.AlterDropIndex:
        _drop, _index, ie, name = c
        return A.AlterDropIndex(self._NO_TABLE, name.decoded, if_exists=ie is not None, pos=_pos(c[0]))

    def alter_materialize_index(self, c: list) -> A.AlterMaterializeIndex:
        return A.AlterMaterializeIndex(self._NO_TABLE, c[2].decoded, pos=_pos(c[0]))

    def column_place(self, c: list) -> _Clause:
        if c[0].type == "FIRST":
            return _Clause("first", True, _pos(c[0]))
        return _Clause("after", c[1].decoded, _pos(c[0]))

    def alter_add_column(self, c: list) -> A.AlterAddColumn:
        _add, _column, ine, cdef, place = c
        return A.AlterAddColumn(self._NO_TABLE, cdef, if_not_exists=ine is not None,
                                after=place.value if place is not None and place.kind == "after" else None,
                                first=place is not None and place.kind == "first", pos=_pos(c[0]))

    def alter_drop_column(self, c: list) -> A.AlterDropColumn:
        _drop, _column, ie, name = c
        return A.AlterDropColumn(self._NO_TABLE, name.decoded, if_exists=ie is not None, pos=_pos(c[0]))

    def alter_modify_setting(self, c: list) -> A.AlterModifySetting:
        items = tuple(x for x in c if isinstance(x, A.KeywordArg))
        _check_unique([(k.name, k) for k in items], "setting")
        return A.AlterModifySetting(self._NO_TABLE, items, pos=_pos(c[0]))

    def alter(self, c: list) -> A.Statement:
        table = c[2]
        cmds: list[A.Statement] = []
        for x in c[3:]:
            if isinstance(x, A.Statement):
                cmds.append(dataclasses.replace(x, table=table))
            elif isinstance(x, A.KeywordArg):
                if not cmds or not isinstance(cmds[-1], A.AlterModifySetting):
                    raise _error("a setting 'name = value' in ALTER must follow MODIFY SETTING", x)
                items = cmds[-1].settings + (x,)
                _check_unique([(k.name, k) for k in items], "setting")
                cmds[-1] = dataclasses.replace(cmds[-1], settings=items)
        commands = tuple(cmds)
        if len(commands) == 1:
            return dataclasses.replace(commands[0], pos=_pos(c[0]))
        return A.Alter(table, commands, pos=_pos(c[0]))

    def alter_refresh(self, c: list) -> A.AlterRefresh:
        return A.AlterRefresh(self._NO_TABLE, pos=_pos(c[0]))

    def optimize(self, c: list) -> A.Optimize:
        return A.Optimize(c[2], final=c[3] is not None, pos=_pos(c[0]))

    def show_tables(self, c: list) -> A.ShowTables:
        db = c[-1].decoded if len(c) == 4 and c[-1] is not None else None
        return A.ShowTables(pos=_pos(c[0]), database=db)

    def show_parts(self, c: list) -> A.ShowParts:
        return A.ShowParts(c[-1], pos=_pos(c[0]))

    def show_merges(self, c: list) -> A.ShowMerges:
        return A.ShowMerges(c[-1], pos=_pos(c[0]))

    def alter_attach_parts(self, c: list) -> A.AlterAttachParts:
        return A.AlterAttachParts(self._NO_TABLE, pos=_pos(c[0]))

    def show_create(self, c: list) -> A.ShowCreate:
        return A.ShowCreate(c[-1], pos=_pos(c[0]))

    def exists_table(self, c: list) -> A.ExistsTable:
        return A.ExistsTable(c[-1], pos=_pos(c[0]))

    def set_stmt(self, c: list) -> A.SetStatement:
        items = tuple(x for x in c if isinstance(x, A.KeywordArg))
        _check_unique([(k.name, k) for k in items], "setting")
        return A.SetStatement(items, pos=_pos(c[0]))

    def describe(self, c: list) -> A.Describe:
        return A.Describe(c[-1], pos=_pos(c[0]))

    # -- INSERT

    def column_list(self, c: list) -> _Clause:
        names = [t for t in c if isinstance(t, Token) and t.type == "IDENT"]
        _check_unique([(t.decoded, t) for t in names], "column")
        return _Clause("columns", tuple(t.decoded for t in names), _pos(c[0]))

    def values_row(self, c: list) -> _Clause:
        return _Clause("row", _exprs(c), _pos(c[0]))

    def insert_values(self, c: list) -> A.InsertValues:
        table, cols, settings = c[3], c[4], c[5]
        rows = tuple(x.value for x in c if isinstance(x, _Clause) and x.kind == "row")
        return A.InsertValues(table, None if cols is None else cols.value, rows,
                              settings=() if settings is None else settings.value, pos=_pos(c[0]))

    def insert_select(self, c: list) -> A.InsertSelect:
        table, cols, settings, sel = c[3], c[4], c[5], c[6]
        return A.InsertSelect(table, None if cols is None else cols.value, sel,
                              settings=() if settings is None else settings.value, pos=_pos(c[0]))

    def insert_file(self, c: list) -> A.InsertFile:
        table, cols, path, fmt = c[3], c[4], c[7], c[9]
        try:
            path_text = path.decoded.decode("utf-8")
        except UnicodeDecodeError:
            raise _error("INFILE path is not valid UTF-8", path) from None
        if "\x00" in path_text or not path_text:
            raise _error("INFILE path must be a non-empty path without NUL characters", path)
        if fmt is not None and fmt.decoded not in A.INFILE_FORMATS:
            raise _error(f"unknown format '{fmt.decoded}'; expected one of: {', '.join(A.INFILE_FORMATS)}", fmt)
        return A.InsertFile(table, None if cols is None else cols.value, path_text,
                            None if fmt is None else fmt.decoded, pos=_pos(c[0]))


def _negative_literal(value: Any, kind: str, minus: Token) -> A.Literal:
    if kind == "int":
        v = -int(value)
        if v < INT64_MIN:
            raise _error(f"integer literal out of range (less than {INT64_MIN}): {v}", minus)
        return A.Literal(v, "int", pos=_pos(minus))
    return A.Literal(-float(value), "float", pos=_pos(minus))


def _check_unique(items: list[tuple[str, Any]], what: str) -> None:
    seen: set[str] = set()
    for name, at in items:
        if name in seen:
            raise _error(f"duplicate {what} '{name}'", at)
        seen.add(name)


# ---------------------------------------------------------------- Lark parser and errors

_parser_lock = threading.Lock()
_parser_obj: Any = None   # what parses: .parse(text, start=...)
_lark_lexer_cls: Any = None


def _lark_lexer() -> type:
    """SqlLexer as a Lark Lexer subclass (Lark requires one), made when Lark is first used."""
    global _lark_lexer_cls
    if _lark_lexer_cls is None:
        from lark.lexer import Lexer

        _lark_lexer_cls = type("SqlLexer", (SqlLexer, Lexer), {"__module__": __name__})
    return _lark_lexer_cls


def _build_from_grammar() -> Any:
    """Lark's parser built from grammar.lark (computes the LALR tables: ~1 s)."""
    from lark import Lark

    grammar = (Path(__file__).with_name("grammar.lark")).read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer=_lark_lexer(),
        start=["start", "expr_only"],
        transformer=_AstBuilder(),
        maybe_placeholders=True,
    )


def _current_tables() -> Any:
    """The generated tables module, or None when it is missing or was generated from another grammar."""
    import hashlib

    try:
        from skipidx.sql import _lalr_tables as T
    except ImportError:
        return None
    grammar = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    if T.GRAMMAR_SHA256 != hashlib.sha256(grammar.encode("utf-8")).hexdigest():
        return None
    return T


def _load_driver() -> Any:
    """Our LALR driver (skipidx.sql._lalr) over the generated tables, or None when they are stale."""
    from skipidx.sql import _lalr

    T = _current_tables()
    if T is None:
        return None
    return _lalr.Parser(_lalr.Tables(T.DATA, T.MEMO), _AstBuilder(), SqlLexer(None))


def _load_tables() -> Any:
    """Lark's parser loaded from the generated tables (what parsed before the driver; kept
    to check the driver against), or None when they are stale."""
    from lark import Lark
    from lark.grammar import Rule
    from lark.parsers.lalr_analysis import IntParseTable, Reduce, Shift
    from lark.parsers.lalr_parser import LALR_Parser, _Parser

    class _TablesParser(LALR_Parser):
        """Lark's LALR parser, each reduce action's rule (a memo reference) looked up directly."""

        @classmethod
        def deserialize(cls, data, memo, callbacks, debug=False):  # type: ignore[no-untyped-def]
            tokens = data["tokens"]
            states = {state: {tokens[tok]: ((Shift, arg) if action != 1
                                            else (Reduce, memo[arg["@"]] if "@" in arg
                                                  else Rule.deserialize(arg, memo)))
                              for tok, (action, arg) in actions.items()}
                      for state, actions in data["states"].items()}
            inst = cls.__new__(cls)
            inst._parse_table = IntParseTable(states, data["start_states"], data["end_states"])
            inst.parser = _Parser(inst._parse_table, callbacks, debug)
            return inst

    T = _current_tables()
    if T is None:
        return None
    lexer = _lark_lexer()
    data = dict(T.DATA)
    data["options"] = {**data["options"], "lexer": lexer}
    data["parser"] = {**data["parser"], "lexer_conf": {**data["parser"]["lexer_conf"], "lexer_type": lexer}}
    return Lark._load_from_dict(data, T.MEMO, transformer=_AstBuilder(), _plugins={"LALR_Parser": _TablesParser})


def _lark() -> Any:
    """The process's parser: the driver over the generated tables, else Lark from the grammar."""
    global _parser_obj
    if _parser_obj is None:
        with _parser_lock:
            if _parser_obj is None:
                _parser_obj = _load_driver() or _build_from_grammar()
    return _parser_obj


_DISPLAY = {
    "IDENT": "identifier", "STRING": "string literal", "INT": "integer literal", "FLOAT": "number",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "SEMI": "';'", "DOT": "'.'",
    "EQ": "'='", "NE": "'!='", "LT": "'<'", "LE": "'<='", "GT": "'>'", "GE": "'>='", "PLUS": "'+'",
    "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "PERCENT": "'%'", "DCOLON": "'::'", "CONCAT": "'||'",
    "NOT_LIKE": "NOT LIKE", "NOT_ILIKE": "NOT ILIKE", "NOT_IN": "NOT IN", "NOT_BETWEEN": "NOT BETWEEN",
    "PARAM": "query parameter", "IDENT_PARAM": "{name:Identifier}",
    "$END": "end of input",
}
_ORDER = ["IDENT", "STRING", "INT", "FLOAT", "LPAR", "RPAR", "LSQB", "RSQB", "COMMA", "DOT", "EQ", "NE", "LT",
          "LE", "GT", "GE", "PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "SEMI"]
_EXPR_START = frozenset({"IDENT", "STRING", "INT", "FLOAT", "NULL", "TRUE", "FALSE", "LPAR", "LSQB", "MINUS",
                         "CAST", "CASE", "INTERVAL"})
_OPERATORS = frozenset({"EQ", "NE", "LT", "LE", "GT", "GE", "PLUS", "MINUS", "STAR", "SLASH", "PERCENT",
                        "CONCAT", "DCOLON"})
_OPERATOR_WORDS = frozenset({"LIKE", "NOT_LIKE", "ILIKE", "NOT_ILIKE", "IN", "NOT_IN", "IS", "BETWEEN",
                             "NOT_BETWEEN", "AND", "OR"})


def describe_expected(terminals: set[str] | frozenset[str]) -> tuple[str, ...]:
    """Readable names for a set of expected terminals, most useful first:
    a full set of expression starters reads as 'expression', of binary
    operators as 'operator'."""
    rest = set(terminals)
    head: list[str] = []
    if _EXPR_START <= rest:
        rest -= _EXPR_START | {"NOT", "PARAM", "IDENT_PARAM"}
        head.append("expression")
    if _OPERATORS <= rest:
        rest -= _OPERATORS | _OPERATOR_WORDS
        head.append("operator")
    ordered = [t for t in _ORDER if t in rest]
    words = sorted(t for t in rest if t not in _ORDER and t != "$END")
    tail = ["$END"] if "$END" in rest else []
    return tuple(head + [_DISPLAY.get(t, t) for t in ordered + words + tail])


def _syntax_error(e: Any, text: str) -> ParseError:
    """The ParseError of an UnexpectedToken (the driver's or Lark's)."""
    tok = e.token
    try:
        # The LALR state's lookahead set can be wider than what may really follow;
        # `accepts` replays each candidate on a copy of the parser.
        candidates = set(e.accepts or ()) or set(e.expected)
    except Exception as err:
        lark = _lark_errors()
        if not (isinstance(err, UnexpectedToken) or (lark is not None and isinstance(err, lark[1]))):
            raise
        candidates = set(e.expected)
    if tok.type in ("NOT_AN_ALIAS", "RESTRICTED_ALIAS"):
        candidates.discard("IDENT")  # a name fits there, but not this one (see _classify_word)
    expected = describe_expected(candidates)
    if tok.type == "$END":
        what = "end of input"
        line, column = (tok.end_line, tok.end_column) if tok.end_line else (1, 1)
    else:
        shown = text[tok.start_pos : tok.end_pos]
        if len(shown) > 40:
            shown = shown[:37] + "..."
        what = repr(shown) if ("'" in shown or "\n" in shown) else f"'{shown}'"
        line, column = tok.line, tok.column
    if len(expected) == 1:
        want = f"expected {expected[0]}"
    else:
        want = "expected one of: " + ", ".join(expected)
    hint = ""
    if tok.type == "NOT_AN_ALIAS":
        hint = f" (the keyword '{tok.decoded}' before it was read as a column name)"
    elif tok.type == "RESTRICTED_ALIAS":
        hint = f" ({tok.decoded.upper()} cannot be an alias without AS; write AS `{tok.decoded}`)"
    elif tok.type != "$END" and text[tok.start_pos:tok.end_pos].upper() in ("ROWS", "RANGE") and "RPAR" in candidates:
        hint = (" (an explicit window frame is not supported: OVER (...) takes PARTITION BY and ORDER BY, "
                "with ClickHouse's default frame)")
    ctx = getattr(_local, "ctx", None)
    alias = ctx.implicit_alias if ctx is not None else None
    if alias is not None and tok.type != "$END":
        try:
            right_after = _skip_space(text, alias[1]) == tok.start_pos
        except _LexError:
            right_after = False
        if right_after:
            hint = f" ('{alias[0]}' before it was read as a column alias)"
    return ParseError(f"syntax error: unexpected {what}{hint}; {want}", line=line, column=column,
                      expected=expected)


def _run(text: Any, start: str) -> Any:
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("SQL text is not valid UTF-8", line=1, column=1) from None
    if not isinstance(text, str):
        raise TypeError(f"SQL text must be str, not {type(text).__name__}")
    parser = _lark()
    _local.ctx = _Ctx()
    try:
        return parser.parse(text, start=start)
    except RecursionError:
        raise ParseError("statement is nested too deeply", line=1, column=1) from None
    except Exception as e:
        lark = _lark_errors()
        if isinstance(e, UnexpectedToken) or (lark is not None and isinstance(e, lark[0])):
            raise _syntax_error(e, text) from None
        if lark is not None and isinstance(e, lark[1]):  # Lark's lexer-less errors: none expected; kept for safety
            raise ParseError(f"syntax error: {e}", line=getattr(e, "line", 1) or 1,
                             column=getattr(e, "column", 1) or 1) from None
        raise
    finally:
        _local.ctx = None


#: Texts of at most this many characters have their parse remembered.
PARSE_CACHE_MAX_TEXT = 16 * 1024
#: Parses remembered (least recently used first out).
PARSE_CACHE_ENTRIES = 256

_cache_lock = threading.Lock()
_parse_cache: "OrderedDict[tuple[str, str], Any]" = OrderedDict()


def _run_cached(text: Any, start: str) -> Any:
    """`_run`, remembering the result for a recently seen text.

    Parsing is a pure function of the text and the AST is immutable (frozen
    dataclasses holding tuples), so an application that repeats its queries
    (a dashboard, a benchmark) skips the ~0.5 ms of lexing and LALR parsing.
    Errors are not remembered: a bad text is parsed, and reported, every time.
    """
    if not isinstance(text, str) or len(text) > PARSE_CACHE_MAX_TEXT:
        return _run(text, start)
    key = (start, text)
    with _cache_lock:
        hit = _parse_cache.get(key)
        if hit is not None:
            _parse_cache.move_to_end(key)
            return hit
    out = _run(text, start)
    if isinstance(out, list):
        out = tuple(out)   # the cached value must not be mutable by a caller
    with _cache_lock:
        _parse_cache[key] = out
        while len(_parse_cache) > PARSE_CACHE_ENTRIES:
            _parse_cache.popitem(last=False)
    return out


def parse(text: str) -> list[A.Statement]:
    """Parse one or more statements separated by ``;`` (a trailing ``;`` is fine).

    Raises ParseError for text that holds no statement at all ("empty statement")
    and for any syntax or lexical error, with line, column and `expected`."""
    stmts = _run_cached(text, "start")
    if not stmts:
        raise ParseError("empty statement", line=1, column=1)
    return list(stmts)


def parse_expression(text: str) -> A.Expr:
    """Parse a single expression, e.g. a WHERE condition without the WHERE keyword."""
    if isinstance(text, str):
        try:
            empty = _scan(text, 0) is None
        except _LexError:
            empty = False  # the parser reports the lexical error with its place
        if empty:
            raise ParseError("empty expression", line=1, column=1)
    return _run_cached(text, "expr_only")
