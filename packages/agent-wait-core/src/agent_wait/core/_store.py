"""The question store: every question published, and how it was closed.

A question is ``open`` until exactly one of ``answered``, ``expired`` or ``cancelled`` closes
it. Closing is a compare-and-set on ``status = 'open'``: of two approvers (or an approver and the
sweeper) racing on one question, one wins and the other is told who won, when, and with what.

A store that is also a :class:`SendingStore` closes an answered or expired question in two
steps: ``open -> sending`` (holding the exact answer message) before the message is sent, then
``sending -> answered | expired`` once the transport took it. A send whose outcome is unknown
(a timeout after the request may have reached the transport) leaves the question ``sending``:
nobody else can answer it, and only sending that same message again settles it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from agent_wait.core._canonical import answer_digest
from agent_wait.core._models import LifecycleEvent, WaitEnvelope


class QuestionStatus(StrEnum):
    """Where a question is in its lifecycle: ``open -> [sending ->] answered | expired | cancelled``."""

    OPEN = "open"
    """Published, nobody has answered it yet."""
    SENDING = "sending"
    """Answered (or expired by the sweeper), its answer message recorded and being sent; the
    transport has not confirmed it yet. Nobody else can answer it meanwhile."""
    ANSWERED = "answered"
    """Someone answered it; the answer was sent to the agent's entry point."""
    EXPIRED = "expired"
    """Its ``expires_at`` passed and the sweeper sent its ``default`` as the answer."""
    CANCELLED = "cancelled"
    """Closed without an answer being sent."""


CLOSED = frozenset({QuestionStatus.ANSWERED, QuestionStatus.EXPIRED, QuestionStatus.CANCELLED})


@dataclass(frozen=True, slots=True)
class StoredQuestion:
    """One stored question and how it was closed.

    Attributes:
        envelope: The envelope as first published.
        status: ``open``, ``answered``, ``expired`` or ``cancelled`` (any other text a consumer
            wrote with ``SqliteInbox.mark`` is kept as is).
        answered_at: When it was closed (RFC 3339 UTC), or None while open.
        answered_by: Who or what closed it (an approver's name, ``sweeper``), or None.
        answer: The answer sent (the ``default`` for an expired question), or None.
        message: While ``sending``: the exact answer message, to send again until the
            transport confirms it; else None.
        closes_as: While ``sending``: ``answered`` or ``expired``, what the question becomes
            once the message is confirmed; else None.
        refusal: On a question opened again because the host refused its answer: ``reason``,
            ``outcome``, the refused ``answer``, ``by`` and ``at``; None otherwise (cleared
            when it is closed again).
    """

    envelope: WaitEnvelope
    status: str
    answered_at: str | None = None
    answered_by: str | None = None
    answer: Any = None
    message: dict[str, Any] | None = None
    closes_as: str | None = None
    refusal: dict[str, Any] | None = None

    @property
    def is_open(self) -> bool:
        """True while nobody has closed the question."""
        return self.status == QuestionStatus.OPEN

    def describe_close(self) -> str:
        """``"answered by alice at 2026-09-12T09:00:00Z"``, for messages."""
        if self.is_open:
            return "open" if self.refusal is None else f"open ({self.describe_refusal()})"
        by = f" by {self.answered_by}" if self.answered_by else ""
        at = f" at {self.answered_at}" if self.answered_at else ""
        if self.status == QuestionStatus.SENDING:
            return (
                f"being sent ({self.closes_as or 'answered'}{by}{at}; the transport has not "
                "confirmed it yet: the sweeper or agent-wait resend sends it again)"
            )
        return f"{self.status}{by}{at}"

    def describe_refusal(self) -> str | None:
        """``"the agent refused this answer: <reason>"``, or None when it was not refused."""
        if self.refusal is None:
            return None
        return f"the agent refused this answer: {self.refusal.get('reason')}"


@dataclass(frozen=True, slots=True)
class Transition:
    """The result of trying to close a question.

    Attributes:
        won: True if this call closed it; False if it was already closed (by someone else).
        question: The question after the attempt: closed by this call when ``won``, else as
            whoever closed it first left it.
    """

    won: bool
    question: StoredQuestion


def parse_now(now: datetime | str | None) -> datetime:
    """An aware datetime from a datetime, RFC 3339 text, or None (the current time)."""
    if now is None:
        return datetime.now(UTC)
    if isinstance(now, str):
        try:
            now = datetime.fromisoformat(now.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"now: expected RFC 3339 text such as '2026-09-12T09:00:00Z', got {now!r}"
            ) from None
    if now.tzinfo is None:
        raise ValueError(
            f"now: datetime {now.isoformat()!r} has no timezone; pass an aware datetime"
        )
    return now


def closing_status(status: QuestionStatus | str, by: str) -> QuestionStatus:
    """Check the arguments of a ``QuestionStore.transition`` before it touches storage.

    Returns:
        ``status`` as a ``QuestionStatus``.

    Raises:
        ValueError: ``status`` is not a closed state, or ``by`` is empty.
    """
    status = QuestionStatus(status)
    if status not in CLOSED:
        raise ValueError(
            f"status: expected one of {sorted(s.value for s in CLOSED)}, got {status.value!r}"
        )
    if not isinstance(by, str) or not by.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"by: expected who closes the question, got {by!r}")
    return status


@runtime_checkable
class QuestionStore(Protocol):
    """Where questions live and are closed. The sqlite store is the embedded default."""

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        """The stored questions with this id (in this thread, if given)."""
        ...

    def open_questions(self) -> list[StoredQuestion]:
        """Every open question, earliest deadline first."""
        ...

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        """Open questions whose ``expires_at`` is before ``now`` (an index lookup)."""
        ...

    def transition(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any = None,
        at: datetime | None = None,
    ) -> Transition:
        """Close an open question (compare-and-set on ``open``).

        Raises:
            LookupError: No such question.
        """
        ...

    def reopen(self, closed: StoredQuestion) -> bool:
        """Undo a close that could not be carried out (the answer could not be sent).

        Only if the question is still exactly as ``closed`` left it; True if it was reopened.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...


SENDS = frozenset({QuestionStatus.ANSWERED, QuestionStatus.EXPIRED})
"""The closes that send an answer message, and so may pass through ``sending``."""


def sending_status(status: QuestionStatus | str, by: str, message: Any) -> QuestionStatus:
    """Check the arguments of a ``SendingStore.begin_send`` before it touches storage.

    Returns:
        ``status`` as a ``QuestionStatus``.

    Raises:
        ValueError: ``status`` is not ``answered`` or ``expired``, ``by`` is empty, or
            ``message`` is not an answer message (an object).
    """
    status = closing_status(status, by)
    if status not in SENDS:
        raise ValueError(
            f"status: expected one of {sorted(s.value for s in SENDS)}, got {status.value!r}"
        )
    if not isinstance(message, dict) or "question_id" not in message:
        raise ValueError(f"message: expected the answer message being sent, got {message!r}")
    return status


@runtime_checkable
class SendingStore(QuestionStore, Protocol):
    """A question store that holds an answer while it is being sent (``sending``).

    With one, an answer whose send has an unknown outcome (a timeout after the request may have
    reached the transport) keeps its question ``sending`` instead of reopening it, so no second
    answer can follow one the agent may already have. The sqlite, PostgreSQL and DynamoDB
    stores are all one; with a store that is not, a failed send reopens the question.
    """

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
    ) -> Transition:
        """Close an open question as ``sending`` (compare-and-set on ``open``).

        Records who, when and the answer as :meth:`~QuestionStore.transition` does, plus the
        exact ``message`` and ``status`` (``answered`` or ``expired``) as ``closes_as``.

        Raises:
            ValueError: ``status`` is not ``answered`` or ``expired``, or ``by`` is empty.
            LookupError: No such question.
        """
        ...

    def end_send(self, sending: StoredQuestion) -> bool:
        """The transport took the message: ``sending -> closes_as``, dropping the message.

        Only if the question is still exactly as ``sending`` left it; True if this call did it.
        """
        ...

    def sending_questions(self) -> list[StoredQuestion]:
        """Every question in ``sending``, earliest deadline first."""
        ...


REOPENABLE = frozenset({QuestionStatus.ANSWERED, QuestionStatus.SENDING})
"""The states a host's refusal of the recorded answer opens again."""


def refused_here(event: LifecycleEvent, status: str, answered_by: str | None, answer: Any) -> bool:
    """Whether a stored question still records the answer a ``wait.answer_refused`` names.

    Its status is ``answered`` (or ``sending``), its answer has the event's ``answer_digest``,
    and, when the event says who answered, the same person recorded it.
    """
    if status not in REOPENABLE or event.answer_digest is None:
        return False
    if event.by is not None and answered_by != event.by:
        return False
    return answer_digest(answer) == event.answer_digest


def refusal_note(event: LifecycleEvent, answer: Any) -> dict[str, Any]:
    """What a store keeps of a refusal on the reopened question (:attr:`StoredQuestion.refusal`)."""
    return {
        "reason": event.reason or event.outcome,
        "outcome": event.outcome,
        "answer": answer,
        "by": event.by,
        "at": event.at,
    }


@runtime_checkable
class RefusalStore(QuestionStore, Protocol):
    """A question store that opens a question again when the host refused its recorded answer.

    The sqlite, PostgreSQL and DynamoDB stores are all one.
    """

    def reopen_refused(self, event: LifecycleEvent) -> bool:
        """Open the event's question again with its reason, if it still records that answer.

        A compare-and-set on the refused answer's identity (:func:`refused_here`): of several
        deliveries of the refusal, or refusals racing, exactly one reopens it, and a corrected
        answer recorded since is left alone. True if this call reopened it.
        """
        ...


HistoryKey = tuple[str, str, str]
"""Where a history page ends: ``(answered_at, thread_id, question_id)`` of its last question."""


def history_key(question: StoredQuestion) -> HistoryKey:
    """The :data:`HistoryKey` of a closed question (pass it to the next ``closed_questions``)."""
    envelope = question.envelope
    return (question.answered_at or "", envelope.thread_id, envelope.question_id)


@runtime_checkable
class QuestionHistory(Protocol):
    """A question store that also lists closed questions, for history pages.

    The sqlite, PostgreSQL and DynamoDB stores are all one.
    """

    def closed_questions(self, limit: int, after: HistoryKey | None = None) -> list[StoredQuestion]:
        """Closed questions, most recently closed first (ties by thread and id, descending).

        Args:
            limit: At most this many.
            after: The :func:`history_key` of the last question of the previous page: the page
                starts just after it. None: the most recent.

        Raises:
            ValueError: ``limit`` is not a positive integer.
        """
        ...


def check_limit(limit: int) -> int:
    """``limit`` if it is a positive integer (for ``closed_questions``); else ValueError."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"limit: expected a positive integer, got {limit!r}")
    return limit
