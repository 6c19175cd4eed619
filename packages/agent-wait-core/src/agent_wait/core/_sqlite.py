"""The embedded ``sqlite`` announcer and the consumer side of its table.

The table has the row shape of the DynamoDB announcer: ``pk =
THREAD#<thread_id>``, ``sk = WAIT#<question_id>``, ``status = 'open'``, one column per envelope
field and the whole envelope as JSON. An index on ``(status, expires_at)`` plays the part of
DynamoDB's ``by_status`` GSI, so "open questions past their deadline" is one range query.
"""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field

from agent_wait.core._announce import BaseAnnounce, DeliveryOutcome
from agent_wait.core._closing import Closing
from agent_wait.core._models import (
    ANSWER_REFUSED_TYPE,
    FOLLOW_UP_TYPES,
    LifecycleEvent,
    WaitEnvelope,
    format_utc,
)
from agent_wait.core._options import AnnouncerOptions, Seconds
from agent_wait.core._sqlite_file import IDENTIFIER, SqliteFile

# Where callers have always found the embedded inbox's file.
from agent_wait.core._sqlite_file import default_inbox_path as default_inbox_path
from agent_wait.core._store import parse_now, refusal_note, refused_here

if TYPE_CHECKING:
    from agent_wait.core._audit import SqliteAuditLog

DEFAULT_TABLE = "agent_wait_inbox"
NO_EXPIRY = "9999-12-31T23:59:59Z"
"""Stored in the ``expires_at`` column when the envelope has none, so no overdue query sees it."""

# Envelope fields in contract order; every one is a column.
FIELDS = (
    "type",
    "event_id",
    "thread_id",
    "question_id",
    "question",
    "allowed_actions",
    "expires_at",
    "default",
    "answer_ttl",
    "source",
    "reply_to",
    "reply_with",
    "correlation",
    "tags",
)
_TEXT_FIELDS = frozenset({"type", "event_id", "thread_id", "question_id", "answer_ttl"})
_COLUMNS = ("pk", "sk", "status", *FIELDS, "envelope")
LIFECYCLE_COLUMNS = (
    "answered_at",
    "answered_by",
    "answer",
    "message",
    "closes_as",
    "refusal",
    "votes",
    "follow_ups",
    "identity_source",
)
"""Columns the question store fills when a question is closed (added to older files on open)."""


def _not_blank(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        raise ValueError("expected a file path or None")
    return value


DatabasePath = Annotated[Path | None, BeforeValidator(_not_blank)]
"""A database file; None: the inbox's default file (:func:`default_inbox_path`)."""


class SqliteOptions(AnnouncerOptions):
    """Options of the ``sqlite`` announcer (see ``SqliteAnnounce``)."""

    path: DatabasePath = None
    table: str = Field(DEFAULT_TABLE, pattern=IDENTIFIER.pattern)
    timeout: Seconds = 5.0


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def envelope_row(envelope: WaitEnvelope, status: str = "open") -> dict[str, Any]:
    """The table row of an envelope (the DynamoDB item shape, with JSON text for objects).

    Text fields stay text; objects, lists and the free-form ``question`` and ``default`` are
    JSON text; a null is SQL NULL, except ``expires_at``, which holds :data:`NO_EXPIRY`. The
    ``envelope`` column keeps the exact envelope, nulls included.
    """
    body = envelope.to_json()
    data = json.loads(body)
    row: dict[str, Any] = {
        "pk": f"THREAD#{envelope.thread_id}",
        "sk": f"WAIT#{envelope.question_id}",
        "status": status,
    }
    for name in FIELDS:
        value = data[name]
        row[name] = value if name in _TEXT_FIELDS else _json_text(value)
    row["expires_at"] = data["expires_at"] or NO_EXPIRY
    row["envelope"] = body.decode("utf-8")
    return row


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One row of the inbox: the envelope as published and the row's current status.

    Attributes:
        envelope: The stored envelope (the first publish of the question).
        status: ``"open"`` until a consumer marks it otherwise.
        refusal: When the host refused the answer given and the question was opened again:
            why (``reason``), the refused ``answer``, ``by`` and ``at``; else None.
        votes: On a question with a quorum, the votes recorded so far (``{"by", "at",
            "answer"}``); else empty.
    """

    envelope: WaitEnvelope
    status: str
    refusal: dict[str, Any] | None = None
    votes: tuple[dict[str, Any], ...] = ()


def inbox_schema(connection: sqlite3.Connection, table: str, path: Path) -> None:
    connection.execute(
        f'CREATE TABLE IF NOT EXISTS "{table}" ('
        "pk TEXT NOT NULL, sk TEXT NOT NULL, status TEXT NOT NULL, "
        "type TEXT NOT NULL, event_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
        "question_id TEXT NOT NULL, question TEXT, allowed_actions TEXT NOT NULL, "
        'expires_at TEXT NOT NULL, "default" TEXT, answer_ttl TEXT, source TEXT, '
        "reply_to TEXT, reply_with TEXT NOT NULL, correlation TEXT, tags TEXT NOT NULL, "
        "envelope TEXT NOT NULL, PRIMARY KEY (pk, sk))"
    )
    present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
    missing = [c for c in _COLUMNS if c not in present]
    if missing:
        raise sqlite3.OperationalError(
            f"{path}: table {table!r} exists without the inbox columns {missing}; "
            "pass another table= name"
        )
    if any(column not in present for column in LIFECYCLE_COLUMNS):
        _add_lifecycle_columns(connection, table)
    connection.execute(
        f'CREATE INDEX IF NOT EXISTS "{table}_by_status" ON "{table}" (status, expires_at)'
    )
    connection.execute(
        f'CREATE INDEX IF NOT EXISTS "{table}_by_question" ON "{table}" (question_id)'
    )


def _add_lifecycle_columns(connection: sqlite3.Connection, table: str) -> None:
    # Additive migration: a file written before the question lifecycle keeps working and its
    # rows read as never answered. Under the write lock, re-checked, so two processes opening
    # the same old file do not both add a column.
    connection.execute("BEGIN IMMEDIATE")
    try:
        present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
        for column in LIFECYCLE_COLUMNS:
            if column not in present:
                connection.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" TEXT')
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class SqliteAnnounce(BaseAnnounce):
    """The embedded default: writes each question as one row of a local SQLite table.

    One row per question (``pk = THREAD#<thread_id>``, ``sk = WAIT#<question_id>``,
    ``status = 'open'``, every envelope field, and the whole envelope as JSON), the shape the
    DynamoDB announcer writes. A republish of a question that already has a row changes nothing
    and counts as delivered, so a status a consumer set is never overwritten. ``deliver_many``
    writes its rows in one transaction. The database runs in WAL mode with a busy timeout, so
    several processes can publish and read at once; one announcer is safe to share between
    threads. Read the rows with :class:`SqliteInbox` or ``agent-wait inbox``.

    Args:
        path: The database file. Default: ``$AGENT_WAIT_HOME/inbox.sqlite3``, else
            ``inbox.sqlite3`` in the platform's user data directory (see
            :func:`default_inbox_path`; ``~/.local/share/agent-wait`` on Linux). A file (and directory) it creates is
            readable by its owner only (``0600``, directory ``0700``); an existing one keeps
            its mode.
        table: The table name (created if missing).
        timeout: Seconds to wait for another writer's lock before failing.
    """

    name = "sqlite"
    options_model = SqliteOptions

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_TABLE,
        timeout: float = 5.0,
    ) -> None:
        options = SqliteOptions.parse(self.name, {"path": path, "table": table, "timeout": timeout})
        self._store = SqliteFile(options.path, options.table, options.timeout, inbox_schema)
        placeholders = ", ".join("?" for _ in _COLUMNS)
        columns = ", ".join(f'"{c}"' for c in _COLUMNS)
        # ON CONFLICT on the key alone: INSERT OR IGNORE would also silently skip a row that
        # broke a NOT NULL constraint, and a lost question must be an error.
        self._insert = (
            f'INSERT INTO "{table}" ({columns}) VALUES ({placeholders}) '
            "ON CONFLICT (pk, sk) DO NOTHING"
        )

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def audit_log(self) -> SqliteAuditLog:
        """The audit log in the same file (what was asked, sent, answered and run)."""
        # Here, not at import: only a publish or an answer that records needs it.
        from agent_wait.core._audit import sqlite_audit_log

        return sqlite_audit_log(self.path)

    def _values(self, envelope: WaitEnvelope) -> tuple[Any, ...]:
        row = envelope_row(envelope)
        return tuple(row[c] for c in _COLUMNS)

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Insert the question's row unless it already has one."""
        values = self._values(envelope)
        with self._store.connect() as connection:
            connection.execute(self._insert, values)

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Insert every question's row in one transaction."""
        outcomes: list[DeliveryOutcome] = []

        def rows() -> Iterator[tuple[Any, ...]]:
            # Rows are built as sqlite consumes them: a large batch never holds them all at once.
            for envelope in envelopes:
                try:
                    values = self._values(envelope)
                except Exception as error:  # noqa: BLE001 - an unserialisable envelope fails alone
                    outcomes.append(error)
                else:
                    outcomes.append(None)
                    yield values

        try:
            with self._store.connect() as connection:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    connection.executemany(self._insert, rows())
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
        except sqlite3.Error as error:
            # Nothing was written; envelopes not yet reached by the generator fail the same way.
            outcomes.extend([None] * (len(envelopes) - len(outcomes)))
            return [outcome if outcome is not None else error for outcome in outcomes]
        return outcomes

    def deliver_event(self, event: LifecycleEvent) -> None:
        """Close the question's row as the event says, if it is still open; never insert one.

        The row keeps its key and fields: ``status`` becomes ``answered`` or ``expired``, with
        ``answered_at`` and ``answered_by`` from the event; ``answer`` stays empty (the event
        does not carry it). A row someone closed first, or no row, is left as it is. A
        ``wait.answer_refused`` event opens the row again with its reason, only while it still
        records the refused answer (see :func:`reopen_refused`).
        """
        if event.type in FOLLOW_UP_TYPES:
            return  # the question is still open; the sweeper recorded the follow-up itself
        if event.type == ANSWER_REFUSED_TYPE:
            with self._store.connect() as connection:
                reopen_refused(connection, self._store.table, event)
            return
        status = "answered" if event.type == "wait.answered" else "expired"
        with self._store.connect() as connection:
            connection.execute(
                f'UPDATE "{self._store.table}" SET status = ?, answered_at = ?, answered_by = ? '
                "WHERE pk = ? AND sk = ? AND status = 'open'",
                (
                    status,
                    event.at,
                    event.by,
                    f"THREAD#{event.thread_id}",
                    f"WAIT#{event.question_id}",
                ),
            )

    def close(self) -> None:
        """Close the connection (a later delivery reopens it)."""
        self._store.close()

    def __repr__(self) -> str:
        return f"<SqliteAnnounce {self.name!r} path={str(self.path)!r}>"


def reopen_refused(connection: sqlite3.Connection, table: str, event: LifecycleEvent) -> bool:
    """Open a closed question again after the host refused its answer; True if this call did.

    Only while the row still records the refused answer (the event's ``answer_digest``, and its
    ``by`` when it names one): of several deliveries of the refusal, or refusals racing, exactly
    one reopens it, and a corrected answer recorded since is left alone. The row keeps the
    refusal (``reason``, the refused ``answer``, who gave it, when) in ``refusal`` until the
    question is closed again. Votes on it are dropped: the refused decision is voted on afresh.
    """
    key = (f"THREAD#{event.thread_id}", f"WAIT#{event.question_id}")
    row = connection.execute(
        f'SELECT status, answered_at, answered_by, answer FROM "{table}" WHERE pk = ? AND sk = ?',
        key,
    ).fetchone()
    if row is None:
        return False
    status, answered_at, answered_by, answer = row
    recorded = None if answer is None else json.loads(answer)
    if not refused_here(event, status, answered_by, recorded):
        return False
    refusal = refusal_note(event, recorded)
    cursor = connection.execute(
        f'UPDATE "{table}" SET status = ?, answered_at = NULL, answered_by = NULL, answer = NULL, '
        "message = NULL, closes_as = NULL, refusal = ?, votes = NULL, identity_source = NULL "
        "WHERE pk = ? AND sk = ? "
        "AND status = ? AND answered_at IS ? AND answered_by IS ? AND answer IS ?",
        ("open", _json_text(refusal), *key, status, answered_at, answered_by, answer),
    )
    return cursor.rowcount == 1


class SqliteInbox(Closing):
    """Deprecated: use :class:`~agent_wait.core.SqliteQuestionStore`, which reads the same table.

    Read and update the questions a :class:`SqliteAnnounce` wrote. Constructing one warns
    (``DeprecationWarning``); it goes in the next minor release. The store has the same
    ``open_questions()`` and ``open_questions_past(now)``, ``find(question_id, thread_id)`` for
    ``get``, and ``transition(thread_id, question_id, status, by=...)``, which closes a
    question only if it is still open, for ``mark``.

    Args:
        path: The database file; the same default as :class:`SqliteAnnounce`.
        table: The table name.
        timeout: Seconds to wait for a writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_TABLE,
        timeout: float = 5.0,
    ) -> None:
        warnings.warn(
            "SqliteInbox is deprecated; use agent_wait.core.SqliteQuestionStore, which reads "
            "the same table (open_questions, open_questions_past, find, transition)",
            DeprecationWarning,
            stacklevel=2,
        )
        self._store = SqliteFile(path, table, timeout, inbox_schema)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def _select(self, where: str, params: Sequence[Any]) -> list[InboxItem]:
        query = (
            f'SELECT envelope, status, refusal, votes FROM "{self._store.table}" WHERE {where} '
            "ORDER BY expires_at, rowid"
        )
        with self._store.connect() as connection:
            rows = connection.execute(query, tuple(params)).fetchall()
        return [
            InboxItem(
                WaitEnvelope.model_validate_json(text),
                status,
                None if refusal is None else json.loads(refusal),
                () if votes is None else tuple(json.loads(votes)),
            )
            for text, status, refusal, votes in rows
        ]

    def open_questions(self) -> list[InboxItem]:
        """Every question with status ``open``, earliest deadline first (none last)."""
        return self._select("status = ?", ["open"])

    def open_questions_past(self, now: datetime | str | None = None) -> list[InboxItem]:
        """Open questions whose ``expires_at`` is before ``now``.

        For each, the asker's intent is that you send ``default`` as the answer. Questions
        without ``expires_at`` never appear.

        Args:
            now: An aware datetime or RFC 3339 text; default: the current time.
        """
        return self._select("status = ? AND expires_at < ?", ["open", format_utc(parse_now(now))])

    def get(self, thread_id: str, question_id: str) -> InboxItem | None:
        """The row of one question, or None."""
        found = self._select("pk = ? AND sk = ?", [f"THREAD#{thread_id}", f"WAIT#{question_id}"])
        return found[0] if found else None

    def mark(self, thread_id: str, question_id: str, status: str) -> bool:
        """Set a question's status (for example ``"answered"``); True if the row exists."""
        if not isinstance(status, str) or not status.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"status: expected a non-empty string such as 'answered', got {status!r}"
            )
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._store.table}" SET status = ? WHERE pk = ? AND sk = ?',
                (status, f"THREAD#{thread_id}", f"WAIT#{question_id}"),
            )
        return cursor.rowcount > 0

    def close(self) -> None:
        """Close the connection. Safe to call more than once."""
        self._store.close()
