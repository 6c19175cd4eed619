"""The embedded ``sqlite`` entry point: a message table in the inbox's database file."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_wait.core._entry import (
    DeadLetter,
    EntryPoint,
    Poison,
    Received,
    check_body_size,
    check_message,
    dead_letter,
    logger,
    read_message,
)
from agent_wait.core._logsafe import log_safe
from agent_wait.core._models import format_utc
from agent_wait.core._options import EntryOptions, PositiveCount, Seconds, SecondsOrZero
from agent_wait.core._sqlite import DatabasePath
from agent_wait.core._sqlite_file import IDENTIFIER, SqliteFile

DEFAULT_MESSAGES_TABLE = "agent_wait_messages"
READY = "ready"
DEAD = "dead"


def _messages_schema(connection: sqlite3.Connection, table: str, path: Path) -> None:
    connection.execute(
        f'CREATE TABLE IF NOT EXISTS "{table}" ('
        "id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, body TEXT NOT NULL, "
        "state TEXT NOT NULL, attempts INTEGER NOT NULL, visible_at REAL NOT NULL, "
        "receipt TEXT, sent_at TEXT NOT NULL, error TEXT, dead_at TEXT)"
    )
    present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
    if "visible_at" not in present:
        raise sqlite3.OperationalError(
            f"{path}: table {table!r} exists and is not an entry-point message table; "
            "pass another table= name"
        )
    # The head of each thread's queue is found through this index, in send order.
    connection.execute(
        f'CREATE INDEX IF NOT EXISTS "{table}_by_thread" ON "{table}" (state, thread_id, id)'
    )


class SqliteEntryOptions(EntryOptions):
    """Options of the ``sqlite`` entry point (see ``SqliteEntry``)."""

    path: DatabasePath = None
    """The database file; null: the inbox's default file."""
    table: str = Field(DEFAULT_MESSAGES_TABLE, pattern=IDENTIFIER.pattern)
    """The message table (created if missing)."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again."""
    poll_interval: Seconds = 0.5
    """Longest seconds between polls while a receiver waits (an idle receiver's pace)."""
    busy_poll_interval: Seconds = 0.02
    """Seconds between polls right after a message came (doubled per empty poll)."""
    timeout: Seconds = 5.0
    """Seconds to wait for another writer's lock."""


class SqliteEntry(EntryPoint):
    """The embedded entry point: messages in a table of the inbox's database file.

    The sender inserts a row; a host leases rows by polling: every ``busy_poll_interval``
    seconds right after a message came, twice as long after each poll that finds none, up to
    ``poll_interval`` seconds while idle. A leased row is invisible to other receivers for ``visibility_timeout``
    seconds; :meth:`ack` deletes it, :meth:`fail` makes it visible again after
    ``retry_delay`` seconds, :meth:`release` at once, and a lease that runs out (the host died)
    makes it visible again too. Every hand-out counts an attempt; after ``max_attempts`` the row is dead-lettered and
    kept. Only the oldest live row of each thread is ever handed out, so a thread's messages
    are handled one at a time, in order, by any number of hosts in any number of processes.

    Args:
        path: The database file. Default: the sqlite announcer's (the inbox's) default file.
        table: The message table (created if missing).
        visibility_timeout: Seconds a received message stays leased.
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again.
        poll_interval: Longest seconds between polls while :meth:`receive` waits.
        busy_poll_interval: Seconds between polls right after a message came (at most
            ``poll_interval``).
        timeout: Seconds to wait for another writer's lock.
    """

    name = "sqlite"
    options_model = SqliteEntryOptions

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_MESSAGES_TABLE,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        poll_interval: float = 0.5,
        timeout: float = 5.0,
        busy_poll_interval: float = 0.02,
    ) -> None:
        options = SqliteEntryOptions.parse(
            self.name,
            {
                "path": path,
                "table": table,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "poll_interval": poll_interval,
                "busy_poll_interval": busy_poll_interval,
                "timeout": timeout,
            },
        )
        self._store = SqliteFile(options.path, options.table, options.timeout, _messages_schema)
        self._table = options.table
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self.poll_interval = options.poll_interval
        self.busy_poll_interval = min(options.busy_poll_interval, options.poll_interval)
        # The next pause between polls: short after a message, since an answer often follows
        # soon (the run just parked); lengthening while none comes, so an idle host costs
        # little.
        self._pause = self.busy_poll_interval

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def send(self, message: Mapping[str, Any]) -> None:
        """Insert the message; it can be received at once."""
        body = check_message(message)
        text = check_body_size(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        with self._store.connect() as connection:
            connection.execute(
                f'INSERT INTO "{self._table}" (thread_id, body, state, attempts, visible_at, '
                "sent_at) VALUES (?, ?, ?, 0, ?, ?)",
                (body["thread_id"], text, READY, time.time(), format_utc(datetime.now(UTC))),
            )

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Lease up to ``max_messages`` thread heads, polling up to ``wait`` seconds for one."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            received = self._claim(max_messages)
            if received:
                self._pause = self.busy_poll_interval
                return received
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return received
            pause, self._pause = self._pause, min(self._pause * 2, self.poll_interval)
            if remaining < pause:
                # The caller's next receive polls first thing: none just before it, so a
                # receiver waiting in a loop polls no more often than its pause.
                time.sleep(remaining)
                return received
            time.sleep(pause)

    def _claim(self, limit: int) -> list[Received]:
        now = time.time()
        claimed: list[Received] = []
        with self._store.connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                while len(claimed) < limit and self._claim_heads(connection, now, limit, claimed):
                    pass  # a head was dead-lettered: its thread's next message may be ready
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        return claimed

    def _claim_heads(
        self, connection: sqlite3.Connection, now: float, limit: int, claimed: list[Received]
    ) -> bool:
        """Lease ready thread heads into ``claimed``; True if one was dead-lettered instead."""
        table = self._table
        # As bytes: a body written by another program may not even be text.
        heads = connection.execute(
            f'SELECT m.id, m.thread_id, CAST(m.body AS BLOB), m.attempts, m.error FROM "{table}" m '
            f'WHERE m.state = ? AND m.id = (SELECT min(id) FROM "{table}" '
            "WHERE state = ? AND thread_id = m.thread_id) AND m.visible_at <= ? "
            "ORDER BY m.id",
            (READY, READY, now),
        ).fetchall()
        buried = False
        for row_id, thread_id, body, attempts, error in heads:
            if len(claimed) >= limit:
                break
            if attempts >= self.max_attempts:
                # Its last lease ran out: the receiver died or was too slow every time.
                reason = error or (
                    f"never acknowledged in {attempts} deliveries (the host crashed or "
                    f"took longer than visibility_timeout={self.visibility_timeout}s)"
                )
                self._bury(connection, row_id, thread_id, attempts, reason)
                buried = True
                continue
            message = read_message(body)
            if isinstance(message, Poison):
                connection.execute(
                    f'UPDATE "{table}" SET attempts = attempts + 1 WHERE id = ?', (row_id,)
                )
                self._bury(connection, row_id, thread_id, attempts + 1, message.error)
                buried = True
                continue
            receipt = uuid.uuid4().hex
            connection.execute(
                f'UPDATE "{table}" SET attempts = attempts + 1, visible_at = ?, '
                "receipt = ? WHERE id = ?",
                (now + self.visibility_timeout, receipt, row_id),
            )
            claimed.append(Received(str(row_id), thread_id, message, attempts + 1, receipt))
        return buried

    def _bury(
        self, connection: sqlite3.Connection, row_id: int, thread_id: str, attempts: int, error: str
    ) -> None:
        connection.execute(
            f'UPDATE "{self._table}" SET state = ?, receipt = NULL, error = ?, dead_at = ? '
            "WHERE id = ?",
            (DEAD, error, format_utc(datetime.now(UTC)), row_id),
        )
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in %s table %s",
            row_id,
            log_safe(thread_id),
            attempts,
            error.partition(":")[0],
            self.path,
            self._table,
        )

    def _leased(self, received: Received, update: str, params: tuple[Any, ...]) -> bool:
        with self._store.connect() as connection:
            cursor = connection.execute(
                f"{update} WHERE id = ? AND receipt = ? AND state = ?",
                (*params, int(received.id), received.receipt, READY),
            )
        if cursor.rowcount == 1:
            return True
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            received.id,
            log_safe(received.thread_id),
        )
        return False

    def oldest_waiting(self) -> float | None:
        """Seconds since the oldest message not yet acknowledged or dead-lettered was sent."""
        with self._store.connect() as connection:
            [(sent,)] = connection.execute(
                f'SELECT min(sent_at) FROM "{self._table}" WHERE state = ?', (READY,)
            ).fetchall()
        if sent is None:
            return None
        return max(0.0, (datetime.now(UTC) - datetime.fromisoformat(sent)).total_seconds())

    def ack(self, received: Received) -> bool:
        """Delete the message; False if its lease had run out."""
        return self._leased(received, f'DELETE FROM "{self._table}"', ())

    def extend(self, received: Received) -> bool:
        """Lease the message for another ``visibility_timeout`` seconds."""
        return self._leased(
            received,
            f'UPDATE "{self._table}" SET visible_at = ?',
            (time.time() + self.visibility_timeout,),
        )

    def release(self, received: Received) -> bool:
        """Visible again at once, its attempt kept; False if its lease had run out."""
        return self._leased(
            received,
            f'UPDATE "{self._table}" SET visible_at = ?, receipt = NULL',
            (time.time(),),
        )

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after ``retry_delay``, or dead-letter it."""
        if not retry or received.attempt >= self.max_attempts:
            with self._store.connect() as connection:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    still_mine = connection.execute(
                        f'SELECT 1 FROM "{self._table}" WHERE id = ? AND receipt = ? AND state = ?',
                        (int(received.id), received.receipt, READY),
                    ).fetchone()
                    if still_mine:
                        self._bury(
                            connection,
                            int(received.id),
                            received.thread_id,
                            received.attempt,
                            error,
                        )
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            return still_mine is not None
        self._leased(
            received,
            f'UPDATE "{self._table}" SET visible_at = ?, receipt = NULL, error = ?',
            (time.time() + self.retry_delay, error),
        )
        return False

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first."""
        with self._store.connect() as connection:
            rows = connection.execute(
                f"SELECT id, thread_id, CAST(body AS BLOB), attempts, error, dead_at FROM "
                f'"{self._table}" WHERE state = ? ORDER BY id',
                (DEAD,),
            ).fetchall()
        return [
            dead_letter(str(i), thread, body, attempts, error, dead_at)
            for i, thread, body, attempts, error, dead_at in rows
        ]

    def redrive(self, message_id: str) -> bool:
        """Make a dead letter a new message again (attempts reset, its thread's order kept).

        A poison message comes back as it was and is dead-lettered again at its next receive,
        unless this host can read it now.
        """
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._table}" SET state = ?, attempts = 0, visible_at = ?, '
                "error = NULL, dead_at = NULL WHERE id = ? AND state = ?",
                (READY, time.time(), int(message_id), DEAD),
            )
        return cursor.rowcount == 1

    def describe(self) -> dict[str, Any]:
        """``path`` and ``table``: consumers on this machine send here."""
        return {"path": str(self.path), "table": self._table}

    def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        self._store.close()

    def __repr__(self) -> str:
        return f"<SqliteEntry {self.name!r} path={str(self.path)!r} table={self._table!r}>"
