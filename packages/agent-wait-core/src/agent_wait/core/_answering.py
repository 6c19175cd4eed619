"""Answering questions and honouring deadlines: the consumer's side, with our own tools.

Both record the close in the question store first, through its compare-and-set, and only the
winner sends: two approvers (or an approver and the sweeper, or two sweepers) racing on one
question send exactly one answer. With a :class:`SendingStore` the close is ``sending`` until
the transport confirms the message; a send whose outcome is unknown (a timeout: the message may
have arrived) keeps it ``sending`` with the exact message, which only :func:`resend` or the
sweeper settle by sending it again. A send refused before anything left reopens the question.
"""

from __future__ import annotations

import getpass
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from agent_wait.core._announce import BaseAnnounce, Delivery
from agent_wait.core._answer_schema import answer_problem, example_answer
from agent_wait.core._config import load_config
from agent_wait.core._durations import parse_duration
from agent_wait.core._entries import default_entry, reply_entry
from agent_wait.core._entry import EntryPoint
from agent_wait.core._errors import AgentWaitError, ConfigError, InvalidAnswer
from agent_wait.core._hooks import Operating, Operation
from agent_wait.core._ledger import ExecutionLedger, configured_ledger
from agent_wait.core._lifecycle import event_announcers, lifecycle_event, publish_events
from agent_wait.core._logsafe import log_safe
from agent_wait.core._models import EXPIRED_TYPE, Answer, answerer_problem, format_utc
from agent_wait.core._plugins import LIFECYCLE_OPTION, question_store
from agent_wait.core._publish import plugin_hooks
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.core._store import (
    HistoryKey,
    QuestionHistory,
    QuestionStatus,
    QuestionStore,
    SendingStore,
    StoredQuestion,
    Transition,
    history_key,
    parse_now,
)

logger = logging.getLogger("agent_wait.core.answer")

SWEEPER = "sweeper"
RESEND_AFTER = timedelta(minutes=1)
"""How long a question stays ``sending`` before the sweeper sends its message again: a send
still in flight (a slow transport retrying) is left alone until then."""
EXPIRED_STATUS = QuestionStatus.EXPIRED.value


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


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """What :func:`answer` did.

    Attributes:
        question: The question, closed by this call (``answered``, who, when, the answer).
        message: The answer message sent: ``{**reply_with, "answer": ...}``.
    """

    question: StoredQuestion
    message: dict[str, Any]


def default_approver() -> str:
    """The name recorded when none is given: the login name of the process."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        return "unknown"


def decision(action: str, answer: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The answer object: ``{"action": action}``, or ``answer`` with ``action`` merged in."""
    if not isinstance(action, str) or not action:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"action: expected a non-empty string such as 'approve', got {action!r}")
    if answer is None:
        return {"action": action}
    if not isinstance(answer, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(
            f'answer: expected a JSON object such as {{"note": "ok"}}, got {type(answer).__name__}'
        )
    return {**answer, "action": action}


def reply(
    question: StoredQuestion,
    answer: Any,
    answered_at: datetime | str | None = None,
    answered_by: str | None = None,
) -> dict[str, Any]:
    """``{**reply_with, "answer": answer}``, validated as an answer message.

    A question with an ``answer_ttl`` answered at ``answered_at`` gets ``valid_until``
    ``answered_at + answer_ttl``: a host that refuses late answers refuses it once that passed.
    ``answered_by`` names who answered (the host reports it in ``wait.answered``).
    """
    envelope = question.envelope
    message = {**envelope.reply_with.model_dump(), "answer": answer}
    if envelope.answer_ttl is not None and answered_at is not None:
        ttl = parse_duration(envelope.answer_ttl, "answer_ttl")
        message["valid_until"] = format_utc(parse_now(answered_at) + ttl)
    if answered_by is not None:
        message["answered_by"] = answered_by
    Answer.model_validate(message)
    return message


def check_answerer(by: str, field: str = "by") -> str:
    """``by``, if an answer message can carry it as ``answered_by``; else a ValueError naming it."""
    problem = answerer_problem(by)
    if problem:
        raise ValueError(f"{field}: {problem}")
    return by


def _lookup(store: QuestionStore, question_id: str, thread_id: str | None) -> StoredQuestion:
    found = store.find(question_id, thread_id)
    where = f" in thread {thread_id}" if thread_id else ""
    if not found:
        raise QuestionNotFound(f"no question {question_id}{where} in {store!r}")
    if len(found) > 1:
        threads = ", ".join(sorted(q.envelope.thread_id for q in found))
        raise QuestionNotFound(
            f"question {question_id} was asked in several threads ({threads}); name one with "
            "thread_id (--thread)"
        )
    return found[0]


def _close_and_send(
    store: QuestionStore,
    entry: EntryPoint,
    answers: list[tuple[StoredQuestion, Any]],
    status: QuestionStatus,
    by: str,
    at: datetime | None,
) -> tuple[list[StoredQuestion], dict[str, Any]] | StoredQuestion:
    """Close every question, then send one message answering them all.

    The closed questions and the message, or the winner's close of the first question someone
    else closed first (those this call had closed are open again, and nothing was sent).

    Raises:
        SendUnconfirmed: The send's outcome is unknown; the questions stay ``sending``.
    """
    at = parse_now(at)
    message = reply_all(answers, at, by)
    if not isinstance(store, SendingStore):
        outcome = _close_then_send(store, entry, answers, message, status, by, at)
    else:
        outcome = _send_held(store, entry, answers, message, status, by, at)
    if isinstance(outcome, StoredQuestion):
        return outcome
    for question in outcome:
        logger.info(
            "question %s of thread %s %s by %s; answer sent to %s",
            log_safe(question.envelope.question_id),
            log_safe(question.envelope.thread_id),
            status.value,
            log_safe(by),
            entry.name,
        )
    return outcome, message


def _close_all(
    answers: list[tuple[StoredQuestion, Any]],
    close: Callable[[StoredQuestion, Any], Transition],
    reopen: Callable[[StoredQuestion], bool],
) -> list[StoredQuestion] | StoredQuestion:
    """Close every question, or none: the winner's close of the first someone else closed first."""
    closed: list[StoredQuestion] = []
    try:
        for question, value in answers:
            done = close(question, value)
            if not done.won:
                for mine in closed:
                    reopen(mine)
                return done.question
            closed.append(done.question)
    except BaseException:
        for mine in closed:
            reopen(mine)
        raise
    return closed


def _close_then_send(
    store: QuestionStore,
    entry: EntryPoint,
    answers: list[tuple[StoredQuestion, Any]],
    message: dict[str, Any],
    status: QuestionStatus,
    by: str,
    at: datetime,
) -> list[StoredQuestion] | StoredQuestion:
    """A store that cannot hold a message being sent: closed, and reopened if the send fails."""

    def close(question: StoredQuestion, value: Any) -> Transition:
        envelope = question.envelope
        return store.transition(
            envelope.thread_id, envelope.question_id, status, by=by, answer=value, at=at
        )

    closed = _close_all(answers, close, store.reopen)
    if isinstance(closed, StoredQuestion):
        return closed
    try:
        entry.send(message)
    except BaseException:
        for mine in closed:
            store.reopen(mine)
        raise
    return closed


def _send_held(
    store: SendingStore,
    entry: EntryPoint,
    answers: list[tuple[StoredQuestion, Any]],
    message: dict[str, Any],
    status: QuestionStatus,
    by: str,
    at: datetime,
) -> list[StoredQuestion] | StoredQuestion:
    """Hold every question ``sending`` with the message, send it, and settle them when confirmed."""

    def close(question: StoredQuestion, value: Any) -> Transition:
        envelope = question.envelope
        return store.begin_send(
            envelope.thread_id,
            envelope.question_id,
            status,
            by=by,
            answer=value,
            message=message,
            at=at,
        )

    held = _close_all(answers, close, store.reopen)
    if isinstance(held, StoredQuestion):
        return held
    try:
        entry.send(message)
    except (ValidationError, ConnectionRefusedError):
        # Refused before anything left (the message, or the connection): open again.
        for mine in held:
            store.reopen(mine)
        raise
    except Exception as error:
        # The request may have reached the transport: the questions stay sending.
        logger.warning(
            "question %s of thread %s: the send of its answer was not confirmed (%s); left "
            "sending, to be sent again",
            log_safe(held[0].envelope.question_id),
            log_safe(held[0].envelope.thread_id),
            type(error).__name__,
        )
        raise SendUnconfirmed(held, message, error) from error
    return [_settled(store, question) for question in held]


def _settled(store: SendingStore, sending: StoredQuestion) -> StoredQuestion:
    """The question closed as it said it would, once its message was confirmed.

    Someone who sent the same message meanwhile (a resend, the sweeper) may have settled it
    first: it is closed the same way either way.
    """
    store.end_send(sending)
    return replace(
        sending, status=sending.closes_as or sending.status, message=None, closes_as=None
    )


def reply_all(
    answers: list[tuple[StoredQuestion, Any]], answered_at: datetime, answered_by: str | None = None
) -> dict[str, Any]:
    """One answer message for questions of one thread: the first's reply, the rest in ``more_answers``.

    ``answered_by`` is said once, for the whole message.
    """
    (first, value), *rest = answers
    message = reply(first, value, answered_at, answered_by)
    if rest:
        more: list[dict[str, Any]] = []
        for question, other in rest:
            entry = reply(question, other, answered_at)
            del entry["thread_id"]
            more.append(entry)
        message["more_answers"] = more
        Answer.model_validate(message)
    return message


def _check(question: StoredQuestion, value: Any, force: bool) -> None:
    """Refuse an answer the question does not take, before anything is recorded.

    ``force`` skips ``allowed_actions`` and ``answer_schema``, never what no framework can keep.
    """
    if not question.is_open:
        raise QuestionClosed(question)
    envelope = question.envelope
    if force:
        problem = answer_problem(envelope.model_copy(update=_UNCHECKED), value)
    else:
        try:
            problem = answer_problem(envelope, value)
        except AgentWaitError as error:
            raise AgentWaitError(
                f"question {envelope.question_id} (thread {envelope.thread_id}): {error}; or "
                "pass force=True (--force) to send the answer unchecked"
            ) from None
    if problem is None:
        return
    if problem.startswith("answer.action:"):
        raise ActionNotAllowed(question, f"{problem}; pass force=True (--force) to send it anyway")
    raise AnswerNotAccepted(question, problem)


# What force=True leaves unchecked: the question's actions and schema.
_UNCHECKED: dict[str, Any] = {"allowed_actions": [], "answer_schema": None}


def _lookup_all(
    store: QuestionStore, question_ids: list[str], thread_id: str | None
) -> list[StoredQuestion]:
    questions = [_lookup(store, question_id, thread_id) for question_id in question_ids]
    threads = sorted({q.envelope.thread_id for q in questions})
    if len(threads) > 1:
        raise QuestionNotFound(
            f"one message answers questions of one thread; these are in {', '.join(threads)}: "
            "name one with thread_id (--thread)"
        )
    return questions


def answer(
    question_id: str,
    action: str | None = None,
    *,
    answer: Any = None,
    by: str | None = None,
    thread_id: str | None = None,
    force: bool = False,
    store: QuestionStore | None = None,
    entry: EntryPoint | None = None,
    at: datetime | None = None,
) -> AnswerResult:
    """Answer a stored question: record it, then send it to the host's entry point.

    With ``action``, the answer is ``{"action": action}``, or the object ``answer`` with
    ``action`` merged in. Without it, ``answer`` is the whole answer, sent as it is (any JSON
    but null: ``"y"``, a list, ``{"approved": true}``): what a question with empty
    ``allowed_actions`` (a foreign interrupt) or an ``answer_schema`` expects. The message sent
    is ``{**reply_with, "answer": ...}``.

    Before anything is recorded, the answer passes :func:`~agent_wait.core.answer_problem`:
    an answer object's ``action`` is one of the question's ``allowed_actions`` (when it states
    any), the answer matches its ``answer_schema`` (when it has one), and it is JSON every
    framework keeps (finite numbers, integers within 64 bits, valid Unicode, at most 64 KiB).

    Args:
        question_id: The question's id.
        action: The action, one of the question's ``allowed_actions`` unless ``force``.
        answer: With ``action``, more fields of the answer object (a note, edited ``args``...);
            without, the whole answer.
        by: Who answers (default: the process's login name): recorded, and sent as the
            message's ``answered_by`` (1 to 64 characters, no control characters).
        thread_id: The thread, needed only if several threads asked the same id.
        force: Send the answer without checking it against ``allowed_actions`` and
            ``answer_schema`` (what no framework keeps is refused anyway).
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the question's ``reply_to`` when it names an entry
            point, else the configured entry point).
        at: When (default: now).

    Raises:
        QuestionNotFound: No such question, or several threads asked it and no thread was named.
        ActionNotAllowed: The action is not allowed and ``force`` is false.
        AnswerNotAccepted: The answer does not match the question's ``answer_schema`` (and
            ``force`` is false), or no framework keeps it; the message names the place in the
            answer, what is wrong, and a valid answer.
        QuestionClosed: Someone or something closed it first (or its answer is being sent); it
            says who, when, and with what.
        SendUnconfirmed: The answer was sent but the entry point did not confirm it; the
            question stays ``sending`` until the same message is sent again.
        ValueError: ``action``, ``answer`` or ``by`` is malformed, or no answer is given.
        AgentWaitError: The question has an ``answer_schema`` and ``jsonschema`` is missing.
    """
    if action is not None:
        payload: Any = decision(action, answer)
    elif answer is None:
        raise ValueError(
            "answer: give an action (such as 'approve'), or the whole answer "
            "(answer='y', --json '\"y\"')"
        )
    else:
        payload = answer
    hooks = plugin_hooks()
    if not hooks.operations:
        return _answer_one(question_id, payload, by, thread_id, force, store, entry, at)
    with Operating(hooks, Operation("answer", thread_id, question_id)) as operating:
        result = operating.result = _answer_one(
            question_id, payload, by, thread_id, force, store, entry, at
        )
    return result


def _answer_one(
    question_id: str,
    payload: Any,
    by: str | None,
    thread_id: str | None,
    force: bool,
    store: QuestionStore | None,
    entry: EntryPoint | None,
    at: datetime | None,
) -> AnswerResult:
    done = _answer_many({question_id: payload}, by, thread_id, force, store, entry, at)
    return AnswerResult(done.questions[0], done.message)


@dataclass(frozen=True, slots=True)
class AnswersResult:
    """What :func:`answer_many` did.

    Attributes:
        questions: The questions, closed by this call, in the order answered.
        message: The one answer message sent: the first answer, the others in ``more_answers``.
    """

    questions: list[StoredQuestion]
    message: dict[str, Any]


def answer_many(
    answers: Mapping[str, Any],
    *,
    by: str | None = None,
    thread_id: str | None = None,
    force: bool = False,
    store: QuestionStore | None = None,
    entry: EntryPoint | None = None,
    at: datetime | None = None,
) -> AnswersResult:
    """Answer several open questions of one thread in one message: the run resumes once.

    ``answers`` maps each question id to its whole answer (``{"action": "approve"}``, ``"y"``,
    ...). Each is checked as :func:`answer` checks one, then every question is recorded closed
    and one message is sent: the first answer, the others in ``more_answers``. If any question
    is already closed, or the send fails, none stays closed by this call and nothing is sent.
    Plugins see it as one ``answer`` operation (without a ``question_id``).

    Args:
        answers: Question id to answer, in the order to send them.
        by: Who answers (default: the process's login name): recorded, and sent as the
            message's ``answered_by`` (1 to 64 characters, no control characters).
        thread_id: The thread, needed only if several threads asked one of the ids.
        force: Send without checking ``allowed_actions`` and ``answer_schema``.
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the ``reply_to`` of the first question when it names an
            entry point, else the configured entry point).
        at: When (default: now).

    Raises:
        QuestionNotFound: An id is unknown or ambiguous, or the questions are in several threads.
        ActionNotAllowed: An answer's ``action`` is not allowed and ``force`` is false.
        AnswerNotAccepted: An answer does not match its question's ``answer_schema``, or no
            framework keeps it.
        QuestionClosed: One of them was closed first; it says who, when, and with what.
        SendUnconfirmed: The message was sent but the entry point did not confirm it; the
            questions stay ``sending`` until the same message is sent again.
        ValueError: ``answers`` is empty, an answer is null, or ``by`` is malformed.
    """
    hooks = plugin_hooks()
    if not hooks.operations:
        return _answer_many(answers, by, thread_id, force, store, entry, at)
    with Operating(hooks, Operation("answer", thread_id)) as operating:
        result = operating.result = _answer_many(answers, by, thread_id, force, store, entry, at)
    return result


def _answer_many(
    answers: Mapping[str, Any],
    by: str | None,
    thread_id: str | None,
    force: bool,
    store: QuestionStore | None,
    entry: EntryPoint | None,
    at: datetime | None,
) -> AnswersResult:
    if not answers:
        raise ValueError("answers: expected at least one question id and its answer, got none")
    for question_id, value in answers.items():
        if value is None:
            raise ValueError(f"answers[{question_id!r}]: an answer cannot be null")
    by = check_answerer(by or default_approver())
    own_store, own_entry = store is None, entry is None
    store = store if store is not None else default_store()
    try:
        questions = _lookup_all(store, list(answers), thread_id)
        pairs = [(q, answers[q.envelope.question_id]) for q in questions]
        for question, value in pairs:
            _check(question, value, force)
        entry = entry if entry is not None else answer_entry(questions[0])
        try:
            outcome = _close_and_send(store, entry, pairs, QuestionStatus.ANSWERED, by, at)
        finally:
            if own_entry:
                entry.close()
    finally:
        if own_store:
            store.close()
    if isinstance(outcome, StoredQuestion):
        raise QuestionClosed(outcome)
    return AnswersResult(*outcome)


class NothingToResend(AgentWaitError):
    """The question has no recorded answer to send again.

    It is open, was cancelled, or was closed by a host's ``wait.answered`` event (the host has
    the answer; the row does not).
    """


def resend(
    question_id: str,
    *,
    thread_id: str | None = None,
    store: QuestionStore | None = None,
    entry: EntryPoint | None = None,
) -> dict[str, Any]:
    """Send the recorded answer of a sending, answered or expired question again; return it.

    A ``sending`` question (its send was not confirmed) gets the exact message recorded for it,
    so a transport that deduplicates on content drops a copy that had arrived; once the entry
    point takes it, every question that message answers is settled (``answered`` or
    ``expired``). Also for the gap of a store without ``sending``: the answer is recorded before
    it is sent, so a process that dies in between leaves a question closed whose answer never
    left. A second copy of an answer that did arrive is harmless: the host reports it as a
    duplicate and runs nothing.

    Raises:
        QuestionNotFound: No such question, or several threads asked it and no thread was named.
        NothingToResend: The question is open or was cancelled.
    """
    own_store, own_entry = store is None, entry is None
    store = store if store is not None else default_store()
    try:
        question = _lookup(store, question_id, thread_id)
        if question.status == QuestionStatus.SENDING and isinstance(store, SendingStore):
            entry = entry if entry is not None else answer_entry(question)
            try:
                return _resend_held(store, entry, question)
            finally:
                if own_entry:
                    entry.close()
    finally:
        if own_store:
            store.close()
    if question.status not in (QuestionStatus.ANSWERED, QuestionStatus.EXPIRED) or (
        question.answer is None
    ):
        raise NothingToResend(
            f"question {question_id} (thread {question.envelope.thread_id}) is "
            f"{question.describe_close()}: no recorded answer to send; answer it instead"
            if question.is_open
            else f"question {question_id} (thread {question.envelope.thread_id}) is "
            f"{question.describe_close()}: no answer was recorded (a host that took the answer "
            "closed it, or it was cancelled)"
        )
    by = question.answered_by
    # A name recorded before answer messages carried one may not fit: the answer still goes.
    by = by if by is not None and answerer_problem(by) is None else None
    message = reply(question, question.answer, question.answered_at, by)
    entry = entry if entry is not None else answer_entry(question)
    try:
        entry.send(message)
    finally:
        if own_entry:
            entry.close()
    return message


def _resend_held(
    store: SendingStore, entry: EntryPoint, question: StoredQuestion
) -> dict[str, Any]:
    """Send a ``sending`` question's message again; settle every question it answers."""
    message = question.message
    if message is None:
        raise NothingToResend(
            f"question {question.envelope.question_id} (thread {question.envelope.thread_id}) is "
            "sending but holds no message"
        )
    entry.send(message)
    thread_id = question.envelope.thread_id
    ids = [message["question_id"], *(m["question_id"] for m in message.get("more_answers", []))]
    for other_id in ids:
        for other in store.find(other_id, thread_id):
            if other.status == QuestionStatus.SENDING and other.message == message:
                store.end_send(other)
    logger.info(
        "answer to question %s of thread %s sent again to %s; settled",
        log_safe(question.envelope.question_id),
        log_safe(thread_id),
        entry.name,
    )
    return message


def cancel(
    question_id: str,
    *,
    by: str | None = None,
    thread_id: str | None = None,
    store: QuestionStore | None = None,
    at: datetime | None = None,
) -> StoredQuestion:
    """Close a question without answering it: nothing is sent, and the thread keeps waiting.

    For a question that no longer needs an answer (asked by mistake, handled elsewhere); the
    sweeper and approvers then leave it alone.

    Raises:
        QuestionNotFound: No such question, or several threads asked it and no thread was named.
        QuestionClosed: It was already answered, expired or cancelled.
    """
    by = by or default_approver()
    own_store = store is None
    store = store if store is not None else default_store()
    try:
        question = _lookup(store, question_id, thread_id)
        envelope = question.envelope
        done = store.transition(
            envelope.thread_id, envelope.question_id, QuestionStatus.CANCELLED, by=by, at=at
        )
    finally:
        if own_store:
            store.close()
    if not done.won:
        raise QuestionClosed(done.question)
    return done.question


@dataclass(frozen=True)
class SweepReport:
    """What one :func:`sweep` did.

    Attributes:
        expired: Questions this sweep expired and answered with their ``default``.
        overdue: Open questions past ``expires_at`` without a ``default``: left open.
        failed: Questions whose ``default`` could not be sent (left open, or ``sending`` when
            the send's outcome is unknown), whose held message could not be sent again (left
            ``sending``), or whose answer could not be re-driven (the next sweep tries again),
            with the error.
        events: The ``wait.expired`` lifecycle event deliveries, one per opted-in announcer
            and expired question; failures are here, not raised.
        resent: ``sending`` questions (a send whose outcome was unknown) whose message this
            sweep sent again and settled (``answered`` or ``expired``).
        redriven: Answered questions whose recorded answer this sweep sent again (with
            ``redrive_after``): their runs may have been cut short by a crashed worker.
    """

    expired: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    overdue: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    failed: list[tuple[StoredQuestion, str]] = field(
        default_factory=list[tuple[StoredQuestion, str]]
    )
    events: list[Delivery] = field(default_factory=list[Delivery])
    resent: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    redriven: list[StoredQuestion] = field(default_factory=list[StoredQuestion])


def sweep(
    *,
    store: QuestionStore | None = None,
    entry: EntryPoint | None = None,
    now: datetime | str | None = None,
    by: str = SWEEPER,
    announce: Sequence[BaseAnnounce] | None = None,
    redrive_after: timedelta | str | float | None = None,
    ledger: ExecutionLedger | None = None,
) -> SweepReport:
    """Honour deadlines once: send the ``default`` of every open question past ``expires_at``.

    Each such question with a ``default`` is marked ``expired`` (by ``by``) and its default is
    sent as an ordinary answer; exactly once, even with several sweepers at the same time.
    Questions without a default stay open and are reported as overdue. A send that fails
    leaves its question open (the next sweep tries again) and is reported, not raised.

    First, every question ``sending`` for longer than :data:`RESEND_AFTER` (an answer or
    default whose send was not confirmed) has its recorded message sent again, the same
    message, and is settled once the entry point takes it; one that fails again stays
    ``sending`` for the next sweep. A younger one is left to the send still in flight.

    Args:
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the question's ``reply_to`` when it names an entry
            point, else the configured entry point).
        now: The time to compare with (default: now).
        by: The name recorded as having closed the questions, and sent as each default's
            ``answered_by``.
        announce: Announcers to tell of each expiry: those that opted in to ``wait.expired``
            (:meth:`~agent_wait.core.BaseAnnounce.with_lifecycle_events`) get one event per
            expired question. None (the default): the configured announcers, of which those
            whose entry sets ``lifecycle_events``; ``()`` for none.
        redrive_after: Also send again, once, the recorded answer of every question answered
            (or expired) between ``2 * redrive_after`` and ``redrive_after`` before ``now``
            (ISO 8601 or seconds; None: none). A worker killed after it took an answer can
            leave the thread's run unfinished; the host continues a run left unfinished and
            takes the answer of a finished one for a duplicate, so the copy is harmless. Sweep
            at least every ``redrive_after`` for every question to get its turn. The store must
            list closed questions (``QuestionHistory``: sqlite, PostgreSQL, DynamoDB).
        ledger: Where "sent again" is recorded, so each answer is re-sent once however many
            sweepers run (None: :func:`~agent_wait.core.configured_ledger`).
    """
    after = None if redrive_after is None else parse_duration(redrive_after, "redrive_after")
    hooks = plugin_hooks()
    if not hooks.operations:
        return _sweep(store, entry, now, by, announce, after, ledger)
    with Operating(hooks, Operation("sweep")) as operating:
        report = operating.result = _sweep(store, entry, now, by, announce, after, ledger)
    return report


def _sweep(
    store: QuestionStore | None,
    entry: EntryPoint | None,
    now: datetime | str | None,
    by: str,
    announce: Sequence[BaseAnnounce] | None,
    redrive_after: timedelta | None = None,
    ledger: ExecutionLedger | None = None,
) -> SweepReport:
    moment = parse_now(now)
    check_answerer(by)
    own_store = store is None
    store = store if store is not None else default_store()
    report = SweepReport()
    built: dict[str, EntryPoint] = {}  # by reply_to: one entry point per place answers go

    def target_of(question: StoredQuestion) -> EntryPoint:
        if entry is not None:
            return entry
        key = json.dumps(question.envelope.reply_to, sort_keys=True)
        return built.get(key) or built.setdefault(key, answer_entry(question))

    try:
        if isinstance(store, SendingStore):
            _resend_all_held(store, target_of, report, moment - RESEND_AFTER)
        due = store.open_questions_past(moment)
        for question in due:
            if question.envelope.default is None:
                report.overdue.append(question)
                continue
            try:
                outcome = _close_and_send(
                    store,
                    target_of(question),
                    [(question, question.envelope.default)],
                    QuestionStatus.EXPIRED,
                    by,
                    moment,
                )
            except Exception as error:  # noqa: BLE001 - one failed send must not stop the sweep
                logger.error(
                    "question %s of thread %s: its default could not be sent (%s); left %s",
                    log_safe(question.envelope.question_id),
                    log_safe(question.envelope.thread_id),
                    type(error).__name__,
                    "sending" if isinstance(error, SendUnconfirmed) else "open",
                )
                report.failed.append((question, f"{type(error).__name__}: {error}"))
                continue
            if not isinstance(outcome, StoredQuestion):
                report.expired.extend(outcome[0])
        # A default settled now, after an unconfirmed send, is announced now.
        expired = [*report.expired, *(q for q in report.resent if q.status == EXPIRED_STATUS)]
        if expired and announce is None and not _configuration_opts_in():
            announce = ()  # no entry opted in: the configured announcers are not even built
        if expired and event_announcers(announce, EXPIRED_TYPE):
            events = [
                lifecycle_event(
                    EXPIRED_TYPE,
                    q.envelope.thread_id,
                    q.envelope.question_id,
                    outcome="default_sent",
                    by=q.answered_by,
                    at=parse_now(q.answered_at),
                )
                for q in expired
            ]
            report.events.extend(publish_events(events, announce))
        if redrive_after is not None:
            _redrive(store, entry, built, moment, redrive_after, ledger, report)
    finally:
        for target in built.values():
            target.close()
        if own_store:
            store.close()
    return report


def _resend_all_held(
    store: SendingStore,
    target_of: Callable[[StoredQuestion], EntryPoint],
    report: SweepReport,
    held_before: datetime,
) -> None:
    """Send every message held since before ``held_before`` again, once; settle its questions."""
    tried: dict[str, Exception | None] = {}  # by message: the questions of one share its send
    for question in store.sending_questions():
        message = question.message
        if message is None or parse_now(question.answered_at) > held_before:
            continue
        key = json.dumps(message, sort_keys=True)
        if key not in tried:
            try:
                target_of(question).send(message)
                tried[key] = None
            except Exception as error:  # noqa: BLE001 - one failed send must not stop the sweep
                tried[key] = error
        error = tried[key]
        if error is None:
            report.resent.append(_settled(store, question))
            continue
        logger.error(
            "question %s of thread %s: its held answer could not be sent again (%s); left sending",
            log_safe(question.envelope.question_id),
            log_safe(question.envelope.thread_id),
            type(error).__name__,
        )
        report.failed.append((question, f"{type(error).__name__}: {error}"))


_REDRIVE_PAGE = 200


def _redrive(
    store: QuestionStore,
    entry: EntryPoint | None,
    built: dict[str, EntryPoint],
    moment: datetime,
    after: timedelta,
    ledger: ExecutionLedger | None,
    report: SweepReport,
) -> None:
    """Send again, once, the answers recorded between ``2 * after`` and ``after`` ago."""
    if not isinstance(store, QuestionHistory):
        raise ConfigError(
            f"redrive_after: the store {type(store).__name__} does not list closed questions "
            "(closed_questions); use the sqlite, PostgreSQL or DynamoDB store"
        )
    ledger = ledger if ledger is not None else configured_ledger()
    newest, oldest = moment - after, moment - 2 * after
    page_after: HistoryKey | None = None
    while page := store.closed_questions(_REDRIVE_PAGE, page_after):
        page_after = history_key(page[-1])
        for question in page:
            closed = parse_now(question.answered_at) if question.answered_at else None
            if closed is None or closed > newest:
                continue
            if closed < oldest:
                return
            if question.status not in (QuestionStatus.ANSWERED, QuestionStatus.EXPIRED) or (
                question.answer is None
            ):
                continue  # cancelled, or closed by a host that kept the answer itself
            envelope = question.envelope
            key = f"redrive {envelope.thread_id} {envelope.question_id}"
            if ledger.claim(key, 0, SWEEPER) is not None:
                continue  # an earlier sweep (or another sweeper) sent it again already
            try:
                if entry is not None:
                    target = entry
                else:
                    where = json.dumps(envelope.reply_to, sort_keys=True)
                    target = built.get(where) or built.setdefault(where, answer_entry(question))
                resend(
                    envelope.question_id, thread_id=envelope.thread_id, store=store, entry=target
                )
            except Exception as error:  # noqa: BLE001 - one failed send must not stop the sweep
                ledger.release(key, 0, SWEEPER)  # the next sweep tries again
                logger.error(
                    "question %s of thread %s: its answer could not be sent again (%s)",
                    log_safe(envelope.question_id),
                    log_safe(envelope.thread_id),
                    type(error).__name__,
                )
                report.failed.append((question, f"{type(error).__name__}: {error}"))
                continue
            ledger.finish(key, 0, SWEEPER, None)
            report.redriven.append(question)


def _configuration_opts_in() -> bool:
    """Whether a configured announcer entry sets ``lifecycle_events``."""
    try:
        return any(entry.options.get(LIFECYCLE_OPTION) for entry in load_config().announce)
    except AgentWaitError as error:
        logger.warning("agent-wait lifecycle events not published: configuration error (%s)", error)
        return False


def answer_entry(question: StoredQuestion) -> EntryPoint:
    """Where an answer to ``question`` goes.

    Its envelope's ``reply_to`` if that names an entry point, else the configured entry point
    (else the embedded one).
    """
    return reply_entry(question.envelope.reply_to) or default_entry()


def default_store() -> SqliteQuestionStore:
    """The store of the configured inbox: the first ``sqlite`` announcer's file and table.

    Without a configured sqlite announcer, the default inbox file.
    """
    for configured in load_config().announce:
        if configured.use == "sqlite":
            options = {
                k: v for k, v in configured.options.items() if k in ("path", "table", "timeout")
            }
            return SqliteQuestionStore(**options)
    return SqliteQuestionStore()


def configured_store(name: str) -> QuestionStore:
    """The question store of the first configured announcer named ``name`` (its options).

    ``sqlite`` is :func:`default_store`; other names need a plugin registering the store
    (``register_question_stores``): ``postgres``, ``dynamodb``.

    Raises:
        ConfigError: No announcer of that name is configured, or its options are invalid.
        PluginNotFoundError: No installed plugin provides a store of that name.
    """
    if name == "sqlite":
        return default_store()
    for configured in load_config().announce:
        if configured.use == name:
            return question_store(name, **configured.options)
    raise ConfigError(
        f"store: no {name!r} announcer is configured (the store reads what it writes); add an "
        f'announce entry {{"use": "{name}", ...}} or pass the path of a sqlite inbox'
    )
