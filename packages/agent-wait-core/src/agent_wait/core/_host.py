"""What a framework's ``handle_message`` returns: the run result, the publish report, the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent_wait.core._announce import PublishReport


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
    """An answer for a question that is no longer pending (already answered, or late): nothing ran."""
    UNKNOWN_QUESTION = "unknown_question"
    """An answer for a question id this thread never asked: nothing ran."""
    INVALID_ANSWER = "invalid_answer"
    """An answer the framework would choke on (and possibly save), refused before resuming."""
    HELD = "held"
    """An answer to one of several pending questions, stored until the others are answered too:
    nothing ran yet (Pydantic AI resumes a run only with every pending call answered)."""


@dataclass(frozen=True)
class Handled:
    """The result of ``handle_message``.

    Attributes:
        outcome: What happened.
        result: The framework's run result, or None when nothing ran.
        report: What was published (empty when nothing was).
        detail: A human-readable explanation for the non-running outcomes.
    """

    outcome: Outcome
    result: Any = None
    report: PublishReport = field(default_factory=PublishReport)
    detail: str | None = None

    @property
    def ran(self) -> bool:
        """True when the agent ran (a start or a resume)."""
        return self.outcome in (Outcome.STARTED, Outcome.RESUMED)

    @property
    def parked(self) -> bool:
        """True when the thread is waiting on questions after this message."""
        return bool(self.report.envelopes)

    @property
    def question_ids(self) -> list[str]:
        """The ids of the questions published for this message."""
        return self.report.question_ids
