"""What an answer must be for every framework's persistence to keep it unchanged.

A framework host saves the answer (LangGraph's checkpoint, Pydantic AI's stored history, the
Strands session) as part of resuming. An answer the store refuses fails *after* the tool ran,
and one it alters reaches the next run changed; either way the answer must be refused before
anything runs. The rules are what all three stores keep exactly:

- integers within signed 64 bits (LangGraph's msgpack serialiser refuses anything past
  unsigned 64 bits, and 64-bit signed is what JSON consumers in other languages hold);
- finite floats (Pydantic AI stores NaN and infinities as ``null``; JSON has neither);
- text that is valid Unicode (a lone surrogate becomes ``?`` in a LangGraph checkpoint and
  cannot be written as UTF-8 at all by the Pydantic AI and Strands stores);
- objects with string keys (JSON turns ``{1: 2}`` into ``{"1": 2}``);
- only JSON types: ``None``, ``bool``, ``int``, ``float``, ``str``, lists (or tuples, which
  arrive as lists) and mappings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def storable_problem(value: object, path: str = "answer") -> str | None:
    """Why ``value`` cannot be saved unchanged by a framework's persistence, or None if it can.

    Args:
        value: The answer (any nesting; the answer model already bounds its depth).
        path: How to name the value in the message (``answer``, ``answer.items[2]``...).

    Returns:
        A message naming the path and the offending value, or None.
    """
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        problem = _scalar_problem(item, where)
        if problem is not None:
            return problem
        if isinstance(item, Mapping):
            for key, child in cast("Mapping[object, object]", item).items():
                if not isinstance(key, str):
                    return (
                        f"{where}: object key {key!r} ({type(key).__name__}) is not a string; "
                        "JSON object keys are strings"
                    )
                if not _valid_text(key):
                    return f"{where}: object key {key!r} is not valid Unicode (a lone surrogate)"
                stack.append((child, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            items = cast("list[object] | tuple[object, ...]", item)
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(items))
    return None


def _scalar_problem(item: object, where: str) -> str | None:
    if item is None or isinstance(item, bool | Mapping | list | tuple):
        return None
    if isinstance(item, int):
        if INT64_MIN <= item <= INT64_MAX:
            return None
        return (
            f"{where}: the integer {item} is outside the signed 64-bit range "
            f"[{INT64_MIN}, {INT64_MAX}]; send it as a string"
        )
    if isinstance(item, float):
        if math.isfinite(item):
            return None
        return f"{where}: {item!r} is not a finite number, JSON cannot carry it"
    if isinstance(item, str):
        if _valid_text(item):
            return None
        return f"{where}: {item!r} is not valid Unicode (a lone surrogate)"
    return (
        f"{where}: a {type(item).__module__}.{type(item).__qualname__} is not a JSON value "
        "(null, true/false, a number, a string, an array or an object)"
    )


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
