"""An answer form generated from a question's ``answer_schema``: one field per property.

Only an object schema with ``properties`` gets one; any other shape is answered in the answer
box. The fields are read back into the answer object, which core's answer check then judges:
its message names the property (``answer.amount: ...``), shown beside that field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.inbox._batch import mapping

SCHEMA = "schema"
"""The ``send`` value of the generated form's button."""
PREFIX = "schema."
_TEXT_KINDS = ("string", "integer", "number", "boolean")


@dataclass(frozen=True, slots=True)
class SchemaField:
    """One property of the schema as a form control."""

    name: str
    kind: str
    """``string``, ``integer``, ``number``, ``boolean``, ``enum`` or ``json`` (anything else)."""
    required: bool
    description: str
    choices: list[str]
    """An enum's values as the form sends them (JSON text for a non-text value)."""


def _kind(schema: Mapping[str, Any]) -> str:
    if isinstance(schema.get("enum"), list):
        return "enum"
    kind = schema.get("type")
    return kind if isinstance(kind, str) and kind in _TEXT_KINDS else "json"


def schema_fields(schema: Mapping[str, Any] | None) -> list[SchemaField] | None:
    """The form's fields, or None when the schema is not an object with properties."""
    if schema is None or schema.get("type") not in ("object", None):
        return None
    properties = mapping(schema.get("properties"))
    if not properties:
        return None
    required = schema.get("required")
    needed = set(cast("list[str]", required)) if isinstance(required, list) else set[str]()
    fields: list[SchemaField] = []
    for name, raw in properties.items():
        prop = mapping(raw)
        kind = _kind(prop)
        enum = cast("list[Any]", prop.get("enum")) if kind == "enum" else []
        fields.append(
            SchemaField(
                name=name,
                kind=kind,
                required=name in needed,
                description=str(prop.get("description") or prop.get("title") or ""),
                choices=[v if isinstance(v, str) else json.dumps(v) for v in enum],
            )
        )
    return fields


def _value(field: SchemaField, text: str, schema: Mapping[str, Any]) -> Any:
    """A field's text as the property's JSON value.

    Text that is not one is kept as text, so the schema check names the property and what it
    expected.
    """
    if field.kind == "string":
        return text
    if field.kind == "enum":
        enum = cast("list[Any]", mapping(mapping(schema.get("properties")).get(field.name))["enum"])
        return next((v for v in enum if (v if isinstance(v, str) else json.dumps(v)) == text), text)
    if field.kind == "boolean":
        return {"true": True, "false": False}.get(text, text)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if field.kind in ("integer", "number") and not isinstance(value, int | float):
        return text
    return value


def schema_answer(schema: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """The answer object the generated form's fields give (an empty field is left out)."""
    fields = schema_fields(schema) or []
    answer: dict[str, Any] = {}
    for field in fields:
        text = form.get(PREFIX + field.name, "")
        if field.kind != "string" and not text.strip():
            continue
        if field.kind == "string" and not text and not field.required:
            continue
        answer[field.name] = _value(field, text.strip() if field.kind != "string" else text, schema)
    return answer


def problem_field(problem: str) -> str | None:
    """The property a problem of core's answer check names (``answer.amount: ...``), if any."""
    head = problem.partition(":")[0]
    if not head.startswith("answer."):
        return None
    return head.removeprefix("answer.").split(".", 1)[0].split("[", 1)[0] or None
