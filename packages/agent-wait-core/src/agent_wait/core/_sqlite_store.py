"""The embedded question store: the rows the sqlite announcer writes, with their lifecycle."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_wait.core._closing import Closing
from agent_wait.core._models import LifecycleEvent, WaitEnvelope, format_utc
from agent_wait.core._sqlite import DEFAULT_TABLE, inbox_schema, reopen_refused
from agent_wait.core._sqlite_file import SqliteFile

if TYPE_CHECKING:
    from agent_wait.core._audit import SqliteAuditLog
from agent_wait.core._store import (
    HistoryKey,
    QuestionStatus,
    StoredQuestion,
    Transition,
    check_limit,
    check_vote,
    closing_status,
    follow_up_step,
    parse_now,
    sending_status,
)

_SELECT = (
    "SELECT envelope, status, answered_at, answered_by, answer, message, closes_as, refusal, "
    "votes, follow_ups, identity_source FROM"
)


class SqliteQuestionStore(Closing):
    """The questions of a sqlite inbox and their lifecycle (:class:`QuestionStore`).

    It reads and updates the table :class:`SqliteAnnounce` writes, in the same database file:
    publishing and answering share one file with no other setup. A file written before the
    lifecycle columns existed is migrated on open by adding them.

    Closing a question is one ``UPDATE ... WHERE status = 'open'``: with any number of threads
    and processes racing on one question, exactly one update changes the row. It is a
    :class:`SendingStore` (an answer being sent is held in the row, ``sending``), a
    :class:`VotingStore` (the votes on a question with a quorum are a JSON array in the row), a
    :class:`FollowUpStore` (the sweeper's follow-ups are recorded in the row, ``follow_ups``) and
    a :class:`FollowUpQuery` (it lists the questions to follow up without reading the others).

    Args:
        path: The database file; the same default as the sqlite announcer
            (``$AGENT_WAIT_HOME/inbox.sqlite3`` and so on).
        table: The table name.
        timeout: Seconds to wait for another writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_TABLE,
        timeout: float = 5.0,
    ) -> None:
        self._store = SqliteFile(path, table, timeout, inbox_schema, sync_each_commit=False)
        self._table = table

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def audit_log(self) -> SqliteAuditLog:
        """The audit log in the same file (what was asked, sent, answered and run)."""
        # Here, not at import: only a publish or an answer that records needs it.
        from agent_wait.core._audit import sqlite_audit_log

        return sqlite_audit_log(self.path)

    @property
    def table(self) -> str:
        """The table name (for read-only queries of tools such as the inbox web app)."""
        return self._table

    def _select(self, where: str, params: Sequence[Any]) -> list[StoredQuestion]:
        query = f'{_SELECT} "{self._table}" WHERE {where} ORDER BY expires_at, rowid'
        with self._store.connect() as connection:
            rows = connection.execute(query, tuple(params)).fetchall()
        return [_stored(row) for row in rows]

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        """The stored questions with this id (in this thread, if given)."""
        if thread_id is None:
            return self._select("question_id = ?", [question_id])
        return self._select("pk = ? AND sk = ?", [f"THREAD#{thread_id}", f"WAIT#{question_id}"])

    def open_questions(self) -> list[StoredQuestion]:
        """Every open question, earliest deadline first (none last)."""
        return self._select("status = ?", [QuestionStatus.OPEN.value])

    def open_questions_to_follow_up(self) -> list[StoredQuestion]:
        """Open questions whose envelope has a ``follow_up`` (:class:`FollowUpQuery`).

        The filter runs in SQLite: only those envelopes are parsed, however many are open.
        """
        return self._select(
            "status = ? AND json_extract(envelope, '$.follow_up') IS NOT NULL",
            [QuestionStatus.OPEN.value],
        )

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        """Open questions whose ``expires_at`` is before ``now``: a range on the status index.

        Args:
            now: An aware datetime or RFC 3339 text; default: the current time.
        """
        moment = format_utc(parse_now(now))
        return self._select("status = ? AND expires_at < ?", [QuestionStatus.OPEN.value, moment])

    def closed_questions(self, limit: int, after: HistoryKey | None = None) -> list[StoredQuestion]:
        """Closed questions, most recently closed first (:class:`QuestionHistory`)."""
        where = "status != ? AND answered_at IS NOT NULL"
        params: list[Any] = [QuestionStatus.OPEN.value]
        if after is not None:
            where += " AND (answered_at, pk, sk) < (?, ?, ?)"
            params += [after[0], f"THREAD#{after[1]}", f"WAIT#{after[2]}"]
        query = (
            f'{_SELECT} "{self._table}" WHERE {where} '
            "ORDER BY answered_at DESC, pk DESC, sk DESC LIMIT ?"
        )
        with self._store.connect() as connection:
            rows = connection.execute(query, (*params, check_limit(limit))).fetchall()
        return [_stored(row) for row in rows]

    def sending_questions(self) -> list[StoredQuestion]:
        """Every question in ``sending``, earliest deadline first (:class:`SendingStore`)."""
        return self._select("status = ?", [QuestionStatus.SENDING.value])

    def transition(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any = None,
        at: datetime | None = None,
        identity_source: str | None = None,
    ) -> Transition:
        """Close an open question, unless someone closed it first.

        Raises:
            ValueError: ``status`` is not a closed state, or ``by`` is empty.
            LookupError: No such question.
        """
        status = closing_status(status, by)
        return self._close(thread_id, question_id, status.value, (by, identity_source), answer, at)

    def begin_send(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any,
        message: dict[str, Any],
        at: datetime | None = None,
        identity_source: str | None = None,
    ) -> Transition:
        """Close an open question as ``sending``, holding ``message`` (:class:`SendingStore`).

        Raises:
            ValueError: ``status`` is not ``answered`` or ``expired``, or ``by`` is empty.
            LookupError: No such question.
        """
        status = sending_status(status, by, message)
        sending = (_text(message), status.value)
        who = (by, identity_source)
        return self._close(
            thread_id, question_id, QuestionStatus.SENDING.value, who, answer, at, sending
        )

    def _close(
        self,
        thread_id: str,
        question_id: str,
        status: str,
        who: tuple[str, str | None],
        answer: Any,
        at: datetime | None,
        sending: tuple[str, str] | tuple[None, None] = (None, None),
    ) -> Transition:
        stamp = format_utc(parse_now(at))
        key = (f"THREAD#{thread_id}", f"WAIT#{question_id}")
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._table}" SET status = ?, answered_at = ?, answered_by = ?, '
                "identity_source = ?, answer = ?, message = ?, closes_as = ?, refusal = NULL "
                "WHERE pk = ? AND sk = ? AND status = ?",
                (status, stamp, *who, _text(answer), *sending, *key, QuestionStatus.OPEN.value),
            )
            won = cursor.rowcount == 1
            row = connection.execute(
                f'{_SELECT} "{self._table}" WHERE pk = ? AND sk = ?', key
            ).fetchone()
        if row is None:
            raise LookupError(f"no question {question_id!r} in thread {thread_id!r} in {self.path}")
        return Transition(won, _stored(row))

    def record_vote(
        self, thread_id: str, question_id: str, vote: dict[str, Any], *, seen: int
    ) -> Transition:
        """Append a vote if the open question still has ``seen`` votes (:class:`VotingStore`).

        Raises:
            ValueError: ``vote`` is not ``{"by", "at", "answer"}``.
            LookupError: No such question.
        """
        key = (f"THREAD#{thread_id}", f"WAIT#{question_id}")
        with self._store.connect() as connection:
            cursor = connection.execute(
                f"UPDATE \"{self._table}\" SET votes = json_insert(COALESCE(votes, '[]'), "
                "'$[#]', json(?)) WHERE pk = ? AND sk = ? AND status = ? "
                "AND json_array_length(COALESCE(votes, '[]')) = ?",
                (_text(check_vote(vote)), *key, QuestionStatus.OPEN.value, seen),
            )
            won = cursor.rowcount == 1
            row = connection.execute(
                f'{_SELECT} "{self._table}" WHERE pk = ? AND sk = ?', key
            ).fetchone()
        if row is None:
            raise LookupError(f"no question {question_id!r} in thread {thread_id!r} in {self.path}")
        return Transition(won, _stored(row))

    def reopen(self, closed: StoredQuestion) -> bool:
        """Reopen a question only if it is still exactly as ``closed`` left it."""
        envelope = closed.envelope
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._table}" SET status = ?, answered_at = NULL, answered_by = NULL, '
                "identity_source = NULL, answer = NULL, message = NULL, closes_as = NULL "
                "WHERE pk = ? AND sk = ? AND status = ? AND answered_at IS ? "
                "AND answered_by IS ? AND answer IS ?",
                (
                    QuestionStatus.OPEN.value,
                    f"THREAD#{envelope.thread_id}",
                    f"WAIT#{envelope.question_id}",
                    closed.status,
                    closed.answered_at,
                    closed.answered_by,
                    _text(closed.answer),
                ),
            )
        return cursor.rowcount == 1

    def reopen_refused(self, event: LifecycleEvent) -> bool:
        """Open the question again after the host refused its recorded answer (``RefusalStore``)."""
        with self._store.connect() as connection:
            return reopen_refused(connection, self._table, event)

    def end_send(self, sending: StoredQuestion) -> bool:
        """``sending -> closes_as`` if the row is still as ``sending`` left it (:class:`SendingStore`)."""
        envelope = sending.envelope
        if sending.status != QuestionStatus.SENDING or sending.message is None:
            return False
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._table}" SET status = closes_as, message = NULL, closes_as = NULL '
                "WHERE pk = ? AND sk = ? AND status = ? AND answered_at IS ? "
                "AND answered_by IS ? AND message = ?",
                (
                    f"THREAD#{envelope.thread_id}",
                    f"WAIT#{envelope.question_id}",
                    QuestionStatus.SENDING.value,
                    sending.answered_at,
                    sending.answered_by,
                    _text(sending.message),
                ),
            )
        return cursor.rowcount == 1

    def claim_follow_up(
        self, thread_id: str, question_id: str, step: str, *, at: datetime | None = None
    ) -> bool:
        """Record a follow-up step on an open question, once (:class:`FollowUpStore`)."""
        path = f'$."{follow_up_step(step)}"'
        with self._store.connect() as connection:
            cursor = connection.execute(
                f'UPDATE "{self._table}" SET follow_ups = '
                "json_set(coalesce(follow_ups, '{}'), ?, ?) "
                "WHERE pk = ? AND sk = ? AND status = ? "
                "AND json_extract(coalesce(follow_ups, '{}'), ?) IS NULL",
                (
                    path,
                    format_utc(parse_now(at)),
                    f"THREAD#{thread_id}",
                    f"WAIT#{question_id}",
                    QuestionStatus.OPEN.value,
                    path,
                ),
            )
        return cursor.rowcount == 1

    def close(self) -> None:
        """Close the connection. Safe to call more than once."""
        self._store.close()

    def __repr__(self) -> str:
        return f"<SqliteQuestionStore path={str(self.path)!r} table={self._table!r}>"


def _text(value: Any) -> str:
    # One spelling, so a compare-and-set on the text matches what was written.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _stored(row: tuple[Any, ...]) -> StoredQuestion:
    (
        envelope,
        status,
        answered_at,
        answered_by,
        answer,
        message,
        closes_as,
        refusal,
        votes,
        follow_ups,
        identity_source,
    ) = row
    return StoredQuestion(
        envelope=WaitEnvelope.model_validate_json(envelope),
        status=status,
        answered_at=answered_at,
        answered_by=answered_by,
        answer=None if answer is None else json.loads(answer),
        message=None if message is None else json.loads(message),
        closes_as=closes_as,
        refusal=None if refusal is None else json.loads(refusal),
        votes=() if votes is None else tuple(json.loads(votes)),
        follow_ups={} if follow_ups is None else json.loads(follow_ups),
        identity_source=identity_source,
    )
