"""Where :func:`handle_message` keeps each thread's Pydantic AI message history.

Pydantic AI has no checkpointer: the host stores ``message_history`` under the thread id. The
stores here keep it as ``ModelMessagesTypeAdapter`` JSON, the format Pydantic AI documents for
persisting histories, so what is loaded is exactly what a fresh process would see.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_wait.core import Closing
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@runtime_checkable
class HistoryStore(Protocol):
    """A thread's message history, by thread id.

    ``save`` must be durable when it returns: :func:`handle_message` saves the history after
    every run and before it publishes or returns, so that an answer redelivered after the
    acknowledgement finds the tool's return already stored and runs nothing.
    """

    def load(self, thread_id: str) -> list[ModelMessage]:
        """The stored history of ``thread_id``; an empty list for a new thread."""
        ...

    def save(self, thread_id: str, messages: Sequence[ModelMessage]) -> None:
        """Replace the stored history of ``thread_id`` with ``messages``."""
        ...


def _check_thread_id(thread_id: str) -> None:
    if not isinstance(thread_id, str) or not thread_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"thread_id: expected a non-empty string, got {thread_id!r}")


class InMemoryHistory:
    """Histories in a dict, serialised as they would be on disk; for tests and demos."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def load(self, thread_id: str) -> list[ModelMessage]:
        """The stored history of ``thread_id``; an empty list for a new thread."""
        _check_thread_id(thread_id)
        with self._lock:
            data = self._data.get(thread_id)
        return [] if data is None else ModelMessagesTypeAdapter.validate_json(data)

    def save(self, thread_id: str, messages: Sequence[ModelMessage]) -> None:
        """Replace the stored history of ``thread_id``."""
        _check_thread_id(thread_id)
        data = ModelMessagesTypeAdapter.dump_json(list(messages))
        with self._lock:
            self._data[thread_id] = data


class SqliteHistory(Closing):
    """Histories in a SQLite table: one row per thread, the history as JSON.

    One connection per store, shared by threads under a lock and opened on first use, in WAL
    mode so readers in other processes do not block the writer.

    Args:
        path: The database file (created, with its parent directories, if missing).
        table: The table name (a plain SQL identifier).
        timeout: Seconds to wait for another writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "agent_wait_history",
        timeout: float = 30.0,
    ) -> None:
        if not str(path).strip():
            raise ValueError(f"path: expected a file path, got {path!r}")
        if not _IDENTIFIER.match(table):
            raise ValueError(
                f"table: expected a plain SQL identifier such as 'agent_wait_history', got {table!r}"
            )
        if isinstance(timeout, bool) or not timeout > 0:
            raise ValueError(f"timeout: expected positive seconds, got {timeout!r}")
        self.path = Path(path).expanduser()
        self.table = table
        self._timeout = float(timeout)
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                f'CREATE TABLE IF NOT EXISTS "{self.table}" '
                "(thread_id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at TEXT NOT NULL)"
            )
            self._connection = connection
        return self._connection

    def load(self, thread_id: str) -> list[ModelMessage]:
        """The stored history of ``thread_id``; an empty list for a new thread."""
        _check_thread_id(thread_id)
        with self._lock:
            row = (
                self._connect()
                .execute(f'SELECT messages FROM "{self.table}" WHERE thread_id = ?', (thread_id,))
                .fetchone()
            )
        return [] if row is None else ModelMessagesTypeAdapter.validate_json(row[0])

    def save(self, thread_id: str, messages: Sequence[ModelMessage]) -> None:
        """Replace the stored history of ``thread_id`` (one atomic, committed statement)."""
        _check_thread_id(thread_id)
        data = ModelMessagesTypeAdapter.dump_json(list(messages)).decode("utf-8")
        with self._lock:
            self._connect().execute(
                f'INSERT INTO "{self.table}" (thread_id, messages, updated_at) '
                "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
                "ON CONFLICT(thread_id) DO UPDATE SET messages = excluded.messages, "
                "updated_at = excluded.updated_at",
                (thread_id, data),
            )

    def close(self) -> None:
        """Close the connection. Safe to call more than once; the next use reopens it."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __repr__(self) -> str:
        return f"<SqliteHistory {str(self.path)!r} table={self.table!r}>"
