"""The LALR(1) parser driver the SQL parser runs over the generated tables (_lalr_tables.py).

It does what Lark 1.x's LALR parser does with those tables, the options the SQL parser
builds Lark with (``maybe_placeholders=True``, an inline transformer, a lexer that asks
the parser state which terminals it accepts) and nothing else: the same shift/reduce loop
and error, the same callbacks per rule (child filter with ``None`` placeholders, ``_rule``
children spliced into their parent, ``?rule`` with one child passed through, a rule the
transformer has no method for built as a tree), so it builds the same AST and reports the
same errors (tests/test_startup.py checks both against Lark). Importing Lark and loading
its parser from the tables is a large part of a new process's start-up; Lark remains the
generator of the tables and the parser built from the grammar when they are stale.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["Token", "UnexpectedToken", "Tables", "Parser"]


class Token(str):
    """A token: its text (the str), terminal name `type` and place (as Lark's Token)."""

    __slots__ = ("type", "start_pos", "value", "line", "column", "end_line", "end_column", "end_pos")

    def __new__(cls, type: str, value: Any, start_pos: int | None = None, line: int | None = None,
                column: int | None = None, end_line: int | None = None, end_column: int | None = None,
                end_pos: int | None = None) -> "Token":
        inst = super().__new__(cls, value)
        inst.type = type
        inst.start_pos = start_pos
        inst.value = value
        inst.line = line
        inst.column = column
        inst.end_line = end_line
        inst.end_column = end_column
        inst.end_pos = end_pos
        return inst

    @classmethod
    def new_borrow_pos(cls, type_: str, value: Any, borrow_t: Any) -> "Token":
        return cls(type_, value, borrow_t.start_pos, borrow_t.line, borrow_t.column, borrow_t.end_line,
                   borrow_t.end_column, borrow_t.end_pos)

    def __repr__(self) -> str:
        return "Token(%r, %r)" % (self.type, self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    __hash__ = str.__hash__


class Tree:
    """The node of a rule the transformer has no method for (a ``_rule``, spliced into its parent)."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list) -> None:
        self.data = data
        self.children = children

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class UnexpectedToken(Exception):
    """The parser state cannot take `token`. `expected`: the terminals of the state's table
    row; `accepts`: those it can really shift (each tried on a copy of the state)."""

    def __init__(self, token: Token, expected: set[str], state: "ParserState") -> None:
        super().__init__()
        self.token = token
        self.expected = expected
        self.state = state
        self.line = getattr(token, "line", "?")
        self.column = getattr(token, "column", "?")
        self.pos_in_stream = getattr(token, "start_pos", None)
        self._accepts: set[str] | None = None

    @property
    def accepts(self) -> set[str]:
        if self._accepts is None:
            self._accepts = self.state.accepts()
        return self._accepts

    def __str__(self) -> str:
        return f"Unexpected token {self.token!r} at line {self.line}, column {self.column}"


_SHIFT, _REDUCE = 0, 1


class Rule:
    """A grammar rule: `origin` (its nonterminal's name) and the length of its expansion."""

    __slots__ = ("origin", "size", "name")

    def __init__(self, origin: str, size: int, name: str) -> None:
        self.origin, self.size, self.name = origin, size, name

    def __repr__(self) -> str:
        return f"<Rule {self.origin} ({self.size})>"


class ParseConf:
    __slots__ = ("states", "callbacks", "start", "start_state", "end_state")

    def __init__(self, states: dict, callbacks: dict, start: str, start_state: int, end_state: int) -> None:
        self.states, self.callbacks, self.start = states, callbacks, start
        self.start_state, self.end_state = start_state, end_state

    def __copy__(self) -> "ParseConf":
        return ParseConf(self.states, self.callbacks, self.start, self.start_state, self.end_state)


class ParserState:
    """The parser's stacks. The lexer reads ``position`` and ``parse_conf.states``, and tries
    a terminal on ``copy(deepcopy_values=False)`` with ``parse_conf`` replaced."""

    __slots__ = ("parse_conf", "state_stack", "value_stack")

    def __init__(self, parse_conf: ParseConf, state_stack: list | None = None, value_stack: list | None = None) -> None:
        self.parse_conf = parse_conf
        self.state_stack = state_stack or [parse_conf.start_state]
        self.value_stack = value_stack or []

    @property
    def position(self) -> int:
        return self.state_stack[-1]

    def copy(self, deepcopy_values: bool = True) -> "ParserState":
        if deepcopy_values:
            from copy import deepcopy

            values = deepcopy(self.value_stack)
        else:
            values = list(self.value_stack)
        return ParserState(self.parse_conf, list(self.state_stack), values)

    def feed_token(self, token: Token, is_end: bool = False) -> Any:
        state_stack = self.state_stack
        value_stack = self.value_stack
        states = self.parse_conf.states
        end_state = self.parse_conf.end_state
        callbacks = self.parse_conf.callbacks
        while True:
            state = state_stack[-1]
            try:
                action, arg = states[state][token.type]
            except KeyError:
                expected = {s for s in states[state].keys() if s.isupper()}
                raise UnexpectedToken(token, expected, self) from None
            assert arg != end_state
            if action is _SHIFT:
                assert not is_end
                state_stack.append(arg)
                value_stack.append(token)
                return None
            rule = arg
            size = rule.size
            if size:
                s = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                s = []
            value = callbacks[rule](s) if callbacks else s
            _action, new_state = states[state_stack[-1]][rule.origin]
            assert _action is _SHIFT
            state_stack.append(new_state)
            value_stack.append(value)
            if is_end and state_stack[-1] == end_state:
                return value_stack[-1]

    def accepts(self) -> set[str]:
        """The terminals this state can shift (after reductions), each tried on a copy without callbacks."""
        quiet = ParseConf(self.parse_conf.states, {}, self.parse_conf.start, self.parse_conf.start_state,
                          self.parse_conf.end_state)
        out = set()
        for t in self.parse_conf.states[self.position]:
            if t.isupper():
                trial = self.copy(deepcopy_values=False)
                trial.parse_conf = quiet
                try:
                    trial.feed_token(Token(t, ""), t == "$END")
                except UnexpectedToken:
                    pass
                else:
                    out.add(t)
        return out


class _States(dict):
    """state -> {terminal or rule name: (_SHIFT, state) | (_REDUCE, Rule)}, each state's
    actions decoded from the generated table when the parser first reaches it (a statement
    visits a few dozen of the ~700 states; decoding all of them was most of the driver's set-up)."""

    __slots__ = ("_raw", "_tokens", "_rules")

    def __init__(self, raw: dict, tokens: list, rules: dict) -> None:
        super().__init__()
        self._raw, self._tokens, self._rules = raw, tokens, rules

    def __missing__(self, state: int) -> dict:
        tokens, rules = self._tokens, self._rules
        acts = {tokens[tok]: ((_SHIFT, arg) if action == 0 else (_REDUCE, rules[arg["@"]]))
                for tok, (action, arg) in self._raw[state].items()}
        self[state] = acts
        return acts


class Tables:
    """The parse table and rules of the generated tables module (Lark's serialized form)."""

    def __init__(self, data: dict, memo: dict) -> None:
        table = data["parser"]["parser"]
        tokens = table["tokens"]
        rules: dict[int, Rule] = {}
        self.rule_defs: list[tuple[Rule, dict]] = []
        for i, r in memo.items():
            if r.get("__type__") == "Rule":
                rule = Rule(r["origin"]["name"], len(r["expansion"]),
                            r["alias"] or r["options"]["template_source"] or r["origin"]["name"])
                rules[i] = rule
                self.rule_defs.append((rule, r))
        self.states = _States(table["states"], tokens, rules)
        self.start_states: dict[str, int] = table["start_states"]
        self.end_states: dict[str, int] = table["end_states"]


def _child_filter(expansion: list[dict], empty_indices: tuple) -> Callable[[Callable], Callable] | None:
    """Lark's child filter of a rule (maybe_placeholders, LALR): ``None`` where an optional
    part was left out, the children of a ``_rule`` spliced in; None if nothing to do."""
    n = len(expansion)
    if empty_indices:
        s = "".join(str(int(b)) for b in empty_indices)
        nones = [len(ones) for ones in s.split("0")]
    else:
        nones = [0] * (n + 1)
    to_include = []
    add = 0
    for i, sym in enumerate(expansion):
        add += nones[i]
        # every terminal of the grammar is declared: none is filtered out
        splice = sym["__type__"] == "NonTerminal" and sym["name"].startswith("_")
        to_include.append((i, splice, add))
        add = 0
    tail = add + nones[n]
    if not (empty_indices or any(x for _i, x, _a in to_include)):
        return None

    def wrap(builder: Callable) -> Callable:
        def filtered(children: list) -> Any:
            out: list = []
            for i, splice, add in to_include:
                if add:
                    out += [None] * add
                if splice:
                    if out:
                        out += children[i].children
                    else:
                        out = children[i].children
                else:
                    out.append(children[i])
            if tail:
                out += [None] * tail
            return builder(out)
        return filtered
    return wrap


def callbacks(tables: Tables, transformer: Any) -> dict[Rule, Callable[[list], Any]]:
    """The reduce callback of every rule: the transformer's method of the rule's alias or
    name (a Tree where it has none), behind the rule's child filter and, for a ``?rule``
    without alias, passing a single child through."""
    out: dict[Rule, Callable[[list], Any]] = {}
    for rule, r in tables.rule_defs:
        opts = r["options"]
        f = getattr(transformer, rule.name, None)
        if f is None:
            f = _tree_builder(rule.name)
        if opts["expand1"] and not r["alias"]:
            f = _expand_single(f)
        wrap = _child_filter(r["expansion"], opts["empty_indices"])
        if wrap is not None:
            f = wrap(f)
        out[rule] = f
    return out


def _tree_builder(name: str) -> Callable[[list], Tree]:
    def build(children: list) -> Tree:
        return Tree(name, children)
    return build


def _expand_single(builder: Callable[[list], Any]) -> Callable[[list], Any]:
    def expand(children: list) -> Any:
        return children[0] if len(children) == 1 else builder(children)
    return expand


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Parser:
    """``parse(text, start)``: the lexer's tokens through the LALR loop; the start symbol's value."""

    def __init__(self, tables: Tables, transformer: Any, lexer: Any) -> None:
        self.tables = tables
        self.callbacks = callbacks(tables, transformer)
        self.lexer = lexer

    def parse(self, text: str, start: str) -> Any:
        t = self.tables
        conf = ParseConf(t.states, self.callbacks, start, t.start_states[start], t.end_states[start])
        state = ParserState(conf)
        token = None
        tokens: Iterator[Token] = self.lexer.lex(_Text(text), state)
        for token in tokens:
            state.feed_token(token)
        end = Token.new_borrow_pos("$END", "", token) if token else Token("$END", "", 0, 1, 1)
        return state.feed_token(end, True)
