"""A ``HumanInTheLoopMiddleware`` batch: one decision per action, sent as one answer.

The question is ``{"actions": [{"name", "args", "description", "allowed_decisions"}, ...]}``;
the host resumes it with ``{"decisions": [...]}``, one per action in order: ``{"type":
"approve"}``, ``{"type": "edit", "edited_action": {"name", "args"}}``, ``{"type": "reject",
"message"?}`` or ``{"type": "respond", "message"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

# A mixed batch is recorded under the most restrictive decision it holds.
_SUMMARY_ORDER = ("reject", "respond", "edit", "approve")


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (envelope content is free-form)."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def batch_actions(question: Any) -> list[Mapping[str, Any]] | None:
    """The actions of a batch question, or None if ``question`` is not a batch."""
    actions = mapping(question).get("actions")
    if not isinstance(actions, list) or not actions:
        return None
    items = cast("list[Any]", actions)
    if not all(isinstance(a, Mapping) for a in items):
        return None
    return [cast("Mapping[str, Any]", a) for a in items]


def _allowed(action: Mapping[str, Any]) -> list[str]:
    allowed = action.get("allowed_decisions")
    return (
        [d for d in cast("list[Any]", allowed) if isinstance(d, str)]
        if isinstance(allowed, list)
        else []
    )


def _label(index: int, action: Mapping[str, Any]) -> str:
    return f"actions[{index}] ({str(action.get('name'))[:40]})"


def edited(
    args: Mapping[str, Any], form: Mapping[str, str], prefix: str, where: str
) -> dict[str, Any] | None:
    """The arguments with the edits of the ``<prefix><name>`` fields, or None if none changed.

    A text argument's field holds the text itself; any other argument's field holds its value
    as JSON, and an edited value must keep the argument's JSON type.

    Raises:
        ValueError: A field is not valid JSON, changes the type, or names no argument; the
            message starts with ``where`` and the argument's name.
    """
    result: dict[str, Any] = dict(args)
    changed = False
    for key, text in form.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix) :]
        if name not in args:
            raise ValueError(f"{where}.{name}: the question has no argument named {name!r}")
        before = args[name]
        if isinstance(before, str):
            value: Any = text  # a text argument is edited as plain text, quotes and all
        else:
            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(
                    f"{where}.{name}: expected JSON such as {json.dumps(before)[:40]}, "
                    f"got {text[:40]!r}"
                ) from None
        kind = json_kind(before)
        if before is not None and json_kind(value) != kind:
            raise ValueError(
                f"{where}.{name}: expected a {kind} like the original, got {text[:40]!r}"
            )
        if value != before:
            changed = True
        result[name] = value
    return result if changed else None


def json_kind(value: Any) -> str:
    """The JSON type of a value: boolean, number, string, array, object or null."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def decisions_from_form(
    actions: list[Mapping[str, Any]], form: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One decision per action from the fields ``action.<i>.decision``, ``.arg.<name>``, ``.message``.

    Raises:
        ValueError: A decision is missing or not allowed for its action, arguments were changed
            without choosing ``edit``, a ``respond`` has no message, or an edit is malformed.
    """
    decisions: list[dict[str, Any]] = []
    for index, action in enumerate(actions):
        label = _label(index, action)
        kind = form.get(f"action.{index}.decision", "")
        if not kind:
            raise ValueError(f"{label}: choose a decision ({', '.join(_allowed(action))})")
        args = mapping(action.get("args"))
        changes = edited(args, form, f"action.{index}.arg.", f"actions[{index}].args")
        message = form.get(f"action.{index}.message", "").strip()[:2000]
        decision: dict[str, Any] = {"type": kind}
        if kind == "edit":
            decision["edited_action"] = {"name": action.get("name"), "args": changes or dict(args)}
        elif changes is not None:
            raise ValueError(
                f"{label}: the arguments were changed but the decision is {kind!r}; choose edit "
                "to send them"
            )
        if message and kind in ("reject", "respond"):
            decision["message"] = message
        decisions.append(decision)
    problem = decisions_problem(actions, decisions)
    if problem:
        raise ValueError(problem)
    return decisions


def decisions_problem(actions: list[Mapping[str, Any]], decisions: Any) -> str | None:
    """Why ``decisions`` would not answer the batch ``actions``, or None if it does."""
    if not isinstance(decisions, list):
        return (
            f"answer.decisions: a batch of {len(actions)} action(s) is answered with "
            f"{{'decisions': [...]}}, one per action in order, got {decisions!r}"[:200]
        )
    items = cast("list[Any]", decisions)
    if len(items) != len(actions):
        return (
            f"answer.decisions: expected {len(actions)} decision(s), one per action in order, "
            f"got {len(items)}"
        )
    for index, (decision, action) in enumerate(zip(items, actions, strict=True)):
        where = f"answer.decisions[{index}]"
        if not isinstance(decision, Mapping):
            return f"{where}: expected an object such as {{'type': 'approve'}}, got {decision!r}"[
                :200
            ]
        found = cast("Mapping[str, Any]", decision)
        kind = found.get("type")
        allowed = _allowed(action)
        if kind not in allowed:
            return f"{_label(index, action)}: decision {kind!r} is not allowed (allowed: {', '.join(allowed)})"[
                :300
            ]
        edit = mapping(found.get("edited_action"))
        if kind == "edit" and not (
            isinstance(edit.get("name"), str) and isinstance(edit.get("args"), Mapping)
        ):
            return f"{where}.edited_action: expected {{'name': str, 'args': {{...}}}}"
        if kind == "respond" and not (isinstance(found.get("message"), str) and found["message"]):
            return f"{_label(index, action)}: a respond decision needs the reply text (message)"
        if kind == "reject" and not isinstance(found.get("message", ""), str):
            return f"{where}.message: expected text"
    return None


def summary(decisions: list[dict[str, Any]]) -> str:
    """The ``action`` recorded for a batch: the decision of every action, or the most restrictive."""
    kinds = {str(d["type"]) for d in decisions}
    return next((k for k in _SUMMARY_ORDER if k in kinds), str(decisions[0]["type"]))
