"""The execution ledger in PostgreSQL: one row per attempt at an approved ``@wait`` body."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from psycopg import Connection, sql
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from agent_wait.core import Execution
from agent_wait.postgres._audit import PostgresAuditLog, audit_beside
from agent_wait.postgres._options import PostgresOptions
from agent_wait.postgres._schema import check_timeout, table_identifier

LEDGER_SUFFIX = "_executions"


class PostgresLedger:
    """An :class:`~agent_wait.core.ExecutionLedger` on a PostgreSQL table (created if missing).

    Every worker of a pool on several machines reaches it, unlike the sqlite ledger. A claim is
    one ``INSERT ... ON CONFLICT DO NOTHING`` on the primary key ``(key, attempt)``: of racing
    workers exactly one inserts; done is one ``UPDATE`` conditioned on the claim's token.

    Args:
        url: A libpq connection string or URI.
        table: ``name`` or ``schema.name``.
        timeout: Connect timeout in seconds.
    """

    def __init__(
        self, url: str, table: str = "agent_wait_executions", timeout: float = 10.0
    ) -> None:
        self._ident = table_identifier(table)
        self._table = table
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
                    # CREATE TABLE IF NOT EXISTS is not safe against itself: two workers opening
                    # at once can both try to create it. One lock per table name serialises them.
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))",
                        [self._ident.as_string(conn)],
                    )
                    conn.execute(
                        sql.SQL(
                            "CREATE TABLE IF NOT EXISTS {} (key text NOT NULL, attempt integer "
                            "NOT NULL, token text NOT NULL, done boolean NOT NULL DEFAULT false, "
                            "result jsonb, PRIMARY KEY (key, attempt))"
                        ).format(self._ident)
                    )
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _get(self, conn: Connection[TupleRow], key: str, attempt: int) -> Execution | None:
        row = conn.execute(
            sql.SQL("SELECT token, done, result FROM {} WHERE key = %s AND attempt = %s").format(
                self._ident
            ),
            [key, attempt],
        ).fetchone()
        if row is None:
            return None
        token, done, result = row
        return Execution(key, attempt, token, bool(done), result)

    def claim(self, key: str, attempt: int, token: str) -> Execution | None:
        """See :meth:`agent_wait.core.ExecutionLedger.claim`."""
        with self._lock:
            conn = self._connection()
            inserted = conn.execute(
                sql.SQL(
                    "INSERT INTO {} (key, attempt, token) VALUES (%s, %s, %s) "
                    "ON CONFLICT (key, attempt) DO NOTHING"
                ).format(self._ident),
                [key, attempt, token],
            ).rowcount
            return None if inserted == 1 else self._get(conn, key, attempt)

    def finish(self, key: str, attempt: int, token: str, result: Any) -> Execution:
        """See :meth:`agent_wait.core.ExecutionLedger.finish`."""
        with self._lock:
            conn = self._connection()
            conn.execute(
                sql.SQL(
                    "UPDATE {} SET done = true, result = %s WHERE key = %s AND attempt = %s "
                    "AND token = %s AND NOT done"
                ).format(self._ident),
                [Jsonb(result), key, attempt, token],
            )
            found = self._get(conn, key, attempt)
        if found is None:
            raise LookupError(f"execution {key!r} attempt {attempt}: nothing recorded")
        return found

    def release(self, key: str, attempt: int, token: str) -> None:
        """See :meth:`agent_wait.core.ExecutionLedger.release`."""
        with self._lock:
            self._connection().execute(
                sql.SQL(
                    "DELETE FROM {} WHERE key = %s AND attempt = %s AND token = %s AND NOT done"
                ).format(self._ident),
                [key, attempt, token],
            )

    def audit_log(self) -> PostgresAuditLog:
        """The audit log beside the questions: ``<table>_audit`` of the table this ledger serves."""
        questions = self._table.removesuffix(LEDGER_SUFFIX)
        return audit_beside(self._url, questions, self._timeout)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> PostgresLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ledger_from_options(**options: Any) -> PostgresLedger:
    """The ledger beside a ``postgres`` announcer's table: ``<table>_executions``, same database."""
    parsed = PostgresOptions.parse("postgres", options)
    table = f"{parsed.table}{LEDGER_SUFFIX}"
    return PostgresLedger(parsed.url, table, timeout=parsed.timeout)
