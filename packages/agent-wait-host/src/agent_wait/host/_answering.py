"""Answering questions and honouring deadlines: the consumer's side, with our own tools.

Both record the close in the question store first, through its compare-and-set, and only the
winner sends: two approvers (or an approver and the sweeper, or two sweepers) racing on one
question send exactly one answer. With a :class:`SendingStore` the close is ``sending`` until
the transport confirms the message; a send whose outcome is unknown (a timeout: the message may
have arrived) keeps it ``sending`` with the exact message, which only :func:`resend` or the
sweeper settle by sending it again. A send refused before anything left reopens the question.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from agent_wait.core._announce import BaseAnnounce, Delivery
from agent_wait.core._answer_schema import answer_problem
from agent_wait.core._audit import answer_facts, audit_log_of, record
from agent_wait.core._config import configured_ledger, load_config
from agent_wait.core._durations import parse_duration
from agent_wait.core._entries import default_entry, reply_entry
from agent_wait.core._entry import EntryPoint
from agent_wait.core._errors import (
    AgentWaitError,
    ConfigError,
    DeliveryFailed,
    NotAnApprover,
)
from agent_wait.core._hooks import Operating, Operation
from agent_wait.core._identity import Identity
from agent_wait.core._ledger import ExecutionLedger
from agent_wait.core._logsafe import log_safe
from agent_wait.core._models import (
    ESCALATED_STEP,
    ESCALATED_TYPE,
    EXPIRED_TYPE,
    LAST_WARNING_STEP,
    LAST_WARNING_TYPE,
    REMINDER_STEP,
    REMINDER_TYPE,
    Answer,
    LifecycleEvent,
    answerer_problem,
    format_utc,
)
from agent_wait.core._plugins import LIFECYCLE_OPTION, question_store
from agent_wait.core._publish import plugin_hooks
from agent_wait.core._quorum import Tally, vote_action
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.core._store import (
    FAILED_DELIVERY,
    RETRIED_DELIVERY,
    FollowUpQuery,
    FollowUpStore,
    HistoryKey,
    QuestionHistory,
    QuestionStatus,
    QuestionStore,
    SendingStore,
    StoredQuestion,
    Transition,
    VotingStore,
    delivery_parts,
    delivery_step,
    history_key,
    identity_keyword,
    parse_now,
)
from agent_wait.host._approvers import may_answer
from agent_wait.host._errors import (
    ActionNotAllowed,
    AlreadyVoted,
    AnswerNotAccepted,
    NothingToResend,
    QuestionClosed,
    QuestionDecided,
    QuestionNotFound,
    QuorumNotSupported,
    SendUnconfirmed,
)
from agent_wait.host._lifecycle import event_announcers, lifecycle_event, publish_events

logger = logging.getLogger("agent_wait.core.answer")

SWEEPER = "sweeper"
RESEND_AFTER = timedelta(minutes=1)
"""How long a question stays ``sending`` before the sweeper sends its message again: a send
still in flight (a slow transport retrying) is left alone until then."""
EXPIRED_STATUS = QuestionStatus.EXPIRED.value


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """What :func:`answer` did.

    Attributes:
        question: The question, closed by this call (``answered``, who, when, the answer); on
            a question with a quorum whose vote this was and did not decide, still open, with
            the vote in ``votes`` (``question.describe_votes()``: "1 of 2 approvals, ...").
        message: The answer message sent: ``{**reply_with, "answer": ...}``; None when this
            was a vote that did not reach the quorum (nothing was sent).
    """

    question: StoredQuestion
    message: dict[str, Any] | None


def default_approver() -> str:
    """The name recorded when none is given: the login name of the process."""
    return Identity.of_process().subject


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
    identity_source: str | None = None,
) -> dict[str, Any]:
    """``{**reply_with, "answer": answer}``, validated as an answer message.

    A question with an ``answer_ttl`` answered at ``answered_at`` gets ``valid_until``
    ``answered_at + answer_ttl``: a host that refuses late answers refuses it once that passed.
    ``answered_by`` names who answered (the host reports it in ``wait.answered``),
    ``identity_source`` how that was established (see :class:`~agent_wait.core.Identity`).
    """
    envelope = question.envelope
    message = {**envelope.reply_with.model_dump(), "answer": answer}
    if envelope.answer_ttl is not None and answered_at is not None:
        ttl = parse_duration(envelope.answer_ttl, "answer_ttl")
        message["valid_until"] = format_utc(parse_now(answered_at) + ttl)
    if answered_by is not None:
        message["answered_by"] = answered_by
        if identity_source is not None:
            message["identity_source"] = identity_source
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


def close_and_send(
    store: QuestionStore,
    entry: EntryPoint,
    answers: list[tuple[StoredQuestion, Any]],
    status: QuestionStatus,
    by: str,
    at: datetime | None,
    source: str | None = None,
) -> tuple[list[StoredQuestion], dict[str, Any]] | StoredQuestion:
    """Close every question, then send one message answering them all.

    The closed questions and the message, or the winner's close of the first question someone
    else closed first (those this call had closed are open again, and nothing was sent).

    Raises:
        SendUnconfirmed: The send's outcome is unknown; the questions stay ``sending``.
    """
    at = parse_now(at)
    message = reply_all(answers, at, by, source)
    if isinstance(store, SendingStore):
        close = _closing_by(store.begin_send, status, by, at, source, message=message)
    else:
        close = _closing_by(store.transition, status, by, at, source)
    outcome = _close_all(answers, close, store.reopen)
    if isinstance(outcome, StoredQuestion):
        return outcome
    _send(store, entry, outcome, message)
    if isinstance(store, SendingStore):
        outcome = [_settled(store, question) for question in outcome]
    log = audit_log_of(store)
    for question, value in zip(outcome, (v for _, v in answers), strict=True):
        envelope = question.envelope
        facts = answer_facts(envelope, by, value, source)
        record(log, envelope.thread_id, envelope.question_id, status.value, facts, at)
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


def _closing_by(
    change: Callable[..., Transition],
    status: QuestionStatus,
    by: str,
    at: datetime,
    source: str | None,
    **more: Any,
) -> Callable[[StoredQuestion, Any], Transition]:
    """The close of one question with its answer by ``change``: a store's transition or begin_send."""
    how = identity_keyword(change, source)

    def close(question: StoredQuestion, value: Any) -> Transition:
        envelope = question.envelope
        return change(
            envelope.thread_id,
            envelope.question_id,
            status,
            by=by,
            answer=value,
            at=at,
            **more,
            **how,
        )

    return close


def _send(
    store: QuestionStore, entry: EntryPoint, closed: list[StoredQuestion], message: dict[str, Any]
) -> None:
    """Send the message answering the ``closed`` questions, opening them again if it failed.

    A :class:`SendingStore` holds them ``sending`` with the message: only a send refused before
    anything left opens them again, and one that may have reached the transport leaves them
    sending, to be sent again (:class:`SendUnconfirmed`). Another store has them closed
    already, and opens them again whatever failed.
    """
    try:
        entry.send(message)
    except BaseException as error:
        # A store that cannot hold the message, or a send refused before anything left (the
        # message, or the connection): open again.
        refused = isinstance(error, (ValidationError, ConnectionRefusedError))
        if refused or not isinstance(store, SendingStore):
            for mine in closed:
                store.reopen(mine)
            raise
        if not isinstance(error, Exception):
            raise
        logger.warning(
            "question %s of thread %s: the send of its answer was not confirmed (%s); left "
            "sending, to be sent again",
            log_safe(closed[0].envelope.question_id),
            log_safe(closed[0].envelope.thread_id),
            type(error).__name__,
        )
        raise SendUnconfirmed(closed, message, error) from error


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
    answers: list[tuple[StoredQuestion, Any]],
    answered_at: datetime,
    answered_by: str | None = None,
    identity_source: str | None = None,
) -> dict[str, Any]:
    """One answer message for questions of one thread: the first's reply, the rest in ``more_answers``.

    ``answered_by`` (and ``identity_source``) is said once, for the whole message.
    """
    (first, value), *rest = answers
    message = reply(first, value, answered_at, answered_by, identity_source)
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
    identity: Identity | None = None,
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

    Before anything is recorded, the person must be allowed to answer (see
    :func:`~agent_wait.host.may_answer`: one of the question's approvers when it names any,
    and not the person who started the run unless its policy allows it), and the answer
    passes :func:`~agent_wait.core.answer_problem`:
    an answer object's ``action`` is one of the question's ``allowed_actions`` (when it states
    any), the answer matches its ``answer_schema`` (when it has one), and it is JSON every
    framework keeps (finite numbers, integers within 64 bits, valid Unicode, at most 64 KiB).

    Args:
        question_id: The question's id.
        action: The action, one of the question's ``allowed_actions`` unless ``force``.
        answer: With ``action``, more fields of the answer object (a note, edited ``args``...);
            without, the whole answer.
        by: A name for who answers, unverified (``identity_source`` ``claimed``); give
            ``identity`` instead when the caller verified the person.
        identity: Who answers, as the caller established them: its ``subject`` is recorded
            and sent as ``answered_by``, its ``source`` as ``identity_source``. Default: the
            process's login name (``cli``), or ``by``.
        thread_id: The thread, needed only if several threads asked the same id.
        force: Send the answer without checking it against ``allowed_actions`` and
            ``answer_schema`` (what no framework keeps is refused anyway; who answers is
            always checked).
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the question's ``reply_to`` when it names an entry
            point, else the configured entry point).
        at: When (default: now).

    Raises:
        QuestionNotFound: No such question, or several threads asked it and no thread was named.
        NotAnApprover: The person may not answer it (the message says why).
        ActionNotAllowed: The action is not allowed and ``force`` is false.
        AnswerNotAccepted: The answer does not match the question's ``answer_schema`` (and
            ``force`` is false), or no framework keeps it; the message names the place in the
            answer, what is wrong, and a valid answer.
        QuestionClosed: Someone or something closed it first (or its answer is being sent); it
            says who, when, and with what.
        SendUnconfirmed: The answer was sent but the entry point did not confirm it; the
            question stays ``sending`` until the same message is sent again.
        ValueError: ``action``, ``answer`` or ``by`` is malformed, ``by`` and ``identity``
            disagree, or no answer is given.
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
    who = answerer(by, identity)
    hooks = plugin_hooks()
    if not hooks.operations:
        return _answer_one(question_id, payload, who, thread_id, force, store, entry, at)
    with Operating(hooks, Operation("answer", thread_id, question_id)) as operating:
        result = operating.result = _answer_one(
            question_id, payload, who, thread_id, force, store, entry, at
        )
    return result


def answerer(by: str | None = None, identity: Identity | None = None) -> Identity:
    """Who answers: ``identity``, else ``by`` as a claimed name, else the process's login name.

    Raises:
        ValueError: ``by`` is not a name an answer message can carry, or names someone other
            than ``identity``.
    """
    if identity is not None:
        if by is not None and by != identity.subject:
            raise ValueError(
                f"by: {by!r} is not the identity's subject {identity.subject!r}; give one of them"
            )
        return identity
    if by is not None:
        return Identity.claimed(check_answerer(by))
    return Identity.of_process()


def _answer_one(
    question_id: str,
    payload: Any,
    who: Identity,
    thread_id: str | None,
    force: bool,
    store: QuestionStore | None,
    entry: EntryPoint | None,
    at: datetime | None,
) -> AnswerResult:
    own_store, own_entry = store is None, entry is None
    store = store if store is not None else default_store()
    try:
        question = _lookup(store, question_id, thread_id)
        if question.envelope.quorum is None:
            done = _answer_many({question_id: payload}, who, thread_id, force, store, entry, at)
            return AnswerResult(done.questions[0], done.message)
        # Who, before the vote: a person who may not answer records nothing, not even a vote.
        if not question.is_open:
            raise QuestionClosed(question)
        _authorize(question, who)
        _check(question, payload, force)
        entry = entry if entry is not None else answer_entry(question)
        try:
            return cast_vote(store, entry, question, payload, who.subject, at, who.source)
        finally:
            if own_entry:
                entry.close()
    finally:
        if own_store:
            store.close()


def _authorize(question: StoredQuestion, who: Identity, doing: str = "answer") -> None:
    """Raise NotAnApprover (and log why) unless ``who`` may answer ``question``."""
    refusal = may_answer(question, who)
    if refusal is not None:
        logger.info(
            "question %s of thread %s: %s by %s refused: %s",
            log_safe(question.envelope.question_id),
            log_safe(question.envelope.thread_id),
            doing,
            log_safe(who.describe()),
            refusal,
        )
        raise NotAnApprover(question, who, refusal, doing)


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
    identity: Identity | None = None,
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
        by: A name for who answers, unverified (as :func:`answer`).
        identity: Who answers, as the caller established them (as :func:`answer`); the
            person must be allowed to answer every one of the questions.
        thread_id: The thread, needed only if several threads asked one of the ids.
        force: Send without checking ``allowed_actions`` and ``answer_schema``.
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the ``reply_to`` of the first question when it names an
            entry point, else the configured entry point).
        at: When (default: now).

    Raises:
        QuestionNotFound: An id is unknown or ambiguous, or the questions are in several threads.
        NotAnApprover: The person may not answer one of them; nothing is recorded.
        ActionNotAllowed: An answer's ``action`` is not allowed and ``force`` is false.
        AnswerNotAccepted: An answer does not match its question's ``answer_schema``, or no
            framework keeps it.
        QuestionClosed: One of them was closed first; it says who, when, and with what.
        SendUnconfirmed: The message was sent but the entry point did not confirm it; the
            questions stay ``sending`` until the same message is sent again.
        ValueError: ``answers`` is empty, an answer is null, or ``by`` is malformed.
    """
    who = answerer(by, identity)
    hooks = plugin_hooks()
    if not hooks.operations:
        return _answer_many(answers, who, thread_id, force, store, entry, at)
    with Operating(hooks, Operation("answer", thread_id)) as operating:
        result = operating.result = _answer_many(answers, who, thread_id, force, store, entry, at)
    return result


def _answer_many(
    answers: Mapping[str, Any],
    who: Identity,
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
    own_store, own_entry = store is None, entry is None
    store = store if store is not None else default_store()
    try:
        questions = _lookup_all(store, list(answers), thread_id)
        pairs = [(q, answers[q.envelope.question_id]) for q in questions]
        for question, value in pairs:
            if not question.is_open:
                raise QuestionClosed(question)
            # Who, before what: a person who may not answer learns nothing of the answer form.
            _authorize(question, who)
            _check(question, value, force)
            if question.envelope.quorum is not None:
                raise AnswerNotAccepted(
                    question,
                    "answer: a question with a quorum takes one vote at a time; answer it on "
                    "its own (answer(), agent-wait answer QUESTION_ID)",
                )
        entry = entry if entry is not None else answer_entry(questions[0])
        try:
            outcome = close_and_send(
                store, entry, pairs, QuestionStatus.ANSWERED, who.subject, at, who.source
            )
        finally:
            if own_entry:
                entry.close()
    finally:
        if own_store:
            store.close()
    if isinstance(outcome, StoredQuestion):
        raise QuestionClosed(outcome)
    return AnswersResult(*outcome)


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
    source = question.identity_source if by is not None else None
    message = reply(question, question.answer, question.answered_at, by, source)
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
    identity: Identity | None = None,
    thread_id: str | None = None,
    store: QuestionStore | None = None,
    at: datetime | None = None,
) -> StoredQuestion:
    """Close a question without answering it: nothing is sent, and the thread keeps waiting.

    For a question that no longer needs an answer (asked by mistake, handled elsewhere); the
    sweeper and approvers then leave it alone. Only a person who may answer the question may
    cancel it (see :func:`answer`): cancelling decides that it gets no answer.

    Args:
        question_id: The question's id.
        by: A name for who cancels, unverified (``claimed``); give ``identity`` instead when the
            caller verified the person.
        identity: Who cancels (default: the process's login name, or ``by``).
        thread_id: The thread, needed only if several threads asked the same id.
        store: The question store (default: the inbox of the configured sqlite announcer).
        at: When (default: now).

    Raises:
        QuestionNotFound: No such question, or several threads asked it and no thread was named.
        NotAnApprover: The person may not answer it, so may not cancel it (the message says why).
        QuestionClosed: It was already answered, expired or cancelled.
        ValueError: ``by`` is malformed, or names someone other than ``identity``.
    """
    who = answerer(by, identity)
    own_store = store is None
    store = store if store is not None else default_store()
    try:
        question = _lookup(store, question_id, thread_id)
        envelope = question.envelope
        if not question.is_open:
            raise QuestionClosed(question)
        _authorize(question, who, "cancel")
        done = store.transition(
            envelope.thread_id,
            envelope.question_id,
            QuestionStatus.CANCELLED,
            by=who.subject,
            at=at,
            **identity_keyword(store.transition, who.source),
        )
    finally:
        if own_store:
            store.close()
    if not done.won:
        raise QuestionClosed(done.question)
    facts = {"by": who.subject, "identity_source": who.source}
    record(audit_log_of(store), envelope.thread_id, envelope.question_id, "cancelled", facts)
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
        events: The lifecycle event deliveries (``wait.expired`` and the follow-ups, including
            the follow-ups tried again), one per opted-in announcer and event; failures are
            here, not raised.
        resent: ``sending`` questions (a send whose outcome was unknown) whose message this
            sweep sent again and settled (``answered`` or ``expired``).
        redriven: Answered questions whose recorded answer this sweep sent again (with
            ``redrive_after``): their runs may have been cut short by a crashed worker.
        reminded: Open questions this sweep reminded of (``wait.reminder``), each once.
        escalated: Open questions this sweep escalated (``wait.escalated``); their
            ``escalated_to`` is set.
        warned: Open questions this sweep gave the last warning (``wait.last_warning``).
        follow_ups_skipped: Open questions whose due follow-ups were not done because the
            store records none (it is not a ``FollowUpStore``).
        published: The lifecycle events this sweep published, follow-ups tried again included
            (``events`` names them by ``event_id``).
    """

    expired: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    overdue: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    failed: list[tuple[StoredQuestion, str]] = field(
        default_factory=list[tuple[StoredQuestion, str]]
    )
    events: list[Delivery] = field(default_factory=list[Delivery])
    resent: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    redriven: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    reminded: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    escalated: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    warned: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    follow_ups_skipped: list[StoredQuestion] = field(default_factory=list[StoredQuestion])
    published: list[LifecycleEvent] = field(default_factory=list[LifecycleEvent])


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

    Then the follow-ups its policy asked for of every open question not yet past its deadline
    (``remind``, ``escalate``, ``last_warning``) that are due: each is recorded on the question
    with the store's compare-and-set (:class:`~agent_wait.core.FollowUpStore`) and published as
    ``wait.reminder``, ``wait.escalated`` or ``wait.last_warning`` by the sweeper that recorded
    it, so once however many sweepers run. Of several reminders due at once (no sweep ran
    meanwhile), only the latest is published. A store that records no follow-ups has none
    done, reported as ``follow_ups_skipped`` and logged.

    Args:
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where to send (default: the question's ``reply_to`` when it names an entry
            point, else the configured entry point).
        now: The time to compare with (default: now).
        by: The name recorded as having closed the questions, and sent as each default's
            ``answered_by``.
        announce: Announcers to tell of each expiry and follow-up: those that opted in to its
            type (:meth:`~agent_wait.core.BaseAnnounce.with_lifecycle_events`) get one event per
            question. None (the default): the configured announcers, of which those whose
            entry sets ``lifecycle_events``; ``()`` for none.
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
        # Only questions that ask for follow-ups have any, failed deliveries included.
        asking = (
            store.open_questions_to_follow_up()
            if isinstance(store, FollowUpQuery)
            else store.open_questions()
        )
        follow_ups = _follow_up_all(store, asking, moment, by, report)
        retries = _failed_deliveries(store, asking, moment)
        due = store.open_questions_past(moment)
        for question in due:
            # A quorum reached whose deciding voter died before sending: its decision, not the
            # default, is the answer.
            decided = decided_answer(question)
            if question.envelope.default is None and decided is None:
                report.overdue.append(question)
                continue
            value, status, closer = (
                (question.envelope.default, QuestionStatus.EXPIRED, by)
                if decided is None
                else (decided[0], QuestionStatus.ANSWERED, decided[1])
            )
            try:
                outcome = close_and_send(
                    store, target_of(question), [(question, value)], status, closer, moment
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
            if not isinstance(outcome, StoredQuestion) and decided is None:
                report.expired.extend(outcome[0])
        # A default settled now, after an unconfirmed send, is announced now.
        expired = [*report.expired, *(q for q in report.resent if q.status == EXPIRED_STATUS)]
        if (expired or follow_ups or retries) and announce is None and not _configuration_opts_in():
            announce = ()  # no entry opted in: the configured announcers are not even built
        if expired and event_announcers(announce, EXPIRED_TYPE):
            follow_ups.extend(
                lifecycle_event(
                    EXPIRED_TYPE,
                    q.envelope.thread_id,
                    q.envelope.question_id,
                    outcome="default_sent",
                    by=q.answered_by,
                    at=parse_now(q.answered_at),
                    envelope=q.envelope,
                )
                for q in expired
            )
        if follow_ups:
            report.published.extend(follow_ups)
            deliveries = publish_events(follow_ups, announce)
            report.events.extend(deliveries)
            if isinstance(store, FollowUpStore):
                _record_failed(store, follow_ups, deliveries, 1, moment)
        if retries and isinstance(store, FollowUpStore):
            _retry_failed(store, retries, moment, by, announce, report)
        if redrive_after is not None:
            _redrive(store, entry, built, moment, redrive_after, ledger, report)
    finally:
        for target in built.values():
            target.close()
        if own_store:
            store.close()
    return report


def decided_answer(question: StoredQuestion) -> tuple[Any, str] | None:
    """The answer and voter of an open question whose votes reached its quorum, else None."""
    counted = question.tally
    if counted is None or counted.decision is None or counted.decided_by is None:
        return None
    return counted.answer, counted.decided_by


def _follow_up_all(
    store: QuestionStore,
    questions: list[StoredQuestion],
    moment: datetime,
    by: str,
    report: SweepReport,
) -> list[LifecycleEvent]:
    """Record and return the follow-ups due on open questions not yet past their deadline."""
    now = format_utc(moment)
    due: list[tuple[StoredQuestion, list[tuple[str, str]]]] = []
    for question in questions:
        follow_up = question.envelope.follow_up
        expires_at = question.envelope.expires_at
        if follow_up is None or (expires_at is not None and expires_at < now):
            continue  # past its deadline, the default decides: nothing left to remind of
        steps = [
            (s, at) for s, at in follow_up.steps() if at <= now and s not in question.follow_ups
        ]
        if steps:
            due.append((question, steps))
    if not due:
        return []
    if not isinstance(store, FollowUpStore):
        logger.warning(
            "%d questions have reminders, escalations or last warnings due, but the store %s "
            "records none (it is not a FollowUpStore): none were sent",
            len(due),
            type(store).__name__,
        )
        report.follow_ups_skipped.extend(q for q, _ in due)
        return []
    events: list[LifecycleEvent] = []
    for question, steps in due:
        envelope = question.envelope
        won: list[str] = []
        for step, _ in steps:
            if store.claim_follow_up(envelope.thread_id, envelope.question_id, step, at=moment):
                won.append(step)
        if not won:
            continue  # another sweeper took them
        done = {**question.follow_ups, **dict.fromkeys(won, now)}
        question = replace(question, follow_ups=done)
        reminders = [s for s, _ in steps if s.startswith(REMINDER_STEP)]
        # Of reminders that fell due together, the latest is sent: by whoever recorded it.
        if reminders and reminders[-1] in won:
            events.append(
                _follow_up_event(REMINDER_TYPE, question, by, moment, "reminded", reminders[-1])
            )
            report.reminded.append(question)
        if ESCALATED_STEP in won:
            events.append(_follow_up_event(ESCALATED_TYPE, question, by, moment, "escalated"))
            report.escalated.append(question)
        if LAST_WARNING_STEP in won:
            events.append(_follow_up_event(LAST_WARNING_TYPE, question, by, moment, "warned"))
            report.warned.append(question)
    return events


def _follow_up_event(
    kind: str,
    question: StoredQuestion,
    by: str,
    moment: datetime,
    outcome: str,
    reminder: str | None = None,
) -> LifecycleEvent:
    envelope = question.envelope
    return lifecycle_event(
        kind,
        envelope.thread_id,
        envelope.question_id,
        outcome=outcome,
        by=by,
        at=moment,
        reminder=None if reminder is None else int(reminder[len(REMINDER_STEP) :]),
        escalated_to=question.escalated_to if kind == ESCALATED_TYPE else None,
        envelope=envelope,
    )


_STEP_EVENTS = {
    ESCALATED_STEP: (ESCALATED_TYPE, "escalated"),
    LAST_WARNING_STEP: (LAST_WARNING_TYPE, "warned"),
}


def _step_of(event: LifecycleEvent) -> str | None:
    """The follow-up step an event publishes (``reminder:2``), None for any other event."""
    if event.type == REMINDER_TYPE and event.reminder is not None:
        return f"{REMINDER_STEP}{event.reminder}"
    return next((step for step, (kind, _) in _STEP_EVENTS.items() if kind == event.type), None)


def _record_failed(
    store: FollowUpStore,
    events: Sequence[LifecycleEvent],
    deliveries: Sequence[Delivery],
    attempt: int,
    moment: datetime,
) -> None:
    """Record each follow-up delivery that failed, so that the next sweep tries it again."""
    by_id = {event.event_id: event for event in events}
    for delivery in deliveries:
        event = by_id.get(delivery.event_id)
        step = None if event is None else _step_of(event)
        if delivery.ok or event is None or step is None:
            continue
        # A DeliveryFailed's message is the announcer's own account, with no secret in it.
        cause = (
            delivery.error
            if isinstance(delivery.exception, DeliveryFailed)
            else type(delivery.exception).__name__
        )
        try:
            key = delivery_step(FAILED_DELIVERY, attempt, delivery.announcer, step)
            store.claim_follow_up(event.thread_id, event.question_id, key, at=moment)
        except Exception as error:  # noqa: BLE001 - the sweep goes on; the failure is logged
            logger.error(
                "%s of question %s of thread %s: not delivered to %s (attempt %d: %s), and the "
                "failure could not be recorded (%s): it will not be tried again",
                event.type,
                log_safe(event.question_id),
                log_safe(event.thread_id),
                delivery.announcer,
                attempt,
                cause,
                type(error).__name__,
            )
            continue
        logger.warning(
            "%s of question %s of thread %s: not delivered to %s (attempt %d: %s); the next "
            "sweep tries again",
            event.type,
            log_safe(event.question_id),
            log_safe(event.thread_id),
            delivery.announcer,
            attempt,
            cause,
        )


def _failed_deliveries(
    store: QuestionStore, questions: list[StoredQuestion], moment: datetime
) -> list[tuple[StoredQuestion, str, str, int]]:
    """``(question, step, announcer, attempt)`` of each failed follow-up delivery to try again.

    Only on open questions not past their deadline (there, the default decides), and only the
    latest attempt of each, when it failed and no sweeper took the next one yet.
    """
    if not isinstance(store, FollowUpStore):
        return []
    now = format_utc(moment)
    found: list[tuple[StoredQuestion, str, str, int]] = []
    for question in questions:
        expires_at = question.envelope.expires_at
        if expires_at is not None and expires_at < now:
            continue
        for key in question.follow_ups:
            parts = delivery_parts(key)
            if parts is None or parts[0] != FAILED_DELIVERY:
                continue
            _, attempt, announcer, step = parts
            if delivery_step(RETRIED_DELIVERY, attempt + 1, announcer, step) in question.follow_ups:
                continue
            found.append((question, step, announcer, attempt + 1))
    return found


def _retry_failed(
    store: FollowUpStore,
    retries: list[tuple[StoredQuestion, str, str, int]],
    moment: datetime,
    by: str,
    announce: Sequence[BaseAnnounce] | None,
    report: SweepReport,
) -> None:
    """Deliver each failed follow-up again to the announcer that failed it, by one sweeper."""
    for question, step, name, attempt in retries:
        kind, outcome = (
            (REMINDER_TYPE, "reminded") if step.startswith(REMINDER_STEP) else _STEP_EVENTS[step]
        )
        targets = [a for a in event_announcers(announce, kind) if a.name == name][:1]
        if not targets:
            continue  # not configured in this sweeper: left to one that has it
        envelope = question.envelope
        key = delivery_step(RETRIED_DELIVERY, attempt, name, step)
        if not store.claim_follow_up(envelope.thread_id, envelope.question_id, key, at=moment):
            continue  # another sweeper took this attempt, or the question closed
        reminder = step if kind == REMINDER_TYPE else None
        event = _follow_up_event(kind, question, by, moment, outcome, reminder)
        deliveries = publish_events([event], targets)
        report.published.append(event)
        report.events.extend(deliveries)
        if all(d.ok for d in deliveries):
            logger.info(
                "%s of question %s of thread %s: delivered to %s on attempt %d",
                kind,
                log_safe(envelope.question_id),
                log_safe(envelope.thread_id),
                name,
                attempt,
            )
        else:
            _record_failed(store, [event], deliveries, attempt, moment)


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


# --- questions with a quorum ---------------------------------------------------------------------
# Every vote is appended with the store's compare-and-set on the number of votes; the vote that
# reaches the quorum closes the question through the ordinary close (compare-and-set on
# ``open``) and sends one answer message. Of two final votes at once, one is recorded and
# decides; the other reads the question again and is told it is already decided.

_ATTEMPTS = 64
"""Compare-and-set rounds before giving up: each lost round means another vote was recorded."""


def _tally(question: StoredQuestion) -> Tally:
    counted = question.tally
    if counted is None:  # only questions with a quorum get here
        raise AssertionError(f"question {question.envelope.question_id} has no quorum")
    return counted


def cast_vote(
    store: QuestionStore,
    entry: EntryPoint,
    question: StoredQuestion,
    value: Any,
    by: str,
    at: datetime | None,
    source: str | None = None,
) -> AnswerResult:
    """Record ``by``'s vote; the vote that reaches the quorum closes the question and sends.

    ``source`` is how ``by`` was established (the identity's ``source``): kept in the vote,
    the audit entry and, for the deciding vote, the answer message's ``identity_source``.

    Returns:
        The question and, when this vote decided it, the message sent (else None).

    Raises:
        QuorumNotSupported: The store does not record votes.
        AnswerNotAccepted: ``value`` is not an approve or reject answer object.
        AlreadyVoted: ``by`` already has a vote that counts.
        QuestionDecided: Earlier votes already decided it.
        QuestionClosed: It was closed (answered, expired, cancelled) first.
    """
    if not isinstance(store, VotingStore):
        raise QuorumNotSupported(
            f"question {question.envelope.question_id} has a quorum, and the store "
            f"{type(store).__name__} does not record votes (VotingStore); use the sqlite, "
            "PostgreSQL or DynamoDB store"
        )
    if vote_action(value) is None:
        raise AnswerNotAccepted(
            question,
            "answer.action: a question with a quorum takes votes: "
            '{"action": "approve"} (with edited "args" if any) or {"action": "reject"}',
        )
    moment = parse_now(at)
    vote: dict[str, Any] = {"by": by, "at": format_utc(moment), "answer": value}
    if source is not None:
        vote["identity_source"] = source
    for _ in range(_ATTEMPTS):
        if not question.is_open:
            raise QuestionClosed(question)
        counted = _tally(question)
        if counted.decision is not None:
            _finish_abandoned(store, entry, question, counted, moment)
            raise QuestionDecided(question)
        if counted.counted(by):
            raise AlreadyVoted(question, by)
        envelope = question.envelope
        done = store.record_vote(
            envelope.thread_id, envelope.question_id, vote, seen=len(question.votes)
        )
        question = done.question
        if done.won:
            break
    else:
        raise AgentWaitError(
            f"question {question.envelope.question_id}: the vote of {by} lost {_ATTEMPTS} "
            "compare-and-set rounds to other votes; nothing recorded, try again"
        )
    envelope = question.envelope
    facts = answer_facts(envelope, by, value, source)
    record(audit_log_of(store), envelope.thread_id, envelope.question_id, "vote", facts, moment)
    decided = _tally(question)
    if decided.decision is None:
        return AnswerResult(question, None)
    outcome = close_and_send(
        store, entry, [(question, decided.answer)], QuestionStatus.ANSWERED, by, moment, source
    )
    if isinstance(outcome, StoredQuestion):
        raise QuestionClosed(outcome)
    return AnswerResult(outcome[0][0], outcome[1])


def _finish_abandoned(
    store: QuestionStore,
    entry: EntryPoint,
    question: StoredQuestion,
    counted: Tally,
    moment: datetime,
) -> None:
    """Send a decision whose voter died before sending it (its vote older than RESEND_AFTER).

    The close is the ordinary compare-and-set on ``open``: if the deciding voter is still
    sending after all, exactly one of the two sends.
    """
    last = question.votes[-1] if question.votes else None
    if last is None or parse_now(str(last["at"])) > moment - RESEND_AFTER:
        return
    by = counted.decided_by or str(last["by"])
    # The decider's own vote says how they were identified, when it was recorded with a source.
    sources = [v.get("identity_source") for v in question.votes if v["by"] == by]
    source = sources[-1] if sources and isinstance(sources[-1], str) else None
    close_and_send(
        store, entry, [(question, counted.answer)], QuestionStatus.ANSWERED, by, moment, source
    )
