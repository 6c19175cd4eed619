"""PostgresAnnounce: one row per question, inserted if absent, plus a NOTIFY (psycopg 3)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Sequence
from typing import Any, Self

try:
    import psycopg
    import psycopg.errors
    from psycopg import AsyncConnection, Connection, sql
    from psycopg.rows import TupleRow
except ImportError as error:  # pragma: no cover - the distribution depends on psycopg
    raise ImportError(
        "PostgresAnnounce needs psycopg 3: pip install agent-wait-postgres"
    ) from error

from agent_wait.core import (
    FOLLOW_UP_TYPES,
    BaseAnnounce,
    BatchEntryFailed,
    DeliveryFailed,
    DeliveryOutcome,
    LifecycleEvent,
    WaitEnvelope,
)
from agent_wait.core.transport import ClientPair
from agent_wait.postgres._audit import PostgresAuditLog, audit_beside
from agent_wait.postgres._options import DEFAULT_CHANNEL, DEFAULT_TABLE, PostgresOptions
from agent_wait.postgres._schema import (
    COLUMNS,
    acreate_schema,
    check_conninfo,
    create_schema,
    notify_payload,
    row_key,
    row_values,
    table_identifier,
)
from agent_wait.postgres._store import PostgresQuestionStore

# Errors about one row's data (bad values, a constraint, an oversized key): that envelope fails
# alone. Any other error (missing table, privileges, connection) fails the whole batch.
_ROW_ERRORS = (psycopg.DataError, psycopg.IntegrityError, psycopg.errors.ProgramLimitExceeded)
_NOTIFY = sql.SQL("SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload")


class PostgresAnnounce(BaseAnnounce):
    """Writes each question as one row of a PostgreSQL table and NOTIFYs a channel.

    The row has the DynamoDB/sqlite shape: ``pk = THREAD#<thread_id>``, ``sk =
    WAIT#<question_id>``, ``status = 'open'``, every envelope field as a column (JSONB for
    objects), ``expires_at`` as ``timestamptz`` (``9999-12-31T23:59:59Z`` when the question has
    none) and the whole envelope as JSONB. The insert is ``ON CONFLICT (pk, sk) DO NOTHING``: a
    republish changes nothing, never overwrites a status a consumer set, and counts as
    delivered. Each new row (not a republish) sends ``pg_notify(channel, payload)`` with its
    ids as JSON (``{"dedupe_key", "thread_id", "question_id"}``), delivered when the
    transaction commits. Several envelopes are inserted in one transaction; an envelope the
    database refuses fails alone.

    Opted in to lifecycle events (``with_lifecycle_events``, or ``lifecycle_events`` in its
    configuration entry), it keeps the rows up to date: ``wait.answer_refused`` opens the
    question again with the host's reason (:meth:`PostgresQuestionStore.reopen_refused`: exactly
    once, only while the row still records the refused answer), and ``wait.answered`` /
    ``wait.expired`` close a row still open (answered some other way).

    Create the table with :func:`agent_wait.postgres.create_schema` (or ``create_table=True``),
    and read overdue questions with :func:`agent_wait.postgres.open_questions_past`.

    Args:
        url: libpq connection string or URI (``postgresql://user@host:5432/db``); empty uses
            the ``PG*`` environment variables and libpq defaults.
        table: ``name`` or ``schema.name``.
        channel: The NOTIFY channel; None sends no notification.
        create_table: Create the table and its index on first connect if missing.
        timeout: Seconds to wait to connect (libpq rounds up to whole seconds).

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "postgres"
    options_model = PostgresOptions

    def __init__(
        self,
        url: str = "",
        table: str = DEFAULT_TABLE,
        channel: str | None = DEFAULT_CHANNEL,
        create_table: bool = False,
        timeout: float = 10.0,
    ) -> None:
        options = PostgresOptions.parse(
            self.name,
            {
                "url": url,
                "table": table,
                "channel": channel,
                "create_table": create_table,
                "timeout": timeout,
            },
        )
        check_conninfo(PostgresOptions, self.name, options.url)
        ident = table_identifier(options.table)
        self.url = options.url
        self.table = options.table
        self.channel = options.channel
        self.create_table = options.create_table
        self.timeout = options.timeout
        self._insert = sql.SQL(
            "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT (pk, sk) DO NOTHING RETURNING pk, sk"
        ).format(
            ident,
            sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS),
            sql.SQL(", ").join(sql.Placeholder() for _ in COLUMNS),
        )
        # Connected on first use and reused (reconnecting when broken); an AsyncConnection
        # belongs to the loop it was opened on, so the async path has one per running loop.
        self._clients = ClientPair[_SyncSlot, _AsyncSlot](_SyncSlot, _AsyncSlot)
        # Lifecycle events go through the store of the same table; it connects on first use.
        self._store = PostgresQuestionStore(
            options.url, options.table, options.create_table, options.timeout
        )

    def _connect_args(self) -> dict[str, Any]:
        # autocommit: every write below opens its own explicit transaction, and a reader's
        # connection is never left idle in a transaction.
        return {"autocommit": True, "connect_timeout": max(1, math.ceil(self.timeout))}

    # -- sync --------------------------------------------------------------------------------

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Insert every row in one transaction; one outcome per envelope, in order.

        Each row is inserted unless it exists, with a notification when it is new. A failed
        envelope's outcome is :class:`~agent_wait.core.BatchEntryFailed` (the database refused
        the row; its SQLSTATE is the ``code``) or :class:`~agent_wait.core.DeliveryFailed`
        (the database is unreachable, ``retryable``, or the table is missing). ``deliver`` is a
        batch of one.
        """
        if not envelopes:
            return []
        slot = self._clients.sync()
        with slot.lock:
            try:
                conn = slot.conn
                if conn is None or conn.closed or conn.broken:
                    conn = slot.conn = self._connect()
                return self._write(conn, envelopes)
            except psycopg.Error as error:
                return [_unavailable(error)] * len(envelopes)

    @property
    def destination(self) -> str:
        """The table."""
        return self.table

    def check_connection(self) -> bool:
        """Connect and look the table up (``agent-wait config check --connect``).

        One ``SELECT`` that writes nothing; the table must exist unless ``create_table``.

        Raises:
            LookupError: The table does not exist and ``create_table`` is off.
        """
        with psycopg.Connection.connect(self.url, **self._connect_args()) as conn:
            name = table_identifier(self.table).as_string(conn)
            row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()
        if not self.create_table and not (row and row[0]):
            raise LookupError(
                f"table {self.table!r} does not exist; create it with create_schema() or set "
                "create_table"
            )
        return True

    def _connect(self) -> Connection[TupleRow]:
        conn = psycopg.Connection.connect(self.url, **self._connect_args())
        if self.create_table:
            try:
                create_schema(conn, self.table)
            except BaseException:
                conn.close()
                raise
        return conn

    def _write(
        self, conn: Connection[TupleRow], envelopes: Sequence[WaitEnvelope]
    ) -> list[DeliveryOutcome]:
        rows = [row_values(e) for e in envelopes]
        try:
            with conn.transaction(), conn.cursor() as cursor:
                cursor.executemany(self._insert, rows, returning=True)
                # One result set per row: its (pk, sk) when inserted, empty when it existed.
                new: set[tuple[str, str]] = set()
                while True:
                    new.update((row[0], row[1]) for row in cursor.fetchall())
                    if not cursor.nextset():
                        break
                self._notify(cursor, [e for e in envelopes if row_key(e) in new])
            return [None] * len(envelopes)
        except _ROW_ERRORS as error:
            if conn.broken:
                raise
            if len(envelopes) == 1:
                return [_refused(error, envelopes[0])]
        # Some row was refused: redo them one by one, each in a savepoint, so it fails alone.
        outcomes: list[DeliveryOutcome] = []
        with conn.transaction(), conn.cursor() as cursor:
            for envelope, row in zip(envelopes, rows, strict=True):
                try:
                    with conn.transaction():
                        cursor.execute(self._insert, row)
                        if cursor.fetchone() is not None:
                            self._notify(cursor, [envelope])
                except _ROW_ERRORS as error:
                    if conn.broken:
                        raise
                    outcomes.append(_refused(error, envelope))
                else:
                    outcomes.append(None)
        return outcomes

    def _notify(self, cursor: psycopg.Cursor[TupleRow], new: Sequence[WaitEnvelope]) -> None:
        if self.channel is not None and new:
            cursor.execute(_NOTIFY, [self.channel, [notify_payload(e) for e in new]])

    def deliver_event(self, event: LifecycleEvent) -> None:
        """Bring the question's row up to date with a lifecycle event; never insert one.

        ``wait.answer_refused`` reopens it with the reason, ``wait.answered`` and
        ``wait.expired`` close it if it is still open.
        """
        if event.type in FOLLOW_UP_TYPES:
            return  # the question is still open; the sweeper recorded the follow-up itself
        if event.type == "wait.answer_refused":
            self._store.reopen_refused(event)
        else:
            self._store.close_as_event(event)

    def audit_log(self) -> PostgresAuditLog:
        """The audit log beside the table: ``<table>_audit`` (what was asked and delivered)."""
        return audit_beside(self.url, self.table)

    def close(self) -> None:
        """Close the sync connections (a later delivery reconnects)."""
        self._clients.close()
        self._store.close()

    # -- async -------------------------------------------------------------------------------

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Async :meth:`deliver_many`."""
        if not envelopes:
            return []
        slot = await self._clients.async_client()
        assert slot is not None  # built here, never None
        async with slot.lock:
            try:
                conn = slot.conn
                if conn is None or conn.closed or conn.broken:
                    conn = slot.conn = await self._aconnect()
                return await self._awrite(conn, envelopes)
            except psycopg.Error as error:
                return [_unavailable(error)] * len(envelopes)

    async def _aconnect(self) -> AsyncConnection[TupleRow]:
        conn = await psycopg.AsyncConnection.connect(self.url, **self._connect_args())
        if self.create_table:
            try:
                await acreate_schema(conn, self.table)
            except BaseException:
                await conn.close()
                raise
        return conn

    async def _awrite(
        self, conn: AsyncConnection[TupleRow], envelopes: Sequence[WaitEnvelope]
    ) -> list[DeliveryOutcome]:
        rows = [row_values(e) for e in envelopes]
        try:
            async with conn.transaction(), conn.cursor() as cursor:
                await cursor.executemany(self._insert, rows, returning=True)
                new: set[tuple[str, str]] = set()
                while True:
                    new.update((row[0], row[1]) for row in await cursor.fetchall())
                    if not cursor.nextset():
                        break
                await self._anotify(cursor, [e for e in envelopes if row_key(e) in new])
            return [None] * len(envelopes)
        except _ROW_ERRORS as error:
            if conn.broken:
                raise
            if len(envelopes) == 1:
                return [_refused(error, envelopes[0])]
        outcomes: list[DeliveryOutcome] = []
        async with conn.transaction(), conn.cursor() as cursor:
            for envelope, row in zip(envelopes, rows, strict=True):
                try:
                    async with conn.transaction():
                        await cursor.execute(self._insert, row)
                        if await cursor.fetchone() is not None:
                            await self._anotify(cursor, [envelope])
                except _ROW_ERRORS as error:
                    if conn.broken:
                        raise
                    outcomes.append(_refused(error, envelope))
                else:
                    outcomes.append(None)
        return outcomes

    async def _anotify(
        self, cursor: psycopg.AsyncCursor[TupleRow], new: Sequence[WaitEnvelope]
    ) -> None:
        if self.channel is not None and new:
            await cursor.execute(_NOTIFY, [self.channel, [notify_payload(e) for e in new]])

    async def aclose(self) -> None:
        """Close the running loop's async connection, then the sync ones."""
        await self._clients.aclose()
        self._store.close()


class _SyncSlot:
    """The sync connection and the lock that serialises its use."""

    def __init__(self) -> None:
        self.conn: Connection[TupleRow] | None = None
        self.lock = threading.Lock()

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()


class _AsyncSlot:
    """The async connection of one event loop and the lock that serialises its use."""

    def __init__(self) -> None:
        self.conn: AsyncConnection[TupleRow] | None = None
        self.lock = asyncio.Lock()  # binds to the loop of its first use

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()


def _refused(error: psycopg.Error, envelope: WaitEnvelope) -> BatchEntryFailed:
    """The database refused one envelope's row: its SQLSTATE and primary message only.

    The full message's DETAIL and CONTEXT can quote the row (the question), and the report's
    error text is logged at WARNING; the original stays reachable as ``__cause__``.
    """
    primary = error.diag.message_primary or type(error).__name__
    refused = BatchEntryFailed(
        "PostgreSQL",
        error.sqlstate or type(error).__name__,
        f"{primary} (the row of question {envelope.question_id!r})",
        sender_fault=True,
    )
    refused.__cause__ = error
    return refused


def _unavailable(error: psycopg.Error) -> DeliveryFailed:
    """The database could not take the batch: unreachable, or the statement itself failed.

    Retryable: connection errors (SQLSTATE class 08 or no SQLSTATE: never connected),
    transaction rollbacks (40: serialization failure, deadlock), insufficient resources (53)
    and operator intervention (57: shutdown, query cancelled). Not: a missing table, no
    privilege, anything else.
    """
    state = error.sqlstate
    retryable = (state is None and isinstance(error, psycopg.OperationalError)) or (
        state is not None and state[:2] in {"08", "40", "53", "57"}
    )
    failed = DeliveryFailed(
        f"PostgreSQL: {type(error).__name__}: {error.diag.message_primary or error}",
        retryable=retryable,
        code=state or type(error).__name__,
        attempts=1,
    )
    failed.__cause__ = error
    return failed
