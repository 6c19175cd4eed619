"""Where :func:`handle_message` keeps each thread's OpenAI Agents SDK run.

The SDK has no checkpointer: a parked run is its ``RunState``, which ``to_string()`` serialises
and ``RunState.from_string(agent, text)`` restores in any process. The host keeps, per thread,
one record: that state while the run is parked, the questions it waits on and every question
the thread ever asked (so that a duplicate or unknown answer is decided without restoring the
state), and the conversation once a run finished (the next start message continues it).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Protocol, cast, runtime_checkable

from agent_wait.core import Closing, Question
from agent_wait.host import SqliteThreadTable


class ThreadRecord:
    """One thread's stored run.

    Attributes:
        state: The parked run's ``RunState.to_string()``; None when the thread is not parked.
        questions: The questions the parked run waits on, in the SDK's order.
        asked: Every question id the thread asked, answered or not.
        conversation: The finished run's ``to_input_list()``, which the next start continues.
        doubts: The pending in-doubt questions (a worker stopped inside an approved call) by
            id: ``{"call_id", "attempt"}``.
        replies: The in-doubt answers given, by call id, then attempt (as text).

    :meth:`dumps` writes what decides an answer (questions, asked, doubts, replies) on a first
    line and the run (state, conversation) on a second, and a loaded record reads the second
    only when ``state`` or ``conversation`` is asked for: a duplicate or unknown answer on a
    long thread costs no more than on a short one.
    """

    __slots__ = ("_body", "_run", "asked", "doubts", "questions", "replies")

    def __init__(
        self,
        state: str | None = None,
        questions: tuple[Question, ...] = (),
        asked: tuple[str, ...] = (),
        conversation: list[Any] | None = None,
        doubts: dict[str, dict[str, Any]] | None = None,
        replies: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.questions = tuple(questions)
        self.asked = tuple(asked)
        self.doubts: dict[str, dict[str, Any]] = dict(doubts or {})
        self.replies: dict[str, dict[str, Any]] = dict(replies or {})
        self._run: tuple[str | None, list[Any]] | None = (state, list(conversation or ()))
        # The stored text and where its run starts, until the run is read (no copy before).
        self._body: tuple[str, int] | None = None

    def _read(self) -> tuple[str | None, list[Any]]:
        if self._run is None:
            text, start = self._body or ("{}", 0)
            data = cast("dict[str, Any]", json.loads(text[start:]))
            self._run = (data.get("state"), list(data.get("conversation") or ()))
            self._body = None
        return self._run

    @property
    def state(self) -> str | None:
        """See the class docstring."""
        return self._read()[0]

    @property
    def conversation(self) -> list[Any]:
        """See the class docstring."""
        return self._read()[1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ThreadRecord):
            return NotImplemented
        return (
            self.questions == other.questions
            and self.asked == other.asked
            and self.doubts == other.doubts
            and self.replies == other.replies
            and self._read() == other._read()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable contents, as the dataclass had

    def __repr__(self) -> str:
        return (
            f"ThreadRecord(parked={self.state is not None}, questions="
            f"{[q.question_id for q in self.questions]}, asked={list(self.asked)})"
        )

    def dumps(self) -> str:
        """The record as text: the answer-deciding fields, a newline, the run (both JSON)."""
        head = json.dumps(
            {
                "questions": [q.model_dump(mode="json") for q in self.questions],
                "asked": list(self.asked),
                "doubts": self.doubts,
                "replies": self.replies,
            }
        )
        state, conversation = self._read()
        # json.dumps escapes every newline inside strings: the first one ends the head.
        return f"{head}\n{json.dumps({'state': state, 'conversation': conversation})}"

    @classmethod
    def loads(cls, text: str) -> ThreadRecord:
        """A record from :meth:`dumps`'s text; the run is read when first asked for."""
        end = text.find("\n")
        data = cast("dict[str, Any]", json.loads(text if end < 0 else text[:end]))
        record = cls(
            questions=tuple(Question.model_validate(q) for q in data.get("questions") or ()),
            asked=tuple(data.get("asked") or ()),
            doubts=data.get("doubts"),
            replies=data.get("replies"),
        )
        if end < 0:  # one JSON object, as records were first written
            record._run = (data.get("state"), list(data.get("conversation") or ()))
        else:
            record._run, record._body = None, (text, end + 1)
        return record


@runtime_checkable
class RunStore(Protocol):
    """A thread's stored run, by thread id.

    ``save`` must be durable when it returns: :func:`handle_message` saves after every run and
    before it publishes or returns, so an answer redelivered after the acknowledgement finds
    the run moved on and runs nothing.
    """

    def load(self, thread_id: str) -> ThreadRecord | None:
        """The stored record of ``thread_id``; None for a new thread."""
        ...

    def save(self, thread_id: str, record: ThreadRecord) -> None:
        """Replace the stored record of ``thread_id`` with ``record``."""
        ...


def check_thread_id(thread_id: str) -> None:
    if not isinstance(thread_id, str) or not thread_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"thread_id: expected a non-empty string, got {thread_id!r}")


class InMemoryRuns:
    """Records in a dict, serialised as they would be on disk; for tests and demos."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def load(self, thread_id: str) -> ThreadRecord | None:
        """The stored record of ``thread_id``; None for a new thread."""
        check_thread_id(thread_id)
        with self._lock:
            text = self._data.get(thread_id)
        return None if text is None else ThreadRecord.loads(text)

    def save(self, thread_id: str, record: ThreadRecord) -> None:
        """Replace the stored record of ``thread_id``."""
        check_thread_id(thread_id)
        text = record.dumps()
        with self._lock:
            self._data[thread_id] = text


class SqliteRuns(Closing):
    """Records in a SQLite table: one row per thread, its record as JSON.

    The table is a :class:`~agent_wait.host.SqliteThreadTable` (one connection per store, in
    WAL mode so readers in other processes do not block the writer), which documents ``path``,
    ``table`` and ``timeout``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "agent_wait_openai_agents_runs",
        timeout: float = 30.0,
    ) -> None:
        self._rows = SqliteThreadTable(
            path,
            table=table,
            columns={"record": "TEXT NOT NULL", "updated_at": "TEXT NOT NULL"},
            timeout=timeout,
        )
        self.path = self._rows.path
        self.table = table

    def load(self, thread_id: str) -> ThreadRecord | None:
        """The stored record of ``thread_id``; None for a new thread."""
        check_thread_id(thread_id)
        rows = self._rows.execute(
            f'SELECT record FROM "{self.table}" WHERE thread_id = ?', (thread_id,)
        )
        return ThreadRecord.loads(rows[0][0]) if rows else None

    def save(self, thread_id: str, record: ThreadRecord) -> None:
        """Replace the stored record of ``thread_id`` (one atomic write)."""
        check_thread_id(thread_id)
        self._rows.execute(
            f'INSERT INTO "{self.table}" (thread_id, record, updated_at) '
            "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
            "ON CONFLICT(thread_id) DO UPDATE SET record = excluded.record, "
            "updated_at = excluded.updated_at",
            (thread_id, record.dumps()),
        )

    def close(self) -> None:
        """Close the connection. Safe to call more than once; the next use reopens it."""
        self._rows.close()

    def __repr__(self) -> str:
        return f"<SqliteRuns {str(self.path)!r} table={self.table!r}>"
