"""What a LIKE pattern or a regular expression says about the literal bytes of every match.

Both are used by the query side of the tokenizers: a granule can only hold a
match if it holds the tokens of the literal text every match must contain.

* :func:`like_runs` — the literal runs of a LIKE pattern between unescaped
  wildcards, with whether each run is anchored at the value's start/end.
  Escapes follow ClickHouse 26.9 (checked against chDB): ``\\%``, ``\\_`` and
  ``\\\\`` are the literal character; a backslash before any other character
  is itself a literal backslash (``'a\\.b'`` matches the 4-byte value
  ``a\\.b``); a trailing lone backslash (an error in ClickHouse) is read as a
  literal backslash.
* :func:`regex_literals` — the literal substrings a regex (RE2 syntax, as
  ``match`` takes it) requires, as alternatives of conjunctions; ``None``
  when nothing can be said. Parsed with Python's own regex parser; anything
  it does not parse, case-insensitive matching, and every construct it does
  not fully understand yield less (never wrong) information.
"""
from __future__ import annotations

from skipidx.core.dataclass_codes import dataclass
from typing import Any

try:  # Python >= 3.11
    import re._constants as _c
    import re._parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

import re


@dataclass(frozen=True)
class Literal:
    """A literal byte string every match contains; ``at_start``/``at_end``: it starts/ends the value."""

    text: bytes
    at_start: bool = False
    at_end: bool = False


_WILDCARDS = re.compile(rb"[%_]")


#: like_scan items for the unescaped wildcards ``%`` and ``_`` (literal bytes are 0..255).
ANY, ONE = -1, -2


def like_scan(pattern: bytes, strict: bool = False) -> list[int]:
    """The pattern as ClickHouse reads it, one item per character: a literal byte
    (0..255), :data:`ANY` for an unescaped ``%``, :data:`ONE` for ``_``.

    The one place that knows LIKE's escapes: ``\\%``, ``\\_`` and ``\\\\`` are
    the literal character; a backslash before anything else is a literal
    backslash (the next character is read normally). A trailing lone
    backslash is an error in ClickHouse: ValueError when `strict`, else a
    literal backslash.
    """
    if b"\\" not in pattern:
        return [ANY if c == 0x25 else ONE if c == 0x5F else c for c in pattern]
    out: list[int] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == 0x5C:  # backslash
            if i + 1 < n and pattern[i + 1] in (0x25, 0x5F, 0x5C):  # \% \_ \\
                out.append(pattern[i + 1])
                i += 2
                continue
            if i + 1 == n and strict:
                raise ValueError("Invalid escape sequence at the end of LIKE pattern")
            out.append(c)
        elif c == 0x25:
            out.append(ANY)
        elif c == 0x5F:
            out.append(ONE)
        else:
            out.append(c)
        i += 1
    return out


def like_runs(pattern: bytes) -> list[Literal]:
    """Maximal literal runs of a LIKE pattern, unescaped, in order (empty runs dropped).

    ``'%foo\\_bar%baz'`` -> ``[Literal(b'foo_bar'), Literal(b'baz', at_end=True)]``.
    Every value matching the pattern contains every run; a run with
    ``at_start`` begins the value, one with ``at_end`` ends it.
    """
    if b"\\" not in pattern:
        # no escapes: the runs are the pieces between wildcards (one C-level
        # split; the loop below costs ~1 s per MB of pattern)
        parts = _WILDCARDS.split(pattern)
        last = len(parts) - 1
        return [Literal(bytes(p), i == 0, i == last) for i, p in enumerate(parts) if p]
    if b"\\" not in pattern:
        # no escapes: the runs are the pieces between wildcards (one C-level split)
        parts = _WILDCARDS.split(pattern)
        last = len(parts) - 1
        return [Literal(bytes(p), i == 0, i == last) for i, p in enumerate(parts) if p]
    runs: list[Literal] = []
    cur = bytearray()
    cur_at_start = True           # no wildcard seen before the current run
    for c in like_scan(pattern):
        if c < 0:
            if cur:
                runs.append(Literal(bytes(cur), cur_at_start, False))
                cur = bytearray()
            cur_at_start = False
        else:
            cur.append(c)
    if cur:
        runs.append(Literal(bytes(cur), cur_at_start, True))
    return runs


def like_has_wildcards(pattern: bytes) -> bool:
    """True iff the pattern has an unescaped ``%`` or ``_`` (else LIKE is equality)."""
    if b"\\" not in pattern:
        return _WILDCARDS.search(pattern) is not None
    return any(c < 0 for c in like_scan(pattern))


def like_unescape(pattern: bytes) -> bytes:
    """The value a wildcard-free LIKE pattern equals (escapes removed)."""
    return bytes(c for c in like_scan(pattern) if c >= 0)


# ---------------------------------------------------------------------------
# regular expressions

#: Alternatives of conjunctions: the match contains all literals of at least one inner list.
Requirement = list[list[Literal]]

_MAX_ALTERNATIVES = 32
_TRUE: Requirement = [[]]  # no information: one alternative that needs nothing

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT}
if hasattr(_c, "POSSESSIVE_REPEAT"):
    _REPEATS.add(_c.POSSESSIVE_REPEAT)
_STARTS = {_c.AT_BEGINNING, _c.AT_BEGINNING_STRING}
_ENDS = {_c.AT_END, _c.AT_END_STRING}


def regex_literals(pattern: bytes) -> Requirement | None:
    """Literal substrings every match of ``pattern`` contains, or None when nothing is known.

    ``'foo.*bar'`` -> ``[[foo, bar]]``; ``' (error|warn)ing'`` -> ``[[ erroring], [ warning]]``
    (small alternations of literals, also ``[Ee]``, multiply out into their
    neighbours; anything else ends the literal run). Anchors
    ``^``/``\\A`` and ``$``/``\\Z`` on the top level (without the multiline flag) mark the
    first/last literal as starting/ending the value (RE2: ``$`` is the end of text).
    """
    try:
        text = pattern.decode("utf-8")
    except UnicodeDecodeError:
        return None  # ClickHouse runs such a pattern in Latin-1; stay out of it
    if "[:" in text or "[=" in text or "[." in text:
        # RE2's POSIX classes (`[[:alpha:]]`) read differently in Python's parser
        # (a class, then a literal `]`): that literal would be a false requirement.
        return None
    try:
        parsed = _p.parse(text, 0)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    flags = parsed.state.flags
    if flags & (re.IGNORECASE | re.MULTILINE | re.VERBOSE):
        # (?i): literals are not byte-exact; (?m): anchors are per line;
        # (?x): Python's and RE2's whitespace rules differ.
        return None
    try:
        req = _sequence(list(parsed), top=True)
    except (RecursionError, UnicodeEncodeError):
        return None
    if any(len(alt) == 0 for alt in req):
        return None
    return req


def _and(a: Requirement, b: Requirement) -> Requirement:
    # Dropping a conjunct only weakens the requirement (never wrong), so when
    # the product of alternatives grows too large, keep the smaller side.
    if len(a) * len(b) > _MAX_ALTERNATIVES:
        return a if len(a) <= len(b) else b
    return [x + y for x in a for y in b]


def _or(parts: list[Requirement]) -> Requirement:
    out: Requirement = []
    for p in parts:
        if any(len(alt) == 0 for alt in p):
            return _TRUE  # one branch needs nothing: the alternation needs nothing
        out.extend(p)
    if len(out) > _MAX_ALTERNATIVES:
        return _TRUE
    return out


def _literal_choices(op: Any, av: Any) -> list[bytes] | None:
    """The strings a node matches if it is a small choice of literals, else None.

    ``foo``, ``(foo)``, ``(error|warn)``, ``(?:s|)``, ``[Ee]`` qualify; a
    case-insensitive group, a range or a negated class does not.
    """
    if op == _c.LITERAL:
        return [chr(av).encode("utf-8")]
    if op == _c.SUBPATTERN:
        if av[1] & re.IGNORECASE:
            return None
        return _sequence_choices(list(av[-1]))
    if op == _c.BRANCH:
        out: list[bytes] = []
        for b in av[1]:
            ch = _sequence_choices(list(b))
            if ch is None:
                return None
            out.extend(ch)
        return out if len(out) <= _MAX_ALTERNATIVES else None
    if op == _c.IN:
        out = []
        for iop, iav in av:
            if iop != _c.LITERAL:  # NEGATE, RANGE, CATEGORY...
                return None
            out.append(chr(iav).encode("utf-8"))
        return out if 0 < len(out) <= _MAX_ALTERNATIVES else None
    return None


def _sequence_choices(items: list) -> list[bytes] | None:
    """The strings a node list matches if it is a concatenation of literal choices."""
    out = [b""]
    for op, av in items:
        ch = _literal_choices(op, av)
        if ch is None or len(out) * len(ch) > _MAX_ALTERNATIVES:
            return None
        out = [x + y for x in out for y in ch]
    return out


def _sequence(items: list, top: bool = False) -> Requirement:
    """Requirement of a node list: literal runs (as a set of alternative runs when a
    small alternation of literals sits inside) ANDed with what groups and repeats need."""
    req: Requirement = _TRUE
    runs: list[bytes] = [b""]      # the current literal run, one per alternative
    run_at_start = False

    def close(at_end: bool = False) -> None:
        nonlocal runs, run_at_start, req
        if any(runs):
            if all(runs):
                req = _and(req, [[Literal(r, run_at_start, at_end)] for r in dict.fromkeys(runs)])
            # else: one alternative is empty (e.g. `(|x)`), so nothing is required
        runs = [b""]
        run_at_start = False

    for idx, (op, av) in enumerate(items):
        choices = _literal_choices(op, av)
        if choices is not None and len(runs) * len(choices) <= _MAX_ALTERNATIVES:
            runs = [r + c for r in runs for c in choices]
        elif op == _c.AT and top and av in _STARTS and idx == 0:
            run_at_start = True
        elif op == _c.AT and top and av in _ENDS and idx == len(items) - 1:
            close(at_end=True)
        elif op == _c.SUBPATTERN and not (av[1] & re.IGNORECASE):
            close()
            req = _and(req, _sequence(list(av[-1])))
        elif op in _REPEATS:
            lo, _hi, body = av
            close()
            if lo >= 1:
                req = _and(req, _sequence(list(body)))
        elif op == _c.BRANCH:
            close()
            req = _and(req, _or([_sequence(list(b)) for b in av[1]]))
        else:
            # ANY, IN, NOT_LITERAL, CATEGORY, AT (elsewhere), GROUPREF, ASSERT...:
            # consumes or asserts something unknown; the literal run ends here.
            close()
    close()
    return req
