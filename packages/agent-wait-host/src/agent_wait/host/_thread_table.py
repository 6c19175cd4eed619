"""A SQLite table of one row per thread: where a host keeps runs its framework does not keep.

Frameworks without a checkpointer leave the host to store each thread's run (Pydantic AI's
message history, the OpenAI Agents SDK's ``RunState``); their sqlite stores share this table,
each with its own columns and statements.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_wait.core import Closing
from agent_wait.core._sqlite_file import IDENTIFIER, SqliteFile


class SqliteThreadTable(Closing):
    """A SQLite table keyed by ``thread_id``, for a framework host's own run store.

    Created on first use as ``thread_id TEXT PRIMARY KEY`` followed by ``columns``; a table an
    earlier version created gains the ``columns`` it lacks, so a column added later must allow
    NULL (the rows already there have none). One connection per table, shared by threads under
    a lock and opened on first use, in WAL mode so readers in other processes do not block the
    writer. A database file it creates is readable by its owner only, as the embedded inbox is.

    Args:
        path: The database file (created, with its parent directories, if missing).
        table: The table name (a plain SQL identifier).
        columns: Each column after ``thread_id`` by name, with its SQL type and constraints
            (``{"record": "TEXT NOT NULL"}``).
        timeout: Seconds to wait for another writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str,
        columns: Mapping[str, str],
        timeout: float = 30.0,
    ) -> None:
        if path is None or not str(path).strip():  # pyright: ignore[reportUnnecessaryComparison]
            raise ValueError(f"path: expected a file path, got {path!r}")
        for field, name in [("table", table), *(("columns", c) for c in columns)]:
            if not isinstance(name, str) or not IDENTIFIER.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(
                    f"{field}: expected a plain SQL identifier (letters, digits and _, not "
                    f"starting with a digit, at most 63), got {name!r}"
                )
        if not columns or "thread_id" in columns:
            raise ValueError(
                f"columns: expected the columns after thread_id, got {dict(columns)!r}"
            )
        self._columns = dict(columns)
        self._file = SqliteFile(Path(path), table, timeout, self._schema)
        self.path = self._file.path
        self.table = table

    def _schema(self, connection: sqlite3.Connection, table: str, path: Path) -> None:
        declared = ", ".join(f"{name} {kind}" for name, kind in self._columns.items())
        connection.execute(
            f'CREATE TABLE IF NOT EXISTS "{table}" (thread_id TEXT PRIMARY KEY, {declared})'
        )
        present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
        for name, kind in self._columns.items():
            if name not in present:
                try:
                    connection.execute(f'ALTER TABLE "{table}" ADD COLUMN {name} {kind}')
                except sqlite3.OperationalError as error:
                    # Another process added it first.
                    if "duplicate column" not in str(error):
                        raise

    def execute(
        self, statement: str, parameters: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[Any]:
        """Run one SQL statement on the table's connection and return the rows it yields.

        The connection is in autocommit mode: the statement is a transaction of its own, so one
        ``INSERT ... ON CONFLICT(thread_id) DO UPDATE`` replaces a thread's row atomically and
        durably. Name the table as ``f'"{store.table}"'``.
        """
        with self._file.connect() as connection:
            return connection.execute(statement, parameters).fetchall()

    def close(self) -> None:
        """Close the connection. Safe to call more than once; the next use reopens it."""
        self._file.close()

    def __repr__(self) -> str:
        return f"<SqliteThreadTable {str(self.path)!r} table={self.table!r}>"
