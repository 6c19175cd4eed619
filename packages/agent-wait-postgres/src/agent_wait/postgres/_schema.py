"""The question table: its DDL, the row of an envelope, and the consumer's overdue query.

The row has the shape of the DynamoDB and sqlite announcers: ``pk =
THREAD#<thread_id>``, ``sk = WAIT#<question_id>``, ``status = 'open'``, one column per envelope
field (JSONB for objects, lists and the free-form values) and the whole envelope as JSONB.
``expires_at`` is a ``timestamptz``; a question without one stores :data:`NO_EXPIRY`, the same
sentinel the other tables use, so ``expires_at < now`` never matches it and the
``(status, expires_at)`` index serves the overdue query.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, LiteralString

import psycopg
from psycopg import AsyncConnection, Connection, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from agent_wait.core import ConfigError, WaitEnvelope
from agent_wait.core.options import PluginOptions
from agent_wait.postgres._options import (
    DEFAULT_TABLE,
    MAX_IDENTIFIER,
    table_parts,
)

# psycopg quotes the fragment of a connection string it stumbled on: part of the password, maybe.
_QUOTED = re.compile(r'"[^"]*"')

NO_EXPIRY = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
"""``expires_at`` of a question that has none (``9999-12-31T23:59:59Z``)."""
NOTIFY_LIMIT = 7999
"""Bytes: PostgreSQL refuses a NOTIFY payload of 8000 bytes or more."""

# The contract's fields, each a column; an optional field (present only when set, such as
# answer_schema) lives in the envelope column alone, so older tables need no migration.
FIELDS: tuple[str, ...] = tuple(
    name for name, info in WaitEnvelope.model_fields.items() if info.exclude_if is None
)
_TEXT_FIELDS = frozenset({"type", "event_id", "thread_id", "question_id", "answer_ttl"})
COLUMNS: tuple[str, ...] = ("pk", "sk", "status", *FIELDS, "envelope")

_COLUMN_TYPES: dict[str, LiteralString] = {
    "pk": "text NOT NULL",
    "sk": "text NOT NULL",
    "status": "text NOT NULL",
    "type": "text NOT NULL",
    "event_id": "text NOT NULL",
    "thread_id": "text NOT NULL",
    "question_id": "text NOT NULL",
    "question": "jsonb",
    "allowed_actions": "jsonb NOT NULL",
    "expires_at": "timestamptz NOT NULL",
    "default": "jsonb",
    "answer_ttl": "text",
    "source": "jsonb",
    "reply_to": "jsonb",
    "reply_with": "jsonb NOT NULL",
    "correlation": "jsonb",
    "tags": "jsonb NOT NULL",
    "envelope": "jsonb NOT NULL",
}


def table_identifier(table: str, option: str = "table") -> sql.Identifier:
    """``table`` or ``schema.table`` as a quoted identifier, after checking each part.

    Raises:
        ConfigError: A part is not a plain identifier of at most 63 bytes.
    """
    parts = table_parts(table) if isinstance(table, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if parts is None:
        raise ConfigError(
            f"postgres option {option}: expected a plain identifier such as 'agent_wait_inbox' or "
            f"'myschema.agent_wait_inbox' (letters, digits, _; at most 63 bytes), got {table!r}"
        )
    return sql.Identifier(*parts)


def check_timeout(timeout: float) -> None:
    """Refuse a connect ``timeout`` that is not a positive number of seconds."""
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"postgres option timeout: expected a positive number, got {timeout!r}")


def check_conninfo(model: type[PluginOptions], name: str, url: str) -> None:
    """Check that ``url`` is a libpq connection string or URI (libpq's parser, no connection).

    Raises:
        ConfigError: It is not; the message names option ``url``, never the password.
    """
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:
        # libpq ends its messages with a newline; the error is one line.
        why = _QUOTED.sub('"***"', str(error).strip())
        raise model.option_error(
            name, "url", f"not a libpq connection string or URI ({why})", url
        ) from None


def _ddl(table: str) -> list[sql.Composed]:
    ident = table_identifier(table)
    name = table.rpartition(".")[2]
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_COLUMN_TYPES[c])) for c in COLUMNS
    )
    # The index name is unqualified: an index always lives in its table's schema.
    index = sql.Identifier(f"{name}_by_status"[:MAX_IDENTIFIER])
    return [
        sql.SQL("CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY (pk, sk))").format(ident, columns),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (status, expires_at)").format(index, ident),
    ]


def create_schema(conn: Connection[Any], table: str = DEFAULT_TABLE) -> None:
    """Create the question table and its ``(status, expires_at)`` index if they do not exist.

    Runs in one transaction (committed here unless ``conn`` is already inside one).

    Args:
        conn: A psycopg connection.
        table: ``name`` or ``schema.name``.
    """
    with conn.transaction():
        for statement in _ddl(table):
            conn.execute(statement)


async def acreate_schema(conn: AsyncConnection[Any], table: str = DEFAULT_TABLE) -> None:
    """Async :func:`create_schema`."""
    async with conn.transaction():
        for statement in _ddl(table):
            await conn.execute(statement)


def row_key(envelope: WaitEnvelope) -> tuple[str, str]:
    """``(pk, sk)`` of an envelope's row: ``("THREAD#<thread_id>", "WAIT#<question_id>")``."""
    return (f"THREAD#{envelope.thread_id}", f"WAIT#{envelope.question_id}")


def row_values(envelope: WaitEnvelope, status: str = "open") -> tuple[Any, ...]:
    """The column values of an envelope's row, in :data:`COLUMNS` order.

    Text fields stay text; objects, lists, ``question`` and ``default`` are JSONB; a null is SQL
    NULL, except ``expires_at``, which holds :data:`NO_EXPIRY`.
    """
    data = envelope.to_dict()
    pk, sk = row_key(envelope)
    row: dict[str, Any] = {"pk": pk, "sk": sk, "status": status}
    for name in FIELDS:
        value = data[name]
        row[name] = value if name in _TEXT_FIELDS or value is None else Jsonb(value)
    expires = data["expires_at"]
    row["expires_at"] = (
        NO_EXPIRY if expires is None else datetime.fromisoformat(expires.replace("Z", "+00:00"))
    )
    row["envelope"] = Jsonb(data)
    return tuple(row[c] for c in COLUMNS)


def notify_payload(envelope: WaitEnvelope) -> str:
    """The NOTIFY payload of a new question: its ids as compact JSON, never its content.

    ``{"dedupe_key", "thread_id", "question_id"}``; when ids that long would pass the NOTIFY
    limit, ``{"dedupe_key": null, "truncated": true}``: re-query the table.
    """
    payload = json.dumps(
        {
            "dedupe_key": envelope.dedupe_key,
            "thread_id": envelope.thread_id,
            "question_id": envelope.question_id,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )
    if len(payload.encode("utf-8")) > NOTIFY_LIMIT:
        return '{"dedupe_key":null,"truncated":true}'
    return payload


def moment(now: datetime | str | None) -> datetime:
    """An aware datetime from a datetime, RFC 3339 text, or None (the current time)."""
    if now is None:
        now = datetime.now(UTC)
    if isinstance(now, str):
        now = datetime.fromisoformat(now.replace("Z", "+00:00").replace("z", "+00:00"))
    if now.tzinfo is None:
        raise ValueError(f"now: expected an aware datetime, got naive {now.isoformat()!r}")
    return now


def _overdue(
    table: str, now: datetime | str | None, limit: int | None
) -> tuple[sql.Composed, list[Any]]:
    now = moment(now)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"limit: expected a positive integer or None, got {limit!r}")
    query = sql.SQL(
        "SELECT envelope FROM {} WHERE status = 'open' AND expires_at < %s ORDER BY expires_at, pk, sk"
    ).format(table_identifier(table))
    params: list[Any] = [now]
    if limit is not None:
        query = sql.SQL("{} LIMIT %s").format(query)
        params.append(limit)
    return query, params


def _ordered(data: Mapping[str, Any]) -> dict[str, Any]:
    # JSONB does not keep key order; give the consumer the contract's field order back.
    return {**{k: data[k] for k in FIELDS if k in data}, **data}


def open_questions_past(
    conn: Connection[Any],
    now: datetime | str | None = None,
    *,
    table: str = DEFAULT_TABLE,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Open questions whose ``expires_at`` is before ``now``, earliest first.

    For each, the asker's intent is that you send ``default`` as the answer. Questions without
    ``expires_at`` never appear.

    Args:
        conn: A psycopg connection.
        now: An aware datetime or RFC 3339 text; default: the current time.
        table: ``name`` or ``schema.name``.
        limit: At most this many.

    Returns:
        The envelopes, as the JSON data that was published.
    """
    query, params = _overdue(table, now, limit)
    # Our own row factory: the caller's connection may default to dict rows.
    with conn.cursor(row_factory=tuple_row) as cursor:
        rows = cursor.execute(query, params).fetchall()
    return [_ordered(row[0]) for row in rows]


async def aopen_questions_past(
    conn: AsyncConnection[Any],
    now: datetime | str | None = None,
    *,
    table: str = DEFAULT_TABLE,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Async :func:`open_questions_past`."""
    query, params = _overdue(table, now, limit)
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(query, params)
        rows = await cursor.fetchall()
    return [_ordered(row[0]) for row in rows]
