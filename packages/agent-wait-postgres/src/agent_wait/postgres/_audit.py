"""The audit trail in PostgreSQL: one hash-chained record per question, beside its row."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import psycopg
from psycopg import Connection, sql
from psycopg.rows import TupleRow

from agent_wait.core import AuditEntry, canonical_json, chained, format_utc
from agent_wait.postgres._schema import check_timeout, moment, table_identifier

DEFAULT_AUDIT_TABLE = "agent_wait_audit"
_FIELDS: sql.SQL = sql.SQL("thread_id, question_id, seq, at, kind, data, prev, hash")


class PostgresAuditLog:
    """An :class:`~agent_wait.core.AuditLog` on a PostgreSQL table (created if missing).

    Appending is ``INSERT ... ON CONFLICT DO NOTHING`` on the primary key ``(thread_id,
    question_id, seq)`` after reading the question's last entry: of two writers taking the same
    place one inserts, the other reads again and appends after it. ``data`` is kept as the
    canonical JSON text the hash covers, so it reads back exactly as hashed.

    Args:
        url: A libpq connection string or URI.
        table: ``name`` or ``schema.name``.
        timeout: Connect timeout in seconds.
    """

    def __init__(self, url: str, table: str = DEFAULT_AUDIT_TABLE, timeout: float = 10.0) -> None:
        self._ident = table_identifier(table)
        check_timeout(timeout)
        self._url = url
        self._timeout = timeout
        self._conn: Connection[TupleRow] | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Connection[TupleRow]:
        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=int(self._timeout))
            try:
                with conn.transaction():
                    # Two processes creating the table at once: one lock per table name.
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))",
                        [self._ident.as_string(conn)],
                    )
                    conn.execute(
                        sql.SQL(
                            "CREATE TABLE IF NOT EXISTS {} (thread_id text NOT NULL, question_id "
                            "text NOT NULL, seq integer NOT NULL, at timestamptz NOT NULL, kind "
                            "text NOT NULL, data text NOT NULL, prev text NOT NULL, hash text NOT "
                            "NULL, PRIMARY KEY (thread_id, question_id, seq))"
                        ).format(self._ident)
                    )
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def append(
        self,
        thread_id: str,
        question_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        at: datetime | str | None = None,
    ) -> AuditEntry:
        """See :meth:`agent_wait.core.AuditLog.append`."""
        last = sql.SQL(
            "SELECT seq, hash FROM {} WHERE thread_id = %s AND question_id = %s "
            "ORDER BY seq DESC LIMIT 1"
        ).format(self._ident)
        insert = sql.SQL(
            "INSERT INTO {} ({}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (thread_id, question_id, seq) DO NOTHING"
        ).format(self._ident, _FIELDS)
        with self._lock:
            conn = self._connection()
            while True:
                row = conn.execute(last, [thread_id, question_id]).fetchone()
                seq, prev = (1, None) if row is None else (int(row[0]) + 1, str(row[1]))
                entry = chained(thread_id, question_id, seq, kind, data, prev, at)
                values = [
                    *(entry.thread_id, entry.question_id, entry.seq, moment(entry.at)),
                    *(entry.kind, canonical_json(entry.data), entry.prev, entry.hash),
                ]
                if conn.execute(insert, values).rowcount == 1:
                    return entry

    def entries(self, question_id: str, thread_id: str | None = None) -> list[AuditEntry]:
        """See :meth:`agent_wait.core.AuditLog.entries`."""
        where: sql.Composable = sql.SQL("question_id = %s")
        params = [question_id]
        if thread_id is not None:
            where, params = sql.SQL("thread_id = %s AND question_id = %s"), [thread_id, question_id]
        query = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY thread_id, seq").format(
            _FIELDS, self._ident, where
        )
        with self._lock:
            rows = self._connection().execute(query, params).fetchall()
        return [_entry(row) for row in rows]

    def since(self, since: datetime | str | None = None) -> list[AuditEntry]:
        """See :meth:`agent_wait.core.AuditLog.since`."""
        query = sql.SQL(
            "SELECT {} FROM {} WHERE at >= %s ORDER BY at, thread_id, question_id, seq"
        ).format(_FIELDS, self._ident)
        start = moment("1970-01-01T00:00:00Z" if since is None else since)
        with self._lock:
            rows = self._connection().execute(query, [start]).fetchall()
        return [_entry(row) for row in rows]

    def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __repr__(self) -> str:
        return f"<PostgresAuditLog table={self._ident.as_string()!r}>"


def _entry(row: TupleRow) -> AuditEntry:
    thread_id, question_id, seq, at, kind, data, prev, digest = row
    return AuditEntry(
        thread_id, question_id, int(seq), format_utc(at), kind, json.loads(data), prev, digest
    )


AUDIT_SUFFIX = "_audit"
_open: dict[tuple[str, str], PostgresAuditLog] = {}
_open_lock = threading.Lock()


def audit_beside(url: str, questions: str, timeout: float = 10.0) -> PostgresAuditLog:
    """The audit log beside the question table ``questions``: ``<table>_audit``, one per process."""
    table = f"{questions}{AUDIT_SUFFIX}"
    with _open_lock:
        found = _open.get((url, table))
        if found is None:
            found = _open[(url, table)] = PostgresAuditLog(url, table, timeout)
        return found
