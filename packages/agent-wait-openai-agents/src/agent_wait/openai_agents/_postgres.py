"""A :class:`~agent_wait.openai_agents.RunStore` in PostgreSQL, for workers on several machines.

Needs the ``postgres`` extra (``pip install "agent-wait-openai-agents[postgres]"``, psycopg 3).
"""

from __future__ import annotations

import re
import threading

try:
    import psycopg
    from psycopg import Connection, sql
    from psycopg.rows import TupleRow
except ImportError as error:  # pragma: no cover - depends on what is installed
    raise ImportError(
        'PostgresRuns needs psycopg: pip install "agent-wait-openai-agents[postgres]"'
    ) from error

from agent_wait.core import Closing
from agent_wait.openai_agents._history import ThreadRecord, check_thread_id

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class PostgresRuns(Closing):
    """Records in a PostgreSQL table (created if missing): one row per thread, its record as text.

    One autocommit connection per store, shared by threads under a lock and opened on first use;
    a save is one ``INSERT ... ON CONFLICT DO UPDATE``, durable when it returns. A lost
    connection is opened again by the next call.

    Args:
        url: A libpq connection string or URI (``postgresql://user@host:5432/db``).
        table: ``name`` or ``schema.name`` (plain SQL identifiers).
        timeout: Connect timeout in seconds (at least 1).
    """

    def __init__(
        self, url: str, *, table: str = "agent_wait_openai_agents_runs", timeout: float = 10.0
    ) -> None:
        if not isinstance(url, str) or not url.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"url: expected a PostgreSQL connection string, got {url!r}")
        parts = table.split(".") if isinstance(table, str) else []  # pyright: ignore[reportUnnecessaryIsInstance]
        if not 1 <= len(parts) <= 2 or not all(_NAME.match(p) for p in parts):
            raise ValueError(
                "table: expected a plain SQL identifier or schema.name such as "
                f"'agent_wait_openai_agents_runs', got {table!r}"
            )
        if isinstance(timeout, bool) or not timeout >= 1:
            raise ValueError(f"timeout: expected at least 1 second, got {timeout!r}")
        self.url = url
        self.table = table
        self._ident = sql.Identifier(*parts)
        self._timeout = int(timeout)
        self._conn: Connection[TupleRow] | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Connection[TupleRow]:
        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=self._timeout)
            try:
                with conn.transaction():
                    # Two workers opening at once would both try to create the table.
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtext(%s))", [self._ident.as_string(conn)]
                    )
                    conn.execute(
                        sql.SQL(
                            "CREATE TABLE IF NOT EXISTS {} (thread_id text PRIMARY KEY, "
                            "record text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())"
                        ).format(self._ident)
                    )
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def load(self, thread_id: str) -> ThreadRecord | None:
        """The stored record of ``thread_id``; None for a new thread."""
        check_thread_id(thread_id)
        query = sql.SQL("SELECT record FROM {} WHERE thread_id = %s").format(self._ident)
        with self._lock:
            row = self._connection().execute(query, [thread_id]).fetchone()
        return None if row is None else ThreadRecord.loads(row[0])

    def save(self, thread_id: str, record: ThreadRecord) -> None:
        """Replace the stored record of ``thread_id`` (one atomic write)."""
        check_thread_id(thread_id)
        text = record.dumps()
        query = sql.SQL(
            "INSERT INTO {} (thread_id, record) VALUES (%s, %s) ON CONFLICT (thread_id) "
            "DO UPDATE SET record = excluded.record, updated_at = now()"
        ).format(self._ident)
        with self._lock:
            self._connection().execute(query, [thread_id, text])

    def close(self) -> None:
        """Close the connection. Safe to call more than once; the next use reopens it."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"<PostgresRuns table={self.table!r}>"
