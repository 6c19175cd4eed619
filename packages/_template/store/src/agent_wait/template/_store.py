"""TemplateQuestionStore: the questions ``TemplateAnnounce`` stored, and how each was closed.

Tools that serve or answer questions (``agent-wait inbox serve --store template``,
``agent_wait.host.answer``) build it with the announcer's options, through
``agent_wait.core.question_store("template", database=...)``. What each method must do stays as
written when you replace the database: the store kit checks it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from agent_wait.core import (
    QuestionStatus,
    StoredQuestion,
    Transition,
    closing_status,
    format_utc,
)
from agent_wait.template._database import table
from agent_wait.template._options import TemplateOptions


def _utc_text(now: datetime | str | None) -> str:
    """``now`` as the RFC 3339 UTC text envelopes carry (``expires_at``), which sorts as time."""
    if isinstance(now, str):
        try:
            now = datetime.fromisoformat(now)
        except ValueError:
            raise ValueError(
                f"now: expected RFC 3339 text such as '2026-09-12T09:00:00Z', got {now!r}"
            ) from None
    return format_utc(now or datetime.now(UTC))


class TemplateQuestionStore:
    """The questions of the database named ``database``: a ``QuestionStore``.

    Closing is a compare-and-set on ``open``: of two approvers racing on one question, one wins
    and the other is told who won, when, and with what.

    Args:
        database: The database's name, as the ``template`` announcer was configured.

    Raises:
        ConfigError: ``database`` is not a non-empty string.
    """

    def __init__(self, database: str) -> None:
        options = TemplateOptions.parse("template", {"database": database})
        self._table = table(options.database)

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        """The stored questions with this id (in this thread, if given)."""
        with self._table.lock:
            return [
                question
                for (thread, asked), question in self._table.rows.items()
                if asked == question_id and thread_id in (None, thread)
            ]

    def open_questions(self) -> list[StoredQuestion]:
        """Every open question, earliest deadline first (those without one last)."""
        with self._table.lock:
            found = [q for q in self._table.rows.values() if q.is_open]
        return sorted(found, key=lambda q: (q.envelope.expires_at is None, q.envelope.expires_at))

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        """Open questions whose ``expires_at`` is before ``now`` (default: the current time)."""
        moment = _utc_text(now)
        return [
            q
            for q in self.open_questions()
            if q.envelope.expires_at is not None and q.envelope.expires_at < moment
        ]

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
        """Close an open question: who, when, with what (and how ``by`` was established).

        Raises:
            ValueError: ``status`` is not a closed state, or ``by`` is empty.
            LookupError: No such question.
        """
        status = closing_status(status, by)
        closed_at = format_utc(at or datetime.now(UTC))
        with self._table.lock:
            current = self._table.rows.get((thread_id, question_id))
            if current is None:
                raise LookupError(f"no question {question_id!r} in thread {thread_id!r}")
            if not current.is_open:
                return Transition(won=False, question=current)
            closed = replace(
                current,
                status=status.value,
                answered_at=closed_at,
                answered_by=by,
                answer=answer,
                identity_source=identity_source,
            )
            self._table.rows[thread_id, question_id] = closed
        return Transition(won=True, question=closed)

    def reopen(self, closed: StoredQuestion) -> bool:
        """Open the question again if it is still exactly as ``closed`` left it."""
        key = (closed.envelope.thread_id, closed.envelope.question_id)
        with self._table.lock:
            if closed.is_open or self._table.rows.get(key) != closed:
                return False
            self._table.rows[key] = StoredQuestion(
                envelope=closed.envelope, status=QuestionStatus.OPEN.value
            )
        return True

    def close(self) -> None:
        """Nothing to release (with your database: its connections)."""
