"""The one check of an answer, wherever a person gives it, and a valid example to show instead.

:func:`answer_problem` is what ``answer()``, ``agent-wait answer`` and the inbox run before
anything is recorded or sent: the question's ``allowed_actions``, its ``answer_schema``, and
JSON every framework's persistence keeps unchanged, within :data:`ANSWER_SIZE_LIMIT`. A
question without an ``answer_schema`` states no shape: any JSON but null is checked only for
actions, storability and size.

The schema checker is the ``jsonschema`` package, imported only when an answer is checked
against a schema, so publishing never loads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agent_wait.core._errors import AgentWaitError
from agent_wait.core._storable import storable_problem

if TYPE_CHECKING:
    from agent_wait.core._models import WaitEnvelope

INSTALL_HINT = "pip install 'agent-wait-core[schema]'"


def schema_problem(schema: Mapping[str, Any], answer: Any) -> str | None:
    """Why ``answer`` does not match the JSON Schema ``schema`` (draft 2020-12), or None if it does.

    The message names the offending place in the answer (``answer.age``, ``answer[0].type``)
    and what is wrong with its value.

    Raises:
        AgentWaitError: The ``jsonschema`` package is not installed (the message says how to
            install it), or ``schema`` is not a valid JSON Schema.
    """
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import (
            SchemaError,
            ValidationError,
            best_match,  # pyright: ignore[reportUnknownVariableType]
        )
    except ImportError:
        raise AgentWaitError(
            f"checking an answer against an answer_schema needs the jsonschema package: "
            f"{INSTALL_HINT}"
        ) from None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise AgentWaitError(
            f"the question's answer_schema is not a valid JSON Schema: {error.message}"
        ) from None
    validator = Draft202012Validator(schema)
    errors = cast("Iterable[ValidationError]", validator.iter_errors(answer))  # pyright: ignore[reportUnknownMemberType]
    error = cast("ValidationError | None", best_match(errors))  # pyright: ignore[reportUnknownArgumentType]
    if error is None:
        return None
    return (
        f"answer{error.json_path.removeprefix('$')}: {error.message} (the question's answer_schema)"
    )


ANSWER_SIZE_LIMIT = 64 * 1024
"""The largest answer, in bytes of compact JSON: its message must still fit every transport's
256 KiB next to the reply fields, and a framework saves it with the thread."""


def answer_problem(envelope: WaitEnvelope, answer: Any) -> str | None:
    """Why ``answer`` does not answer the question of ``envelope``, or None if it does.

    In order: null is no answer; the answer must be JSON every framework keeps unchanged
    (see :func:`~agent_wait.core.storable_problem`) and at most :data:`ANSWER_SIZE_LIMIT`
    bytes; an answer object's ``action`` must be one of ``allowed_actions`` (when the question
    states any); the answer must match ``answer_schema`` (when the question has one).

    Returns:
        A message naming the place in the answer (``answer.args.amount``) and what is wrong.

    Raises:
        AgentWaitError: The ``jsonschema`` package is missing, or ``answer_schema`` is not a
            valid JSON Schema.
    """
    if answer is None:
        return "answer: null is not an answer"
    problem = storable_problem(answer)
    if problem:
        return problem
    size = len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())
    if size > ANSWER_SIZE_LIMIT:
        return f"answer: {size} bytes of JSON, more than the {ANSWER_SIZE_LIMIT} an answer may have"
    allowed = envelope.allowed_actions
    # An empty list states no actions (a bare interrupt): nothing to check an action against.
    if allowed and isinstance(answer, Mapping) and "action" in answer:
        action = cast("Mapping[str, Any]", answer)["action"]
        if action not in allowed:
            return (
                f"answer.action: {str(action)[:80]!r} is not one of the question's "
                f"allowed_actions {allowed}"
            )
    if envelope.answer_schema is not None:
        return schema_problem(envelope.answer_schema, answer)
    return None


def example_answer(schema: Mapping[str, Any] | None, allowed_actions: Sequence[str] = ()) -> Any:
    """A small answer that matches ``schema``, to show a person who gave one that did not.

    The first of an ``enum``, ``const`` or ``examples``; the first alternative of ``oneOf`` /
    ``anyOf``; an object with its required properties; an array with its ``prefixItems`` (or
    ``minItems`` items); a sample value of the type. Without a schema: ``{"action": <the first
    of allowed_actions>}``, or ``true`` when the question states no actions either.
    """
    if schema is None:
        return {"action": allowed_actions[0]} if allowed_actions else True
    return _example(schema, schema)


_SAMPLES: dict[str, Any] = {
    "string": "text",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "null": None,
    "object": {},
    "array": [],
}


def _example(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        defs = cast("Mapping[str, Any]", root.get("$defs") or {})
        return _example(defs.get(ref.removeprefix("#/$defs/")) or {}, root)
    if "const" in schema:
        return schema["const"]
    for listed in ("enum", "examples"):
        values = schema.get(listed)
        if isinstance(values, list) and values:
            return cast("list[Any]", values)[0]
    for choice in ("oneOf", "anyOf", "allOf"):
        branches = schema.get(choice)
        if isinstance(branches, list) and branches:
            return _example(cast("list[Mapping[str, Any]]", branches)[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast("list[str]", kind) if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = cast("Mapping[str, Mapping[str, Any]]", schema.get("properties") or {})
        required = cast("Sequence[str]", schema.get("required") or ())
        return {name: _example(properties.get(name) or {}, root) for name in required}
    if kind == "array" or (kind is None and "prefixItems" in schema):
        prefix = cast("list[Mapping[str, Any]]", schema.get("prefixItems") or [])
        if prefix:
            return [_example(item, root) for item in prefix]
        items = cast("Mapping[str, Any]", schema.get("items") or {})
        return [_example(items, root) for _ in range(int(schema.get("minItems") or 0))]
    if kind in ("integer", "number") and isinstance(schema.get("minimum"), int | float):
        return schema["minimum"]
    return _SAMPLES.get(str(kind), True)
