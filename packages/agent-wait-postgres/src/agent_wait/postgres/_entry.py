"""The ``postgres`` entry point: a message table leased with ``FOR UPDATE SKIP LOCKED``."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import Connection, sql
from psycopg.rows import TupleRow

from agent_wait.core import (
    DeadLetter,
    EntryPoint,
    Received,
    format_utc,
    log_safe,
    parse_message,
)
from agent_wait.core.options import redact
from agent_wait.core.transport import (
    Poison,
    check_body_size,
    connection_errors,
    dead_letter,
    read_message,
)
from agent_wait.postgres._options import (
    DEFAULT_MESSAGES_CHANNEL,
    DEFAULT_MESSAGES_TABLE,
    PostgresEntryOptions,
)
from agent_wait.postgres._schema import check_conninfo, table_identifier

logger = logging.getLogger("agent_wait.postgres.entry")

_MAX_IDENTIFIER = 63


class PostgresEntry(EntryPoint):
    """Messages in a PostgreSQL table, leased with ``SELECT ... FOR UPDATE SKIP LOCKED``.

    ``send`` inserts a row and NOTIFYs ``channel`` in the same transaction; a waiting receiver
    LISTENs on it and wakes at once (and re-checks every ``poll_interval`` seconds for
    messages that became visible again: retries and lapsed leases send no notification). A
    received row gets a fresh receipt and ``visible_at = now + visibility_timeout``; ``ack``
    deletes it, ``fail`` makes it visible again after an exponential backoff (``retry_delay``
    doubled per attempt, at most ``max_retry_delay``), ``release`` at once (and NOTIFYs). After ``max_attempts`` deliveries the
    row's ``state`` becomes ``dead``: kept with its last error, logged at ERROR. Only the
    oldest live row of each thread is handed out, so a thread's messages are handled one at a
    time, in send order, by any number of hosts on any number of machines.

    Args:
        url: libpq connection string or URI; empty uses the ``PG*`` environment variables.
        table: ``name`` or ``schema.name`` of the message table (created if missing).
        channel: The NOTIFY channel receivers LISTEN on.
        visibility_timeout: Seconds a received message stays leased.
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again (doubled per attempt).
        max_retry_delay: The longest retry delay, in seconds.
        poll_interval: Seconds between re-checks while a receiver waits without a notification.
        timeout: Seconds to wait to connect.

    Raises:
        ConfigError: An option is invalid (the message names it; never the password).
    """

    name = "postgres"
    options_model = PostgresEntryOptions

    def __init__(
        self,
        url: str = "",
        table: str = DEFAULT_MESSAGES_TABLE,
        channel: str = DEFAULT_MESSAGES_CHANNEL,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        max_retry_delay: float = 300.0,
        poll_interval: float = 1.0,
        timeout: float = 10.0,
    ) -> None:
        options = PostgresEntryOptions.parse(
            self.name,
            {
                "url": url,
                "table": table,
                "channel": channel,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "max_retry_delay": max_retry_delay,
                "poll_interval": poll_interval,
                "timeout": timeout,
            },
        )
        check_conninfo(PostgresEntryOptions, self.name, options.url)
        self._ident = table_identifier(options.table)
        self.url = options.url
        self.table = options.table
        self.channel = options.channel
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self.max_retry_delay = options.max_retry_delay
        self.poll_interval = options.poll_interval
        self.timeout = options.timeout
        self._conn: Connection[TupleRow] | None = None
        self._listener: Connection[TupleRow] | None = None
        self._lock = threading.Lock()
        self._where = redact(self.url) if self.url else "the PG* environment's server"

    # -- connections -----------------------------------------------------------------------

    def _reachable(self) -> AbstractContextManager[None]:
        # A broken connection is opened again by the next call (see _connection).
        return connection_errors((psycopg.OperationalError,), f"PostgreSQL at {self._where}")

    def _connect(self) -> Connection[TupleRow]:
        return psycopg.connect(
            self.url, autocommit=True, connect_timeout=max(1, math.ceil(self.timeout))
        )

    def _connection(self) -> Connection[TupleRow]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            conn = self._connect()
            try:
                self._create(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _create(self, conn: Connection[TupleRow]) -> None:
        name = self.table.rpartition(".")[2]
        with conn.transaction():
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (id bigserial PRIMARY KEY, "
                    "thread_id text NOT NULL, body text NOT NULL, state text NOT NULL, "
                    "attempts integer NOT NULL DEFAULT 0, visible_at timestamptz NOT NULL, "
                    "receipt text, sent_at timestamptz NOT NULL, error text, dead_at timestamptz)"
                ).format(self._ident)
            )
            # The head of each thread's queue is found through this index, in send order.
            conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (state, thread_id, id)").format(
                    sql.Identifier(f"{name}_by_thread"[:_MAX_IDENTIFIER]), self._ident
                )
            )

    def _listen(self) -> Connection[TupleRow]:
        if self._listener is None or self._listener.closed or self._listener.broken:
            listener = self._connect()
            listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self._listener = listener
        return self._listener

    # -- sending ---------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Insert the message and notify waiting receivers (one transaction)."""
        body = _check(message)
        text = check_body_size(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        with self._lock, self._reachable():
            conn = self._connection()
            with conn.transaction():
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (thread_id, body, state, visible_at, sent_at) "
                        "VALUES (%s, %s, 'ready', clock_timestamp(), clock_timestamp())"
                    ).format(self._ident),
                    [body["thread_id"], text],
                )
                conn.execute("SELECT pg_notify(%s, '')", [self.channel])

    # -- receiving -------------------------------------------------------------------------

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Lease up to ``max_messages`` thread heads, waiting up to ``wait`` seconds for one."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        deadline = time.monotonic() + max(wait, 0.0)
        if wait > 0:
            # Listen before the first claim, so a message sent in between wakes us.
            with self._reachable():
                self._listen()
        while True:
            received = self._claim(max_messages)
            remaining = deadline - time.monotonic()
            if received or remaining <= 0:
                return received
            with self._reachable():
                for _ in self._listen().notifies(
                    timeout=min(self.poll_interval, remaining), stop_after=1
                ):
                    pass

    def _claim(self, limit: int) -> list[Received]:
        heads = sql.SQL(
            "SELECT m.id, m.thread_id, m.body, m.attempts, m.error FROM {t} m "
            "JOIN (SELECT DISTINCT ON (thread_id) id FROM {t} WHERE state = 'ready' "
            "ORDER BY thread_id, id) h ON h.id = m.id "
            "WHERE m.state = 'ready' AND m.visible_at <= clock_timestamp() "
            "ORDER BY m.id LIMIT %s FOR UPDATE OF m SKIP LOCKED"
        ).format(t=self._ident)
        lease = sql.SQL(
            "UPDATE {} SET attempts = attempts + 1, receipt = %s, "
            "visible_at = clock_timestamp() + make_interval(secs => %s) WHERE id = %s"
        ).format(self._ident)
        count = sql.SQL("UPDATE {} SET attempts = attempts + 1 WHERE id = %s").format(self._ident)
        claimed: list[Received] = []
        with self._lock, self._reachable():
            conn = self._connection()
            while len(claimed) < limit:
                buried = 0
                with conn.transaction():
                    rows = conn.execute(heads, [limit - len(claimed)]).fetchall()
                    for row_id, thread_id, body, attempts, error in rows:
                        if attempts >= self.max_attempts:
                            # Its last lease ran out: the host died or was too slow every time.
                            reason = error or (
                                f"never acknowledged in {attempts} deliveries (the host crashed "
                                f"or took longer than visibility_timeout="
                                f"{self.visibility_timeout}s)"
                            )
                            self._bury(conn, row_id, thread_id, attempts, reason)
                            buried += 1
                            continue
                        message = read_message(body)
                        if isinstance(message, Poison):
                            conn.execute(count, [row_id])
                            self._bury(conn, row_id, thread_id, attempts + 1, message.error)
                            buried += 1
                            continue
                        receipt = uuid.uuid4().hex
                        conn.execute(lease, [receipt, self.visibility_timeout, row_id])
                        claimed.append(
                            Received(str(row_id), thread_id, message, attempts + 1, receipt)
                        )
                # Burying a head may have uncovered the next message of its thread.
                if not buried:
                    break
        return claimed

    def _bury(
        self, conn: Connection[TupleRow], row_id: int, thread_id: str, attempts: int, error: str
    ) -> None:
        conn.execute(
            sql.SQL(
                "UPDATE {} SET state = 'dead', receipt = NULL, error = %s, "
                "dead_at = clock_timestamp() WHERE id = %s"
            ).format(self._ident),
            [error, row_id],
        )
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in table %s",
            row_id,
            log_safe(thread_id),
            attempts,
            error.partition(":")[0],
            self.table,
        )

    # -- settling --------------------------------------------------------------------------

    def _leased(self, received: Received, update: sql.Composed, params: list[Any]) -> bool:
        with self._lock, self._reachable():
            rowcount = (
                self._connection()
                .execute(update, [*params, int(received.id), received.receipt])
                .rowcount
            )
        if rowcount == 1:
            return True
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            log_safe(received.id),
            log_safe(received.thread_id),
        )
        return False

    def _where_mine(self) -> sql.SQL:
        return sql.SQL("WHERE id = %s AND receipt = %s AND state = 'ready'")

    def oldest_waiting(self) -> float | None:
        """Seconds since the oldest message not yet acknowledged or dead-lettered was sent."""
        with self._lock, self._reachable():
            row = (
                self._connection()
                .execute(
                    sql.SQL(
                        "SELECT extract(epoch FROM clock_timestamp() - min(sent_at)) FROM {} "
                        "WHERE state = 'ready'"
                    ).format(self._ident)
                )
                .fetchone()
            )
        return None if row is None or row[0] is None else max(0.0, float(row[0]))

    def ack(self, received: Received) -> bool:
        """Delete the message; False if its lease had run out."""
        return self._leased(
            received, sql.SQL("DELETE FROM {} {}").format(self._ident, self._where_mine()), []
        )

    def extend(self, received: Received) -> bool:
        """Lease the message for another ``visibility_timeout`` seconds."""
        return self._leased(
            received,
            sql.SQL(
                "UPDATE {} SET visible_at = clock_timestamp() + make_interval(secs => %s) {}"
            ).format(self._ident, self._where_mine()),
            [self.visibility_timeout],
        )

    def release(self, received: Received) -> bool:
        """Visible again at once, its attempt kept; False if its lease had run out."""
        with self._lock, self._reachable():
            conn = self._connection()
            with conn.transaction():
                rowcount = conn.execute(
                    sql.SQL(
                        "UPDATE {} SET visible_at = clock_timestamp(), receipt = NULL {}"
                    ).format(self._ident, self._where_mine()),
                    [int(received.id), received.receipt],
                ).rowcount
                if rowcount == 1:
                    # Wakes a waiting receiver now rather than at its next poll.
                    conn.execute("SELECT pg_notify(%s, '')", [self.channel])
        if rowcount != 1:
            logger.warning(
                "message %s of thread %s: its lease ran out before it was released "
                "(handed out again)",
                log_safe(received.id),
                log_safe(received.thread_id),
            )
        return rowcount == 1

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after a backoff, or dead-letter it."""
        if not retry or received.attempt >= self.max_attempts:
            with self._lock, self._reachable():
                conn = self._connection()
                with conn.transaction():
                    mine = conn.execute(
                        sql.SQL("SELECT 1 FROM {} {} FOR UPDATE").format(
                            self._ident, self._where_mine()
                        ),
                        [int(received.id), received.receipt],
                    ).fetchone()
                    if mine:
                        self._bury(
                            conn, int(received.id), received.thread_id, received.attempt, error
                        )
            return mine is not None
        delay = min(self.retry_delay * 2 ** (received.attempt - 1), self.max_retry_delay)
        self._leased(
            received,
            sql.SQL(
                "UPDATE {} SET visible_at = clock_timestamp() + make_interval(secs => %s), "
                "receipt = NULL, error = %s {}"
            ).format(self._ident, self._where_mine()),
            [delay, error],
        )
        return False

    # -- dead letters ----------------------------------------------------------------------

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first."""
        with self._lock, self._reachable():
            rows = (
                self._connection()
                .execute(
                    sql.SQL(
                        "SELECT id, thread_id, body, attempts, error, dead_at FROM {} "
                        "WHERE state = 'dead' ORDER BY id"
                    ).format(self._ident)
                )
                .fetchall()
            )
        return [
            dead_letter(str(i), thread, body, attempts, error, format_utc(dead_at))
            for i, thread, body, attempts, error, dead_at in rows
        ]

    def redrive(self, message_id: str) -> bool:
        """Make a dead letter a new message again (attempts reset, its thread's order kept).

        A poison message comes back as it was and is dead-lettered again at its next receive,
        unless this host can read it now.
        """
        try:
            row_id = int(message_id)
        except ValueError:
            return False
        with self._lock, self._reachable():
            conn = self._connection()
            with conn.transaction():
                rowcount = conn.execute(
                    sql.SQL(
                        "UPDATE {} SET state = 'ready', attempts = 0, receipt = NULL, "
                        "visible_at = clock_timestamp(), error = NULL, dead_at = NULL "
                        "WHERE id = %s AND state = 'dead'"
                    ).format(self._ident),
                    [row_id],
                ).rowcount
                if rowcount == 1:
                    conn.execute("SELECT pg_notify(%s, '')", [self.channel])
        return rowcount == 1

    def describe(self) -> dict[str, Any]:
        """``url`` (refused with a password in it), ``table`` and ``channel``."""
        described: dict[str, Any] = {"table": self.table, "channel": self.channel}
        if self.url:
            described["url"] = self.url
        return described

    def close(self) -> None:
        """Close the connections (a later call reopens them)."""
        with self._lock:
            conns, self._conn, self._listener = (self._conn, self._listener), None, None
        for conn in conns:
            if conn is not None:
                conn.close()

    def __repr__(self) -> str:
        return f"<PostgresEntry {self.name!r} url={redact(self.url)!r} table={self.table!r}>"


def _check(message: Mapping[str, Any]) -> dict[str, Any]:
    # Refused before anything is written: the error names the field.
    parse_message(message)
    return dict(message)
