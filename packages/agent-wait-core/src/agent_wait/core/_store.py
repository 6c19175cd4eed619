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

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, cast, runtime_checkable

from agent_wait.core._canonical import answer_digest
from agent_wait.core._models import (
    ESCALATED_STEP,
    LAST_WARNING_STEP,
    REMINDER_STEP,
    LifecycleEvent,
    WaitEnvelope,
)
from agent_wait.core._quorum import Tally, describe_votes, tally


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
            wrote into the row is kept as is).
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
        votes: On a question with a quorum: the votes recorded, ``{"by", "at", "answer"}`` in
            order (see :class:`VotingStore`); empty otherwise.
        follow_ups: The sweeper's follow-ups done, by step (``reminder:1``, ``escalated``,
            ``last_warning``), each with when (RFC 3339 UTC), and the attempts at delivering
            one that failed (:func:`delivery_step`); empty on a store that records none (not a
            :class:`FollowUpStore`).
        identity_source: How ``answered_by`` was established (``oidc``, ``cli``, ``claimed``...:
            an :class:`~agent_wait.core.Identity`'s ``source``), or None when not known (the
            sweeper, a host's event, a store that keeps none).
    """

    envelope: WaitEnvelope
    status: str
    answered_at: str | None = None
    answered_by: str | None = None
    answer: Any = None
    message: dict[str, Any] | None = None
    closes_as: str | None = None
    refusal: dict[str, Any] | None = None
    votes: tuple[dict[str, Any], ...] = ()
    follow_ups: Mapping[str, str] = field(default_factory=dict[str, str])
    identity_source: str | None = None

    @property
    def escalated_to(self) -> dict[str, str] | None:
        """The tags of who else may answer since the question escalated, or None.

        ``{"approver_group": "finance-leads"}``, from the policy's ``escalate.to``, once the
        sweeper escalated it: an authorization check widens who may answer by them.
        """
        follow_up = self.envelope.follow_up
        if follow_up is None or ESCALATED_STEP not in self.follow_ups:
            return None
        return follow_up.escalate_to

    @property
    def is_open(self) -> bool:
        """True while nobody has closed the question."""
        return self.status == QuestionStatus.OPEN

    @property
    def tally(self) -> Tally | None:
        """Where the votes stand, for a question with a quorum; else None."""
        quorum = self.envelope.quorum
        return None if quorum is None else tally(self.votes, quorum)

    def describe_votes(self) -> str | None:
        """``"1 of 2 approvals, waiting for finance"`` on a question with a quorum, else None.

        Waiting for the ``approver_group`` tag when the question has one.
        """
        envelope = self.envelope
        return describe_votes(envelope.quorum, self.votes, envelope.tags)

    def describe_close(self) -> str:
        """``"answered by alice at 2026-09-12T09:00:00Z"``, for messages."""
        if self.is_open:
            notes = [n for n in (self.describe_votes(), self.describe_refusal()) if n]
            return f"open ({'; '.join(notes)})" if notes else "open"
        by = f" by {self.answered_by}" if self.answered_by else ""
        at = f" at {self.answered_at}" if self.answered_at else ""
        if self.status == QuestionStatus.SENDING:
            return (
                f"being sent ({self.closes_as or 'answered'}{by}{at}; the transport has not "
                "confirmed it yet: the sweeper or agent-wait resend sends it again)"
            )
        return f"{self.status}{by}{at}"

    def describe_answerer(self) -> str | None:
        """``"alice@example.com (oidc)"``: who closed it and how they were identified, or None."""
        if self.answered_by is None:
            return None
        how = f" ({self.identity_source})" if self.identity_source else ""
        return f"{self.answered_by}{how}"

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
        identity_source: str | None = None,
    ) -> Transition:
        """Close an open question (compare-and-set on ``open``).

        ``identity_source`` (how ``by`` was established) is kept beside ``by`` by a store that
        keeps it; a store written before it takes no such keyword and is not given it.

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
        identity_source: str | None = None,
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


@runtime_checkable
class VotingStore(QuestionStore, Protocol):
    """A question store that records votes on a question with a quorum.

    The sqlite, PostgreSQL and DynamoDB stores are all one. A store that is not refuses to take
    a vote (``answer`` raises :class:`~agent_wait.core.QuorumNotSupported`): a question with a
    quorum needs somewhere to count.
    """

    def record_vote(
        self, thread_id: str, question_id: str, vote: dict[str, Any], *, seen: int
    ) -> Transition:
        """Append ``vote`` to an open question's votes if it still has exactly ``seen`` of them.

        A compare-and-set on the number of votes (votes are only appended while the question is
        open): of two voters who both read ``seen`` votes, exactly one is recorded; the other
        reads again and decides again.

        Returns:
            ``won`` if this call recorded the vote; the question as it is after the attempt.

        Raises:
            LookupError: No such question.
        """
        ...


def follow_up_step(step: str) -> str:
    """``step`` if it names a follow-up of :meth:`FollowUp.steps` or one's delivery attempt.

    A delivery attempt (:func:`delivery_step`) records that a follow-up's delivery to one
    announcer failed, or that a sweeper took the next attempt at it. Anything else: ValueError.
    """
    named = isinstance(step, str)  # pyright: ignore[reportUnnecessaryIsInstance]
    if named and (_is_follow_up(step) or delivery_parts(step) is not None):
        return step
    raise ValueError(
        f"step: expected 'reminder:<n>', {ESCALATED_STEP!r} or {LAST_WARNING_STEP!r}, or a "
        f"delivery attempt '<failed|retry>:<n>:<announcer>:<step>', got {step!r}"
    )


def _is_follow_up(step: str) -> bool:
    return step in (ESCALATED_STEP, LAST_WARNING_STEP) or (
        step.startswith(REMINDER_STEP) and step[len(REMINDER_STEP) :].isdigit()
    )


FAILED_DELIVERY = "failed"
"""A :func:`delivery_step` kind: that attempt at delivering the follow-up failed."""
RETRIED_DELIVERY = "retry"
"""A :func:`delivery_step` kind: a sweeper took that attempt (of two sweepers, one does)."""
_ANNOUNCER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def delivery_step(kind: str, attempt: int, announcer: str, step: str) -> str:
    """``"<kind>:<attempt>:<announcer>:<step>"``: a follow-up's delivery attempt, as recorded.

    Recorded with :meth:`FollowUpStore.claim_follow_up` beside the follow-up itself, so that a
    delivery that failed is tried again by one sweeper, and one that succeeded never is.

    Raises:
        ValueError: ``kind`` is not ``failed`` or ``retry``, ``attempt`` is below 1, the
            announcer's name is not a plain name, or ``step`` is not a follow-up.
    """
    found = f"{kind}:{attempt}:{announcer}:{step}"
    if delivery_parts(found) is None:
        raise ValueError(
            f"delivery step: expected kind 'failed' or 'retry', an attempt from 1, a plain "
            f"announcer name and a follow-up step, got {found!r}"
        )
    return found


def delivery_parts(step: str) -> tuple[str, int, str, str] | None:
    """``(kind, attempt, announcer, follow-up step)`` of a :func:`delivery_step`, else None."""
    parts = step.split(":", 3)
    if len(parts) != 4:
        return None
    kind, attempt, announcer, follow_up = parts
    if (
        kind not in (FAILED_DELIVERY, RETRIED_DELIVERY)
        or not attempt.isdigit()
        or int(attempt) < 1
        or not _ANNOUNCER_NAME.match(announcer)
        or not _is_follow_up(follow_up)
    ):
        return None
    return kind, int(attempt), announcer, follow_up


@runtime_checkable
class FollowUpStore(QuestionStore, Protocol):
    """A question store that records the sweeper's follow-ups of open questions.

    With one, the sweeper reminds, escalates and gives the last warning, each once however many
    sweepers run; with a store that is not one, it does none of them and says so. The sqlite,
    PostgreSQL and DynamoDB stores are all one.
    """

    def claim_follow_up(
        self, thread_id: str, question_id: str, step: str, *, at: datetime | None = None
    ) -> bool:
        """Record ``step`` done at ``at`` (default: now) on an open question, once.

        A compare-and-set: only while the question is open and ``step`` is not recorded yet.
        Of several sweepers claiming one step, exactly one gets True and publishes it.

        Raises:
            ValueError: ``step`` is not a follow-up step (:func:`follow_up_step`).
        """
        ...


@runtime_checkable
class FollowUpQuery(Protocol):
    """A store that lists the open questions whose envelope asks for follow-ups itself.

    The sweeper looks only at those. Without it, every sweep reads every open question and
    keeps those with a ``follow_up``: fine for a few hundred, slow for tens of thousands. The
    sqlite store is one.
    """

    def open_questions_to_follow_up(self) -> list[StoredQuestion]:
        """Every open question whose envelope has a ``follow_up``, in any order."""
        ...


def check_vote(vote: Any) -> dict[str, Any]:
    """``vote`` if it is ``{"by": str, "at": str, "answer": ...}``; else a ValueError naming it."""
    if (
        not isinstance(vote, dict)
        or not isinstance(vote.get("by"), str)  # pyright: ignore[reportUnknownMemberType]
        or not isinstance(vote.get("at"), str)  # pyright: ignore[reportUnknownMemberType]
        or "answer" not in vote
    ):
        raise ValueError(f'vote: expected {{"by": str, "at": str, "answer": ...}}, got {vote!r}')
    return cast("dict[str, Any]", vote)


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


def identity_keyword(method: Callable[..., Any], source: str | None) -> dict[str, str]:
    """``{"identity_source": source}`` for a store method that keeps it, else nothing.

    A store written before ``identity_source`` was kept beside ``answered_by`` takes no such
    keyword: it still records who answered, not how.
    """
    if source is None:
        return {}
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # a method without a readable signature: call it as before
        return {}
    takes = any(
        p.name == "identity_source" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )
    return {"identity_source": source} if takes else {}
