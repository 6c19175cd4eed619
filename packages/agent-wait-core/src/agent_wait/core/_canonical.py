r"""Canonical JSON and derived question ids.

Async-mode question ids are ``sha256(thread_id | function | canonical JSON of args)``. The
canonical form must not depend on dict order, process or Python version, so values are first
normalised to plain JSON types by the rules below, then dumped with sorted keys, no spaces and
UTF-8 text (not ``\u`` escapes):

- ``str``, ``bool``, ``None``: as is. ``int``: as is.
- ``float`` and ``Decimal``: an integral value renders as an integer (``1.0`` and ``Decimal("1.00")``
  both render as ``1``); any other renders as the shortest round-tripping decimal (``repr``), so
  ``0.1`` and ``Decimal("0.1")`` agree. A ``Decimal`` with more digits than a float holds renders
  as a string of its plain decimal notation rather than lose digits. NaN and infinities are refused.
- ``datetime``: ISO 8601; an aware one is converted to UTC and ends in ``Z``; a naive one is
  rendered as is. ``date`` and ``time``: ISO 8601.
- ``UUID``: its hyphenated string. ``Enum``: its value, normalised again.
- ``bytes``: standard base64. ``set``/``frozenset``: sorted by canonical form. ``tuple``: a list.
- dataclass instances: their fields as an object. pydantic models: ``model_dump(mode="json")``.
- Mapping keys: strings as is; ints, floats, bools, None and enums by their canonical JSON form.

Anything else is refused with a :class:`TypeError` naming the path of the bad value.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, cast

from pydantic import BaseModel

JsonValue = Any


def to_jsonable(value: object, path: str = "$") -> JsonValue:
    """Normalise ``value`` to plain JSON types by the canonical rules of this module.

    Raises:
        TypeError: A value (at ``path``) has no JSON rendering.
    """
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _number(value, path)
    if isinstance(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        return {_key(k, path): to_jsonable(v, f"{path}.{k}") for k, v in mapping.items()}
    if isinstance(value, list | tuple):
        items = cast("Sequence[object]", value)
        return [to_jsonable(v, f"{path}[{i}]") for i, v in enumerate(items)]
    return _other(value, path)


def _other(value: object, path: str) -> JsonValue:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeError(f"{path}: {value!r} is not a finite number, JSON cannot carry it")
        if value == value.to_integral_value():
            return int(value)
        return _decimal_text(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.isoformat()
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, path)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(cast("bytes", value))).decode("ascii")
    if isinstance(value, set | frozenset):
        members = cast("Iterable[object]", value)
        return sorted((to_jsonable(v, f"{path}[]") for v in members), key=_dumps)
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(
            {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, path
        )
    raise TypeError(
        f"{path}: a {type(value).__module__}.{type(value).__qualname__} cannot be rendered as "
        "JSON; pass plain data (str, numbers, lists, dicts, datetimes, dataclasses, pydantic "
        "models) or hide the parameter from the question"
    )


def _number(value: float, path: str) -> JsonValue:
    if not math.isfinite(value):
        raise TypeError(f"{path}: {value!r} is not a finite number, JSON cannot carry it")
    # Every integral float, however large, is an exact integer: 1e16 renders like 10**16 and
    # Decimal("1e16"), so the id does not depend on the number's type.
    if value.is_integer():
        return int(value)
    return value


def _decimal_text(value: Decimal) -> JsonValue:
    as_float = float(value)
    # A Decimal equal to the shortest text of a float is a JSON number like that float (compared
    # as numbers: repr writes 1e-05 where the Decimal's plain text is 0.00001); one with more
    # precision than a float keeps it as a string rather than lose digits.
    if math.isfinite(as_float) and Decimal(repr(as_float)) == value:
        return as_float
    return format(value.normalize(), "f")


def _key(key: object, path: str) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, int | float | enum.Enum):
        return _dumps(to_jsonable(key, path))
    raise TypeError(f"{path}: mapping key {key!r} ({type(key).__name__}) is not a JSON object key")


def _dumps(value: JsonValue) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_json(value: object) -> str:
    """Return the canonical JSON text of ``value`` (see the module docstring for the rules)."""
    return _dumps(to_jsonable(value))


def answer_digest(answer: object) -> str:
    """``"sha256:<hex>"`` of the answer's canonical JSON, to name an answer without its content.

    The same however a store gives the answer back (``1.0`` or ``1``, any key order).
    """
    return "sha256:" + hashlib.sha256(canonical_json(answer).encode("utf-8")).hexdigest()


def derive_question_id(thread_id: str, function: str, args: Mapping[str, object]) -> str:
    """Derive the async-mode question id: ``sha256(thread_id | function | canonical JSON of args)``.

    Returns:
        64 lowercase hex characters, identical across processes, dict orders and Python versions.
    """
    material = f"{thread_id}|{function}|{canonical_json(args)}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()
