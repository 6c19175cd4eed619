"""Where :func:`handle_message` keeps each thread's Pydantic AI message history.

Pydantic AI has no checkpointer: the host stores ``message_history`` under the thread id. The
stores here keep it as ``ModelMessagesTypeAdapter`` JSON, the format Pydantic AI documents for
persisting histories, so what is loaded is exactly what a fresh process would see. Both also
keep, beside each history, a small index written with it (:class:`IndexedHistoryStore`): what
the thread asked and what it waits on, read without validating the messages.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agent_wait.core import Closing
from agent_wait.host import SqliteThreadTable
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter


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


@runtime_checkable
class IndexedHistoryStore(HistoryStore, Protocol):
    """A :class:`HistoryStore` that also keeps a short index text beside each history.

    :func:`handle_message` writes, with every history it saves, an index of the question ids
    the thread asked and of what it waits on, and decides a duplicate, an unknown question or
    a republish from that index alone: the history is loaded only to run. The text is opaque
    to the store; it must be saved atomically with the messages, and a plain :meth:`save`
    must drop it (a history written by other code has no index, and is then read in full).
    """

    def save_indexed(self, thread_id: str, messages: Sequence[ModelMessage], index: str) -> None:
        """Replace the stored history of ``thread_id`` and its index, in one atomic write."""
        ...

    def load_index(self, thread_id: str) -> str | None:
        """The index saved with the history; None for a new thread or one saved without."""
        ...


def _check_thread_id(thread_id: str) -> None:
    if not isinstance(thread_id, str) or not thread_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"thread_id: expected a non-empty string, got {thread_id!r}")


class _Saving:
    """``save`` and ``save_indexed`` of the built-in stores: one write of both, or no index."""

    def _put(self, thread_id: str, messages: Sequence[ModelMessage], index: str | None) -> None:
        raise NotImplementedError

    def save(self, thread_id: str, messages: Sequence[ModelMessage]) -> None:
        """Replace the stored history of ``thread_id``, dropping its index (one atomic write)."""
        self._put(thread_id, messages, None)

    def save_indexed(self, thread_id: str, messages: Sequence[ModelMessage], index: str) -> None:
        """Replace the stored history of ``thread_id`` and its index (one atomic write)."""
        self._put(thread_id, messages, index)


class InMemoryHistory(_Saving):
    """Histories in a dict, serialised as they would be on disk; for tests and demos."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[bytes, str | None]] = {}
        self._lock = threading.Lock()

    def load(self, thread_id: str) -> list[ModelMessage]:
        """The stored history of ``thread_id``; an empty list for a new thread."""
        _check_thread_id(thread_id)
        with self._lock:
            stored = self._data.get(thread_id)
        return [] if stored is None else ModelMessagesTypeAdapter.validate_json(stored[0])

    def load_index(self, thread_id: str) -> str | None:
        """The index saved with the history of ``thread_id``, or None."""
        _check_thread_id(thread_id)
        with self._lock:
            stored = self._data.get(thread_id)
        return None if stored is None else stored[1]

    def _put(self, thread_id: str, messages: Sequence[ModelMessage], index: str | None) -> None:
        _check_thread_id(thread_id)
        data = ModelMessagesTypeAdapter.dump_json(list(messages))
        with self._lock:
            self._data[thread_id] = (data, index)


class SqliteHistory(_Saving, Closing):
    """Histories in a SQLite table: one row per thread, the history as JSON beside its index.

    The table is a :class:`~agent_wait.host.SqliteThreadTable` (one connection per store, in
    WAL mode so readers in other processes do not block the writer), which documents ``path``,
    ``table`` and ``timeout``. A table created by an earlier version gains the index columns on
    first use; its rows have no index until the thread is saved again, and are read in full
    until then.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "agent_wait_history",
        timeout: float = 30.0,
    ) -> None:
        self._rows = SqliteThreadTable(
            path,
            table=table,
            columns={
                "messages": "TEXT NOT NULL",
                "updated_at": "TEXT NOT NULL",
                "thread_index": "TEXT",
                "indexed_at": "TEXT",
            },
            timeout=timeout,
        )
        self.path = self._rows.path
        self.table = table

    def load(self, thread_id: str) -> list[ModelMessage]:
        """The stored history of ``thread_id``; an empty list for a new thread."""
        _check_thread_id(thread_id)
        rows = self._rows.execute(
            f'SELECT messages FROM "{self.table}" WHERE thread_id = ?', (thread_id,)
        )
        return ModelMessagesTypeAdapter.validate_json(rows[0][0]) if rows else []

    def load_index(self, thread_id: str) -> str | None:
        """The index saved with the history of ``thread_id``, or None."""
        _check_thread_id(thread_id)
        rows = self._rows.execute(
            # An earlier version's writer updates the row without the index: indexed_at then
            # no longer matches updated_at and the index is ignored.
            f'SELECT thread_index FROM "{self.table}" '
            "WHERE thread_id = ? AND indexed_at = updated_at",
            (thread_id,),
        )
        return rows[0][0] if rows else None

    def _put(self, thread_id: str, messages: Sequence[ModelMessage], index: str | None) -> None:
        _check_thread_id(thread_id)
        data = ModelMessagesTypeAdapter.dump_json(list(messages)).decode("utf-8")
        self._rows.execute(
            f'INSERT INTO "{self.table}" '
            "(thread_id, messages, updated_at, thread_index, indexed_at) "
            "VALUES (:thread_id, :messages, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), :index, "
            "CASE WHEN :index IS NULL THEN NULL ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END) "
            "ON CONFLICT(thread_id) DO UPDATE SET messages = excluded.messages, "
            "updated_at = excluded.updated_at, thread_index = excluded.thread_index, "
            "indexed_at = excluded.indexed_at",
            # Named: the index is used twice, and numbered placeholders bound from a
            # sequence are an error from Python 3.14.
            {"thread_id": thread_id, "messages": data, "index": index},
        )

    def close(self) -> None:
        """Close the connection. Safe to call more than once; the next use reopens it."""
        self._rows.close()

    def __repr__(self) -> str:
        return f"<SqliteHistory {str(self.path)!r} table={self.table!r}>"
