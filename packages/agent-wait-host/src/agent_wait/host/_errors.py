"""The errors the host raises: every one an AgentWaitError (agent_wait.core)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent_wait.core._errors import AgentWaitError, ConfigError, InvalidAnswer

if TYPE_CHECKING:
    from agent_wait.core._store import StoredQuestion


class QuestionNotPending(AgentWaitError):
    """Raised by a host's ``resume`` when the framework finds the question no longer pending.

    Another handler answered it between the read and the resume; :func:`plan` reports the answer
    as :attr:`Outcome.DUPLICATE`.
    """


class QuestionNotFound(AgentWaitError, LookupError):
    """No stored question has that id (in that thread), or several threads have one."""


class AnswerNotAccepted(InvalidAnswer):
    """The question does not take this answer; nothing was recorded or sent.

    The message names the place in the answer, what is wrong, and a valid answer built from
    the question's ``answer_schema``.

    Attributes:
        question: The question, still open.
        problem: What is wrong, naming the place in the answer (``answer.args.amount: ...``).
        example: A valid answer (see :func:`~agent_wait.core.example_answer`).
    """

    def __init__(self, question: StoredQuestion, problem: str) -> None:
        # Here, not at import: the host imports this module; only a refused answer needs it.
        from agent_wait.core._answer_schema import example_answer

        envelope = question.envelope
        self.question = question
        self.problem = problem
        self.example = example_answer(envelope.answer_schema, envelope.allowed_actions)
        super().__init__(
            f"question {envelope.question_id} (thread {envelope.thread_id}): {problem}; nothing "
            f"sent. A valid answer: {json.dumps(self.example, ensure_ascii=False)}"
        )


class ActionNotAllowed(AnswerNotAccepted):
    """The action is not one of the question's ``allowed_actions`` (pass ``force`` to send it)."""


class QuestionClosed(AgentWaitError):
    """The question was already answered, expired or cancelled; nothing was sent.

    Attributes:
        question: The question as whoever closed it left it (who, when, what).
    """

    def __init__(self, question: StoredQuestion) -> None:
        envelope = question.envelope
        super().__init__(
            f"question {envelope.question_id} (thread {envelope.thread_id}) is already "
            f"{question.describe_close()}; nothing sent"
        )
        self.question = question


class AlreadyVoted(QuestionClosed):
    """This person's vote on the question is already counted; nothing was recorded."""

    def __init__(self, question: StoredQuestion, by: str) -> None:
        envelope = question.envelope
        AgentWaitError.__init__(
            self,
            f"question {envelope.question_id} (thread {envelope.thread_id}): {by} already voted "
            f"({question.describe_votes()}); a vote counts once per person; nothing recorded",
        )
        self.question = question


class QuestionDecided(QuestionClosed):
    """The votes already reached the quorum; the deciding voter is sending its answer."""

    def __init__(self, question: StoredQuestion) -> None:
        envelope = question.envelope
        AgentWaitError.__init__(
            self,
            f"question {envelope.question_id} (thread {envelope.thread_id}) is already decided "
            f"({question.describe_votes()}); its answer is being sent; nothing recorded",
        )
        self.question = question


class SendUnconfirmed(AgentWaitError):
    """The answer was sent but the entry point did not confirm it: it may have arrived.

    A timeout or a lost connection after the request may have reached the transport. The
    questions stay ``sending`` with the exact message; nobody else can answer them, and
    :func:`resend` (``agent-wait resend``) or the sweeper send that same message again until
    the transport confirms it.

    Attributes:
        questions: The questions left ``sending``.
        message: The message whose outcome is unknown.
    """

    def __init__(
        self, questions: list[StoredQuestion], message: dict[str, Any], error: BaseException
    ) -> None:
        first = questions[0].envelope
        ids = ", ".join(q.envelope.question_id for q in questions)
        super().__init__(
            f"question {ids} (thread {first.thread_id}): the answer was sent but the entry point "
            f"did not confirm it ({type(error).__name__}); it may have arrived, so the question "
            f"stays sending with this answer and no other can be given: run 'agent-wait resend "
            f"{first.question_id} --thread {first.thread_id}' (or let the sweeper) send the same "
            "message again"
        )
        self.questions = questions
        self.message = message


class NothingToResend(AgentWaitError):
    """The question has no recorded answer to send again.

    It is open, was cancelled, or was closed by a host's ``wait.answered`` event (the host has
    the answer; the row does not).
    """


class QuorumNotSupported(ConfigError):
    """The question has a quorum, but its store cannot record votes (not a ``VotingStore``)."""
