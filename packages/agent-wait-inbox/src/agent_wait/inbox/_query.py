"""Pages of questions: keyset pagination over the store, filtered by tag, function, thread, text.

Over the embedded sqlite store a page is one indexed query (``(status, expires_at)`` for open
questions, walked from the cursor): the cost does not grow with the page number. Any other
:class:`QuestionStore` is read through its protocol (``open_questions()``, and
``closed_questions()`` for the history) and filtered here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from agent_wait.core import (
    HistoryKey,
    QuestionHistory,
    QuestionStore,
    SqliteQuestionStore,
    StoredQuestion,
    WaitEnvelope,
    format_utc,
    history_key,
)

NO_EXPIRY = "9999-12-31T23:59:59Z"
HISTORY_BATCH = 200
MAX_SEARCH = 1000
"""Longest text search (``q``), in characters."""


def function_of(envelope: WaitEnvelope) -> str | None:
    """The function that asked: ``source.function``, else the question's ``function``."""
    if envelope.source is not None:
        return envelope.source.function
    question: Any = envelope.question
    if isinstance(question, dict):
        name = cast("dict[str, Any]", question).get("function")
        return name if isinstance(name, str) else None
    return None


GROUP_TAG = "approver_group"
"""The tag naming the approvers a question is for (the ``group`` filter)."""
STATES = ("overdue", "answered", "expired", "cancelled")
"""The ``state`` filter: overdue for the open list; the others for the history."""


def check_state(state: str) -> str:
    """``state`` if it is one of :data:`STATES`; else a ValueError naming it."""
    if state not in STATES:
        raise ValueError(f"state: expected one of {', '.join(STATES)}, got {state[:40]!r}")
    return state


@dataclass(frozen=True, slots=True)
class Filters:
    """What a list shows: the questions with a tag, function, thread, group, state or text."""

    tag: tuple[str, str] | None = None
    function: str | None = None
    thread: str | None = None
    search: str | None = None
    group: str | None = None
    state: str | None = None

    @classmethod
    def parse(cls, params: Any) -> Filters:
        """From query parameters: ``tag=key:value``, ``function``, ``thread``, ``q``."""
        tag_text = (params.get("tag") or "").strip()
        tag: tuple[str, str] | None = None
        if tag_text:
            key, sep, value = tag_text.partition(":")
            if not sep or not key:
                raise ValueError(
                    f"tag: expected key:value such as team:finance, got {tag_text[:40]!r}"
                )
            # The key becomes a JSON path, which SQLite reads up to a NUL.
            if "\0" in key:
                raise ValueError(f"tag: a key cannot hold a NUL character, got {key[:40]!r}")
            tag = (key, value)
        search = (params.get("q") or "").strip() or None
        # SQLite refuses a LIKE pattern over 50,000 bytes; no one types a search this long.
        if search is not None and len(search) > MAX_SEARCH:
            raise ValueError(f"q: at most {MAX_SEARCH} characters, got {len(search)}")
        state = (params.get("state") or "").strip() or None
        if state is not None:
            check_state(state)
        return cls(
            tag=tag,
            function=(params.get("function") or "").strip() or None,
            thread=(params.get("thread") or "").strip() or None,
            search=search,
            group=(params.get("group") or "").strip() or None,
            state=state,
        )

    def matches(self, envelope: WaitEnvelope) -> bool:
        """True if the envelope passes every filter (for stores without SQL)."""
        if self.tag is not None and envelope.tags.get(self.tag[0]) != self.tag[1]:
            return False
        if self.function is not None and function_of(envelope) != self.function:
            return False
        if self.thread is not None and envelope.thread_id != self.thread:
            return False
        if self.group is not None and envelope.tags.get(GROUP_TAG) != self.group:
            return False
        return self.search is None or self.search.lower() in envelope.to_json().decode().lower()

    def keeps(self, question: StoredQuestion, now: str) -> bool:
        """True if the question is in the ``state`` filtered on (for stores without SQL)."""
        if self.state is None:
            return True
        if self.state == "overdue":
            expires = question.envelope.expires_at
            return question.is_open and expires is not None and expires < now
        return question.status == self.state

    def query(self) -> dict[str, str]:
        """Back to query parameters (for links to the next page)."""
        out: dict[str, str] = {}
        if self.tag is not None:
            out["tag"] = f"{self.tag[0]}:{self.tag[1]}"
        if self.function:
            out["function"] = self.function
        if self.thread:
            out["thread"] = self.thread
        if self.search:
            out["q"] = self.search
        if self.group:
            out["group"] = self.group
        if self.state:
            out["state"] = self.state
        return out


@dataclass(frozen=True, slots=True)
class Page:
    """One page of questions and the cursor of the next one (None on the last page)."""

    questions: list[StoredQuestion]
    next_cursor: str | None


def encode_cursor(values: list[Any]) -> str:
    """An opaque cursor for the position after a row."""
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None, kinds: tuple[type, ...]) -> list[Any] | None:
    """The position a cursor names; ValueError naming the cursor if it is not one of ours."""
    if not cursor:
        return None
    try:
        values: Any = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        values = None
    if not isinstance(values, list):
        raise ValueError(f"cursor: not a page cursor of this list: {cursor[:40]!r}")
    items = cast("list[Any]", values)
    if len(items) != len(kinds) or not all(
        isinstance(v, k) for v, k in zip(items, kinds, strict=True)
    ):
        raise ValueError(f"cursor: not a page cursor of this list: {cursor[:40]!r}")
    return items


def _stored(row: tuple[Any, ...]) -> StoredQuestion:
    # (envelope, status, answered_at, answered_by, answer, <the cursor's two>, refusal, votes,
    # identity_source)
    envelope, status, answered_at, answered_by, answer = row[:5]
    refusal, votes, identity_source = row[7:10]
    return StoredQuestion(
        WaitEnvelope.model_validate_json(envelope),
        status,
        answered_at,
        answered_by,
        None if answer is None else json.loads(answer),
        refusal=None if refusal is None else json.loads(refusal),
        votes=() if votes is None else tuple(json.loads(votes)),
        identity_source=identity_source,
    )


class Listing:
    """Read-only queries of the inbox web app over a question store."""

    def __init__(self, store: QuestionStore) -> None:
        self.store = store
        self._sqlite = store if isinstance(store, SqliteQuestionStore) else None
        # change_marker's own read-only connection: its ``PRAGMA data_version`` moves only when
        # another connection commits, so an unchanged file is known without counting rows.
        self._watch: sqlite3.Connection | None = None
        self._watch_lock = threading.Lock()
        self._watched: tuple[int, str] | None = None

    def _connect(self, *, check_same_thread: bool = True) -> sqlite3.Connection:
        assert self._sqlite is not None
        # Read-only: the web app never writes the table except through core's answer API.
        uri = f"{self._sqlite.path.resolve().as_uri()}?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=check_same_thread)

    @property
    def has_history(self) -> bool:
        """True if closed questions can be listed (a ``QuestionHistory`` store)."""
        return isinstance(self.store, QuestionHistory)

    def _where(self, filters: Filters) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if filters.tag is not None:
            clauses.append("json_extract(tags, ?) = ?")
            params += [f'$."{filters.tag[0].replace(chr(34), "")}"', filters.tag[1]]
        if filters.function is not None:
            clauses.append(
                "coalesce(json_extract(source, '$.function'), "
                "json_extract(question, '$.function')) = ?"
            )
            params.append(filters.function)
        if filters.thread is not None:
            clauses.append("pk = ?")
            params.append(f"THREAD#{filters.thread}")
        if filters.group is not None:
            clauses.append(f"json_extract(tags, '$.{GROUP_TAG}') = ?")
            params.append(filters.group)
        if filters.state == "overdue":
            clauses.append("expires_at < ?")
            params.append(format_utc(datetime.now(UTC)))
        elif filters.state is not None:
            clauses.append("status = ?")
            params.append(filters.state)
        if filters.search is not None:
            escaped = filters.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            clauses.append("envelope LIKE ? ESCAPE '\\'")
            params.append(f"%{escaped}%")
        return clauses, params

    def open_page(self, filters: Filters, cursor: str | None, limit: int) -> Page:
        """Open questions, earliest deadline first (none last), from ``cursor``."""
        position = decode_cursor(cursor, (str, int))
        if self._sqlite is None:
            return self._memory_page(filters, position, limit)
        clauses, params = self._where(filters)
        clauses.insert(0, "status = 'open'")
        if position is not None:
            # A row value, not "a > ? OR (a = ? AND b > ?)": SQLite seeks the index to it.
            clauses.append("(expires_at, rowid) > (?, ?)")
            params += [position[0], position[1]]
        query = (
            "SELECT envelope, status, answered_at, answered_by, answer, expires_at, rowid, "
            "refusal, votes, identity_source "
            f'FROM "{self._sqlite.table}" WHERE {" AND ".join(clauses)} '
            "ORDER BY expires_at, rowid LIMIT ?"
        )
        rows = self._rows(query, [*params, limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        after = encode_cursor([rows[-1][5], rows[-1][6]]) if more and rows else None
        return Page([_stored(r) for r in rows], after)

    def _memory_page(self, filters: Filters, position: list[Any] | None, limit: int) -> Page:
        key: Callable[[StoredQuestion], tuple[str, str, str]] = lambda q: (  # noqa: E731
            q.envelope.expires_at or NO_EXPIRY,
            q.envelope.thread_id,
            q.envelope.question_id,
        )
        now = format_utc(datetime.now(UTC))
        found = sorted(
            (
                q
                for q in self.store.open_questions()
                if filters.matches(q.envelope) and filters.keeps(q, now)
            ),
            key=key,
        )
        if position is not None:
            found = found[position[1] :]
        start = position[1] if position is not None else 0
        more = len(found) > limit
        return Page(found[:limit], encode_cursor(["", start + limit]) if more else None)

    def history_page(self, filters: Filters, cursor: str | None, limit: int) -> Page:
        """Closed questions, most recently closed first (stores with a history)."""
        if self._sqlite is None:
            return self._history_through(filters, cursor, limit)
        position = decode_cursor(cursor, (str, int))
        clauses, params = self._where(filters)
        clauses.insert(0, "status != 'open'")
        if position is not None:
            clauses.append("(answered_at < ? OR (answered_at = ? AND rowid < ?))")
            params += [position[0], position[0], position[1]]
        query = (
            "SELECT envelope, status, answered_at, answered_by, answer, "
            "coalesce(answered_at, ''), rowid, refusal, votes, identity_source "
            f'FROM "{self._sqlite.table}" WHERE {" AND ".join(clauses)} '
            "ORDER BY answered_at DESC, rowid DESC LIMIT ?"
        )
        rows = self._rows(query, [*params, limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        after = encode_cursor([rows[-1][5], rows[-1][6]]) if more and rows else None
        return Page([_stored(r) for r in rows], after)

    def _history_through(self, filters: Filters, cursor: str | None, limit: int) -> Page:
        """A history page read through the store's ``closed_questions``, filtered here."""
        if not isinstance(self.store, QuestionHistory):
            return Page([], None)
        position = decode_cursor(cursor, (str, str, str))
        after: HistoryKey | None = (position[0], position[1], position[2]) if position else None
        found: list[StoredQuestion] = []
        # Filters drop rows after the store's LIMIT: read on until the page (and one more row,
        # to know there is a next page) is full or the history ends.
        while len(found) <= limit:
            batch = self.store.closed_questions(max(limit + 1, 50), after)
            now = format_utc(datetime.now(UTC))
            found += [q for q in batch if filters.matches(q.envelope) and filters.keeps(q, now)]
            if len(batch) < max(limit + 1, 50):
                break
            after = history_key(batch[-1])
        page = found[:limit]
        more = len(found) > limit
        return Page(page, encode_cursor(list(history_key(page[-1]))) if more and page else None)

    def thread(self, thread_id: str) -> list[StoredQuestion]:
        """Every question of a thread, in the order they were asked.

        Over other stores than sqlite: the closed ones in the order they were closed, then the
        open ones.
        """
        if self._sqlite is None:
            return [*self._closed_of(thread_id), *self._open_of(thread_id)]
        return [
            _stored(r)
            for r in self._rows(
                "SELECT envelope, status, answered_at, answered_by, answer, NULL, NULL, refusal, "
                f'votes, identity_source FROM "{self._sqlite.table}" WHERE pk = ? ORDER BY rowid',
                [f"THREAD#{thread_id}"],
            )
        ]

    def _open_of(self, thread_id: str) -> list[StoredQuestion]:
        return [q for q in self.store.open_questions() if q.envelope.thread_id == thread_id]

    def _closed_of(self, thread_id: str) -> list[StoredQuestion]:
        """A thread's closed questions, oldest close first, from the store's whole history."""
        if not isinstance(self.store, QuestionHistory):
            return []
        found: list[StoredQuestion] = []
        after: HistoryKey | None = None
        while True:
            batch = self.store.closed_questions(HISTORY_BATCH, after)
            found += [q for q in batch if q.envelope.thread_id == thread_id]
            if len(batch) < HISTORY_BATCH:
                return found[::-1]
            after = history_key(batch[-1])

    def _rows(self, query: str, params: list[Any]) -> list[tuple[Any, ...]]:
        if not self._sqlite or not self._sqlite.path.exists():
            return []
        connection = self._connect()
        try:
            return connection.execute(query, params).fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):  # nothing published yet
                return []
            raise
        finally:
            connection.close()

    def change_marker(self) -> str:
        """Changes whenever a question is added or closed (cheap enough to poll every second).

        A short digest, because pages carry it back in the live-update URL.
        """
        if self._sqlite is None:
            state = json.dumps(
                sorted(
                    (q.envelope.thread_id, q.envelope.question_id)
                    for q in self.store.open_questions()
                )
            )
            return _digest(state)
        with self._watch_lock:
            watch = self._watching()
            if watch is None:  # nothing published yet
                return _digest(json.dumps(None))
            version: int = watch.execute("PRAGMA data_version").fetchone()[0]
            if self._watched is None or self._watched[0] != version:
                self._watched = (version, _digest(json.dumps(_counts(watch, self._sqlite.table))))
            return self._watched[1]

    def _watching(self) -> sqlite3.Connection | None:
        """change_marker's connection, opened once the file exists (the caller holds the lock)."""
        if self._watch is None and self._sqlite is not None and self._sqlite.path.exists():
            self._watch = self._connect(check_same_thread=False)
            weakref.finalize(self, self._watch.close)
        return self._watch


def _counts(connection: sqlite3.Connection, table: str) -> tuple[Any, ...] | None:
    """The newest rowid and the number of open questions, or None before the table exists."""
    # Two scalar subqueries: max(rowid) alone is one B-tree seek, while an aggregate over the
    # table with a subquery beside it would scan every row.
    try:
        return connection.execute(
            f'SELECT (SELECT max(rowid) FROM "{table}"), '
            f"(SELECT count(*) FROM \"{table}\" WHERE status = 'open')"
        ).fetchone()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return None
        raise


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()[:32]
