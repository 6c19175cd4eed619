"""Auto-approval rules: data in ``agent-wait.toml`` that decide a call before anyone is asked.

::

    [[rules]]
    name = "small refunds"
    function = "issue_refund"          # optional: only calls of this function
    tags = { approver_group = "support" }  # optional: only questions with these tags
    when = "amount <= 100 and currency in ['EUR', 'USD']"   # optional: over the arguments
    decision = "approve"               # approve | reject | ask

The first rule whose ``function``, ``tags`` and ``when`` all match decides: ``approve`` runs
the call without publishing anything, ``reject`` returns a rejection in the body's place
(``{"action": "reject", "reason": "rule <name>"}``), ``ask`` publishes the question as usual
(a rule that stops later rules from matching). Each decision is recorded in the audit trail with
the rule's name. No rule matching: the question is asked.

``when`` is a small expression language, parsed here and never evaluated as Python:
comparisons (``== != < <= > >=``), ``in`` and ``not in`` (a list literal or a text),
``and``, ``or``, ``not``, parentheses, literals (numbers, ``'text'`` or ``"text"``, ``true``,
``false``, ``null``, ``[lists]``) and names: dotted paths into the call's arguments (``amount``,
``customer.tier``). A path the arguments do not have, or a comparison of different types
(a text with a number), makes the rule not match, so a rule never approves what it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agent_wait.core._errors import ConfigError

DECISIONS = ("approve", "reject", "ask")
_RULE_KEYS = ("name", "function", "tags", "when", "decision")

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<op><=|>=|==|!=|<|>|\(|\)|\[|\]|,)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    )""",
    re.VERBOSE,
)
_WORDS = {"and", "or", "not", "in", "true", "false", "null"}


class RuleError(ValueError):
    """An expression that is not one of the rule language's."""


class _Missing(Exception):
    """A path the arguments do not have: the rule does not match."""


@dataclass(frozen=True, slots=True)
class _Node:
    op: str  # "lit", "path", "list", "not", "and", "or", a comparison, "in", "not in"
    args: tuple[Any, ...] = ()


def _tokens(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise RuleError(f"unexpected {text[position:].strip()[:20]!r} at column {position + 1}")
        kind = cast("str", match.lastgroup)
        value = match.group(kind)
        if kind == "name" and value in _WORDS:
            kind = "word"
        found.append((kind, value))
        position = match.end()
    return found


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self, *values: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at][1] in values

    def take(self, value: str) -> None:
        if not self.peek(value):
            got = self.tokens[self.at][1] if self.at < len(self.tokens) else "the end"
            raise RuleError(f"expected {value!r}, got {got!r}")
        self.at += 1

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.at != len(self.tokens):
            raise RuleError(f"unexpected {self.tokens[self.at][1]!r} after a complete expression")
        return node

    def disjunction(self) -> _Node:
        node = self.conjunction()
        while self.peek("or"):
            self.at += 1
            node = _Node("or", (node, self.conjunction()))
        return node

    def conjunction(self) -> _Node:
        node = self.negation()
        while self.peek("and"):
            self.at += 1
            node = _Node("and", (node, self.negation()))
        return node

    def negation(self) -> _Node:
        if self.peek("not"):
            self.at += 1
            return _Node("not", (self.negation(),))
        return self.comparison()

    def comparison(self) -> _Node:
        left = self.primary()
        if self.peek("==", "!=", "<", "<=", ">", ">=", "in"):
            op = self.tokens[self.at][1]
            self.at += 1
            return _Node(op, (left, self.primary()))
        if (
            self.peek("not")
            and self.at + 1 < len(self.tokens)
            and self.tokens[self.at + 1][1] == "in"
        ):
            self.at += 2
            return _Node("not in", (left, self.primary()))
        return left

    def primary(self) -> _Node:
        if self.at >= len(self.tokens):
            raise RuleError("the expression ends where a value was expected")
        kind, value = self.tokens[self.at]
        self.at += 1
        if kind == "number":
            number = float(value)
            return _Node(
                "lit", (int(number) if number.is_integer() and "." not in value else number,)
            )
        if kind == "string":
            return _Node("lit", (bytes(value[1:-1], "utf-8").decode("unicode_escape"),))
        if kind == "word" and value in ("true", "false", "null"):
            return _Node("lit", ({"true": True, "false": False, "null": None}[value],))
        if kind == "name":
            return _Node("path", tuple(value.split(".")))
        if value == "(":
            node = self.disjunction()
            self.take(")")
            return node
        if value == "[":
            items: list[_Node] = []
            while not self.peek("]"):
                items.append(self.primary())
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            return _Node("list", tuple(items))
        raise RuleError(f"unexpected {value!r} where a value was expected")


def _value(node: _Node, args: Mapping[str, Any]) -> Any:
    if node.op == "lit":
        return node.args[0]
    if node.op == "list":
        return [_value(item, args) for item in node.args]
    if node.op == "path":
        current: Any = args
        for part in node.args:
            if not isinstance(current, Mapping) or part not in current:
                raise _Missing(".".join(node.args))
            current = cast("Mapping[str, Any]", current)[part]
        return current
    return _truth(node, args)


def _comparable(left: Any, right: Any) -> bool:
    number = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool)
    return (isinstance(left, number) and isinstance(right, number)) or type(left) is type(right)


def _truth(node: _Node, args: Mapping[str, Any]) -> bool:
    op = node.op
    if op == "and":
        return _truth(node.args[0], args) and _truth(node.args[1], args)
    if op == "or":
        return _truth(node.args[0], args) or _truth(node.args[1], args)
    if op == "not":
        return not _truth(node.args[0], args)
    if op in ("in", "not in"):
        left, right = _value(node.args[0], args), _value(node.args[1], args)
        if isinstance(right, str):
            found = isinstance(left, str) and left in right
        elif isinstance(right, list):
            items = cast("list[Any]", right)
            found = any(_comparable(left, item) and left == item for item in items)
        else:
            return False
        return found if op == "in" else not found
    if op in ("==", "!=", "<", "<=", ">", ">="):
        left, right = _value(node.args[0], args), _value(node.args[1], args)
        if not _comparable(left, right) and not (left is None or right is None):
            return False
        if op == "==":
            return bool(left == right)
        if op == "!=":
            return bool(left != right)
        if left is None or right is None or isinstance(left, list | dict):
            return False
        return bool(
            {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
        )
    value = _value(node, args)
    return value is True


@dataclass(frozen=True, slots=True)
class Rule:
    """One configured rule (see the module docstring).

    Attributes:
        name: Its name, recorded in the audit trail.
        decision: ``approve``, ``reject`` or ``ask``.
        function: Only calls of this function, or any (None).
        tags: Only questions carrying every one of these tags.
        when: The expression over the arguments, as written (None: always).
    """

    name: str
    decision: str
    function: str | None = None
    tags: dict[str, str] = field(default_factory=dict[str, str])
    when: str | None = None
    _parsed: _Node | None = field(default=None, repr=False, compare=False)

    def matches(self, function: str, args: Mapping[str, Any], tags: Mapping[str, str]) -> bool:
        """Whether this rule decides a call of ``function`` with ``args`` and ``tags``."""
        if self.function is not None and self.function != function:
            return False
        if any(tags.get(k) != v for k, v in self.tags.items()):
            return False
        if self._parsed is None:
            return True
        try:
            return _truth(self._parsed, args)
        except _Missing:
            return False


def parse_rule(raw: object, where: str) -> Rule:
    """Validate one ``[[rules]]`` table.

    Raises:
        ConfigError: Naming the rule (or its position) and what is wrong with it.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a table with name and decision, got {raw!r}")
    table = cast("Mapping[str, Any]", raw)
    name = table.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name: expected the rule's name, got {name!r}")
    where = f"{where} {name!r}"
    unknown = sorted(set(table) - set(_RULE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_RULE_KEYS)})")
    decision = table.get("decision")
    if decision not in DECISIONS:
        raise ConfigError(f"{where}: decision: expected one of {list(DECISIONS)}, got {decision!r}")
    function = table.get("function")
    if function is not None and (not isinstance(function, str) or not function):
        raise ConfigError(f"{where}: function: expected a function name, got {function!r}")
    tags = table.get("tags", {})
    if not isinstance(tags, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in cast("Mapping[object, object]", tags).items()
    ):
        raise ConfigError(f"{where}: tags: expected a table of text values, got {tags!r}")
    when = table.get("when")
    parsed: _Node | None = None
    if when is not None:
        if not isinstance(when, str) or not when.strip():
            raise ConfigError(f"{where}: when: expected an expression such as 'amount <= 100'")
        try:
            parsed = _Parser(when).parse()
        except RuleError as error:
            raise ConfigError(f"{where}: when {when!r}: {error}") from None
    return Rule(
        name,
        cast("str", decision),
        function,
        dict(cast("Mapping[str, str]", tags)),
        when,
        parsed,
    )


def parse_rules(raw: object, where: str) -> tuple[Rule, ...]:
    """Validate the ``rules`` array of a configuration.

    Raises:
        ConfigError: The array, or one rule, is malformed (the message names it).
    """
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise ConfigError(f"{where}: rules: expected an array of [[rules]] tables, got {raw!r}")
    rules = tuple(
        parse_rule(item, f"{where}: rules[{index}]")
        for index, item in enumerate(cast("Sequence[object]", raw))
    )
    names = [rule.name for rule in rules]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{where}: rules: {twice[0]!r} names two rules; names must be unique")
    return rules


def decide(
    rules: Sequence[Rule], function: str, args: Mapping[str, Any], tags: Mapping[str, str]
) -> Rule | None:
    """The first rule that matches the call, or None."""
    return next((rule for rule in rules if rule.matches(function, args, tags)), None)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A call a rule rejected: ``answer`` is returned in the body's place."""

    answer: dict[str, Any]
