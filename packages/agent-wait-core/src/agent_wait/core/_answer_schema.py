"""Checking an answer against a question's ``answer_schema`` (a JSON Schema).

The checker is the ``jsonschema`` package, imported only when a question states a schema: core
stays light for everyone whose questions never do. It comes with the ``schema`` extra
(``agent-wait-core[schema]``) and with every package whose questions can carry a schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from agent_wait.core._errors import AgentWaitError

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
