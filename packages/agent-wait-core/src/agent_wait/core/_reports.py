"""What the host hooks are handed: :class:`Handled` and :class:`WorkerStatus`.

``answer_handled`` gets a :class:`Handled`, ``worker_started`` / ``worker_stopped`` a
:class:`WorkerStatus`.

Defined in core, not beside the host state machine and the worker, so the hook specs name them
without importing the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from agent_wait.core._announce import Delivery, PublishReport

if TYPE_CHECKING:
    from agent_wait.core._entry import EntryPoint


class Outcome(StrEnum):
    """What ``handle_message`` did with an inbound message."""

    STARTED = "started"
    """A start message ran the agent."""
    RESUMED = "resumed"
    """An answer resumed the question it names."""
    REPUBLISHED = "republished"
    """A start message arrived while the thread was parked: nothing ran, the pending questions
    were published again with their same question ids."""
    DUPLICATE = "duplicate"
    """An answer for a question that is no longer pending (already answered, or late): nothing
    ran; the questions the thread waits on now were published again."""
    UNKNOWN_QUESTION = "unknown_question"
    """An answer for a question id this thread never asked: nothing ran."""
    INVALID_ANSWER = "invalid_answer"
    """An answer the framework would choke on (and possibly save), refused before resuming."""
    RESUME_FAILED = "resume_failed"
    """An answer resumed its question and the run raised (a tool or hook failed on the answer, a
    model call failed): what the framework saved of that answer is undone, so a question the run
    had not moved past is still pending and takes another answer. ``error`` holds the exception."""
    HELD = "held"
    """An answer to one of several pending questions, stored until the others are answered too:
    nothing ran yet (Pydantic AI resumes a run only with every pending call answered)."""
    UNAUTHORIZED = "unauthorized"
    """The host signs replies and the answer's token is missing, forged, made with a key the
    host no longer holds, or for another thread or question: nothing ran, the question stays
    answerable."""
    STALE_APPROVAL = "stale_approval"
    """An authentic answer to a question that changed since it was published (the call was
    proposed again with other arguments): nothing ran, the question as it is now stays
    answerable."""
    EXPIRED = "expired"
    """The host refuses late answers and this one came after the question's ``expires_at`` or
    its own ``valid_until``: nothing ran, the question stays answerable."""
    CONTINUED = "continued"
    """The message came back to a thread that is not parked but has work left from a run that
    stopped before its end (a worker killed after a step was saved): the run was continued from
    its last saved step. A redelivered answer whose resume was cut short, or a start message
    redelivered after a crash (its input is not applied again)."""


@dataclass(frozen=True)
class Handled:
    """The result of ``handle_message``.

    Attributes:
        outcome: What happened.
        result: The framework's run result, or None when nothing ran.
        report: What was published (empty when nothing was).
        detail: A human-readable explanation for the non-running outcomes.
        error: The exception of a failed resume (:attr:`Outcome.RESUME_FAILED`), else None.
        answered: The question ids this message answered (resumed or held), in publish order.
        events: The ``wait.answered`` and ``wait.answer_refused`` lifecycle event deliveries,
            one per opted-in announcer and question (empty when none opted in); failures are
            here, not raised.
        refused: The question ids whose answers in this message the host refused
            (:attr:`Outcome.INVALID_ANSWER`, or :attr:`Outcome.RESUME_FAILED` with the
            question still pending): each is still pending and takes a corrected answer.
    """

    outcome: Outcome
    result: Any = None
    report: PublishReport = field(default_factory=PublishReport)
    detail: str | None = None
    error: Exception | None = None
    answered: tuple[str, ...] = ()
    events: tuple[Delivery, ...] = ()
    refused: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        """True when the agent ran (a start or a resume)."""
        return self.outcome in (Outcome.STARTED, Outcome.RESUMED, Outcome.CONTINUED)

    @property
    def parked(self) -> bool:
        """True when the thread is waiting on questions after this message."""
        return bool(self.report.envelopes)

    @property
    def question_ids(self) -> list[str]:
        """The ids of the questions published for this message."""
        return self.report.question_ids


class WorkerStatus(Protocol):
    """A running worker as an operator sees it, read while it runs (``agent_wait.host.ServeStatus``).

    Attributes:
        entry: The entry point served.
        report: What the worker did so far, counted as it goes (``agent_wait.host.ServeReport``:
            ``acknowledged``, ``retried``, ``dead_lettered``, ``lost_leases``, ``released``).
        health_address: ``(host, port)`` the health endpoints listen on, when they do.
    """

    entry: EntryPoint
    report: Any
    health_address: tuple[str, int] | None

    @property
    def in_flight(self) -> int:
        """Messages being handled now (from their handler's start until they are settled)."""
        ...

    @property
    def held(self) -> int:
        """Messages received and waiting for their thread or a free slot."""
        ...

    @property
    def alive(self) -> bool:
        """The loop turned within the last minute."""
        ...

    @property
    def ready(self) -> bool:
        """The entry point answered its last call (False before the first and in an outage)."""
        ...

    @property
    def outage(self) -> float | None:
        """Seconds the entry point has been unreachable, None when it answers."""
        ...

    def oldest_waiting(self) -> float | None:
        """Seconds the oldest message ready to be handed out has waited, None when unknown."""
        ...
