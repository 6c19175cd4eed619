"""The host state machine every framework's ``handle_message`` runs, written once.

:func:`plan` decides what one inbound message does to a thread (start, resume, hold, republish,
or refuse it as a duplicate, an unknown question or an invalid answer) from what the framework
reports; it performs no IO itself. It is a generator that yields the IO it needs as
:data:`Step` values (load the thread, look in its history, run, hold an answer, publish) and receives
each result, like the transport ``Exchange``. :func:`handle_message` and :func:`ahandle_message`
perform those steps on a :class:`Host` or an :class:`AsyncHost`. A framework supplies only what
differs: what its thread waits on, whether it asked a question before, its answer checks, its
start and resume, and ``questions_in``.
"""

from __future__ import annotations

import difflib
import inspect
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, Protocol, Self, TypedDict, TypeVar, Unpack, cast, overload

from agent_wait.core import _hooks
from agent_wait.core._announce import PublishReport
from agent_wait.core._canonical import answer_digest
from agent_wait.core._config import one_configuration
from agent_wait.core._errors import AgentWaitError, AnnounceFailed, InvalidAnswer
from agent_wait.core._logsafe import log_safe
from agent_wait.core._models import (
    ANSWER_REFUSED_TYPE,
    ANSWERED_TYPE,
    Answer,
    LifecycleEvent,
    Question,
    StartMessage,
    parse_message,
)
from agent_wait.core._publish import (
    Announce,
    Clock,
    apublish,
    plugin_hooks,
    publish,
    started_by,
    utc_now,
)
from agent_wait.core._reports import Handled, Outcome
from agent_wait.core._storable import storable_problem
from agent_wait.core._trust import AnswerTrust, configured_trust
from agent_wait.host._audit_trail import audit_handled, handling
from agent_wait.host._errors import QuestionNotPending
from agent_wait.host._lifecycle import (
    apublish_events,
    event_announcers,
    lifecycle_event,
    publish_events,
)

logger = logging.getLogger("agent_wait.host")

ThreadT = TypeVar("ThreadT")
ResultT = TypeVar("ResultT")
_ThreadIn = TypeVar("_ThreadIn", contravariant=True)
_ResultIn = TypeVar("_ResultIn", contravariant=True)

Step = tuple[str, tuple[Any, ...]]
"""One piece of IO :func:`plan` needs: a host method name (or ``"publish"``) and its arguments."""

Message = Answer | StartMessage | Mapping[str, Any] | str | bytes


class MessageOptions(TypedDict, total=False):
    """How one inbound message is handled: keyword arguments every framework's entry points take.

    ``handle_message(graph, message, announce, strict=True, trust=trust)``, in any framework
    package; ``serve`` passes them on. A name not listed here is refused with ``TypeError``.
    """

    strict: bool
    """Raise :class:`~agent_wait.core.AnnounceFailed` after every announcer was tried if a
    delivery failed (the run is saved), so the host leaves the message unacknowledged; its
    redelivery republishes what the thread waits on. Default: False."""
    reply_to: Mapping[str, Any] | None
    """A hint for where answers go, copied into every envelope."""
    clock: Clock | None
    """Returns "now" (aware); ``expires_at`` is measured from it."""
    trust: AnswerTrust | None
    """What an answer must satisfy before anything runs: a signed token, not late, an allowed
    action (None: from ``AGENT_WAIT_ANSWER_SECRETS``, ``AGENT_WAIT_ANSWER_EXPIRED`` and
    ``AGENT_WAIT_ANSWER_STRICT_ACTIONS``; unset, none). With secrets, every ``reply_with``
    published carries a ``token``."""


def _checked(options: Mapping[str, Any], caller: str) -> MessageOptions:
    """``options`` as :class:`MessageOptions`; a name it does not list raises ``TypeError``."""
    refuse_unknown(options, MessageOptions.__optional_keys__, caller)
    return cast("MessageOptions", options)


def refuse_unknown(options: Iterable[str], known: Collection[str], caller: str) -> None:
    """Raise ``TypeError`` for the first name of ``options`` not in ``known``.

    What Python says of an unexpected keyword argument, with the closest known name: for an
    entry point that takes ``**options`` and passes some of them on.

    Args:
        options: The names given (a mapping's keys).
        known: The names the entry point takes.
        caller: The entry point's name, for the message.

    Raises:
        TypeError: ``caller() got an unexpected keyword argument 'stirct'; did you mean
            'strict'?``
    """
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}{hint}")


@dataclass(frozen=True)
class Waiting:
    """What a thread waits on, as its framework reports it before anything runs.

    Attributes:
        questions: The pending questions, in publish order (empty: the thread is not parked).
        held: Answers already stored for some of them, by question id (only for a framework
            that resumes once every pending question is answered).
    """

    questions: Sequence[Question] = ()
    held: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @cached_property
    def ids(self) -> list[str]:
        """The pending question ids, in publish order."""
        # Cached: the plan reads them once per answer entry and per check.
        return [q.question_id for q in self.questions]

    @property
    def unanswered(self) -> list[Question]:
        """The pending questions without a held answer: what the thread waits on."""
        return [q for q in self.questions if q.question_id not in self.held]

    @classmethod
    def deferred(
        cls, ids: Sequence[str], build: Callable[[], Sequence[Question]], **fields: Any
    ) -> Self:
        """What a thread waits on, its questions built by ``build`` only when first read.

        The state machine reads the ids for every answer, the questions themselves only for
        the trust settings that check them and to publish them again: a resume with none of
        those builds no question. ``ids`` are the questions' ids in publish order.
        """
        waiting = cls(_Deferred(len(ids), build), **fields)
        # Filled in for the cached ``ids`` property (frozen: set in its dict, as it caches).
        waiting.__dict__["ids"] = list(ids)
        return waiting


class _Deferred(Sequence[Question]):
    """Questions built by ``build`` when one is first read (see :meth:`Waiting.deferred`)."""

    def __init__(self, count: int, build: Callable[[], Sequence[Question]]) -> None:
        self._count = count
        self._build = build

    @cached_property
    def _built(self) -> Sequence[Question]:
        return self._build()

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Question: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Question]: ...
    def __getitem__(self, index: int | slice) -> Question | Sequence[Question]:
        return self._built[index]


class _HostBase(Protocol[_ThreadIn, _ResultIn]):
    holds_answers: bool = False
    """True if the framework resumes only with every pending question answered: an answer to
    one of several is held (:meth:`Host.hold`) until the last arrives. False: each answer
    resumes its own question."""

    def waiting(self, thread: _ThreadIn) -> Waiting:
        """What the loaded thread waits on (no IO)."""
        ...

    def check(self, thread: _ThreadIn, answer: Answer) -> Any:
        """The value to resume (or hold) with, or :class:`InvalidAnswer` naming the problem.

        Called only for a pending question, before anything is saved (no IO). Raise for an
        answer the framework would choke on or save and be poisoned by.
        """
        ...

    def questions_in(self, result: _ResultIn) -> list[Question]:
        """The questions a run parked on (empty when it finished)."""
        ...

    def unfinished(self, thread: _ThreadIn) -> bool:
        """Whether the loaded thread has work left from a run that stopped before its end (no IO).

        Only asked of a thread that is not parked. True (a step saved, the next not run: a
        worker killed between them) makes a redelivered answer or start message continue the
        run (:meth:`Host.proceed`) instead of running nothing. A host that cannot tell keeps
        the default, False.
        """
        return False

    def forgets(self, thread: _ThreadIn) -> str | None:
        """Why the loaded thread may not know a question it asked, or None (no IO).

        A thread whose state lives in a process's memory (no persistence configured) forgets
        its questions when that process ends: an answer then finds nothing to resume, and is
        reported ``unknown_question`` with this reason (and a WARNING) instead of as a stray
        answer. The default, None: the thread's state is durable.
        """
        return None


class Host(_HostBase[ThreadT, ResultT], Protocol[ThreadT, ResultT]):
    """What a framework supplies to :func:`handle_message` (one instance per message is fine)."""

    def load(self, thread_id: str) -> ThreadT:
        """The thread's state (a graph snapshot, a stored history, an agent on its session)."""
        ...

    def asked(self, thread: ThreadT, question_id: str) -> bool:
        """Whether the thread asked ``question_id`` before (it is not pending now).

        True makes the answer a duplicate, False an unknown question; either way nothing runs.
        """
        ...

    def hold(self, thread: ThreadT, answers: Mapping[str, Any]) -> None:
        """Store ``answers`` (question id to checked value) until the rest arrive.

        Only called when :attr:`holds_answers` is true; a host that sets it implements this.
        """
        raise TypeError(f"{type(self).__name__} sets holds_answers but does not implement hold()")

    def start(self, thread: ThreadT, message: StartMessage) -> ResultT:
        """Run the agent for a start message on a thread that is not parked; save the run."""
        ...

    def proceed(self, thread: ThreadT) -> ResultT:
        """Continue the run that stopped before its end (see :meth:`unfinished`); save the run.

        Only called when :meth:`unfinished` is true; a host that can say so implements this.
        """
        raise TypeError(f"{type(self).__name__} reports unfinished runs but has no proceed()")

    def resume(self, thread: ThreadT, answers: Mapping[str, Any]) -> ResultT:
        """Resume with ``answers`` (question id to checked value, in publish order); save the run.

        Raises:
            InvalidAnswer: The framework refused the answer before saving anything.
            QuestionNotPending: The question was answered meanwhile; nothing ran.
            Exception: The run failed (a tool or hook that cannot handle the answer). Any
                exception but an :class:`~agent_wait.core.AgentWaitError` is reported as
                :attr:`Outcome.RESUME_FAILED`. Undo first
                what the framework kept of the answer, so that a thread that did not move past
                the question still takes another answer (:attr:`Outcome.RESUME_FAILED`).
        """
        ...


class AsyncHost(_HostBase[ThreadT, ResultT], Protocol[ThreadT, ResultT]):
    """What a framework supplies to :func:`ahandle_message`: :class:`Host` with async IO."""

    async def load(self, thread_id: str) -> ThreadT:
        """See :meth:`Host.load`."""
        ...

    async def asked(self, thread: ThreadT, question_id: str) -> bool:
        """See :meth:`Host.asked`."""
        ...

    async def hold(self, thread: ThreadT, answers: Mapping[str, Any]) -> None:
        """See :meth:`Host.hold`."""
        raise TypeError(f"{type(self).__name__} sets holds_answers but does not implement hold()")

    async def start(self, thread: ThreadT, message: StartMessage) -> ResultT:
        """See :meth:`Host.start`."""
        ...

    async def resume(self, thread: ThreadT, answers: Mapping[str, Any]) -> ResultT:
        """See :meth:`Host.resume`."""
        ...

    async def proceed(self, thread: ThreadT) -> ResultT:
        """See :meth:`Host.proceed`."""
        raise TypeError(f"{type(self).__name__} reports unfinished runs but has no proceed()")


def plan(
    host: Host[Any, Any] | AsyncHost[Any, Any],
    message: Answer | StartMessage,
    *,
    trust: AnswerTrust | None = None,
    clock: Clock | None = None,
) -> Generator[Step, Any, Handled]:
    """The decision for one message, as a generator of the IO it needs.

    Each yielded :data:`Step` is ``(name, args)``: ``"publish"`` with ``(questions, thread_id)``,
    or the host method to call (``load``, ``asked``, ``hold``, ``start``, ``resume``,
    ``proceed``). Send back
    its result, or throw in its exception; the generator returns the :class:`Handled`.
    :func:`handle_message` and :func:`ahandle_message` are the two runners. ``trust`` is what
    an answer must satisfy before anything runs (None: nothing more than being pending);
    ``clock`` is "now" for its expiry checks.
    """
    thread_id = message.thread_id
    thread = yield ("load", (thread_id,))
    waiting = host.waiting(thread)
    if isinstance(message, StartMessage):
        if waiting.ids:
            detail = (
                f"thread {thread_id!r} is parked on {waiting.ids}; nothing ran, its pending "
                "questions were published again under the same ids"
            )
            return (
                yield from _publish(Outcome.REPUBLISHED, waiting.unanswered, message, detail=detail)
            )
        if _unfinished(host, thread):
            return (yield from _proceed(host, thread, message))
        result = yield ("start", (thread, message))
        return (yield from _publish(Outcome.STARTED, host.questions_in(result), message, result))
    handled = yield from _answer(host, thread, waiting, message, trust or _NO_TRUST, clock)
    _answered(message, handled)
    return handled


_NO_TRUST = AnswerTrust()


def _unfinished(host: Host[Any, Any] | AsyncHost[Any, Any], thread: Any) -> bool:
    # getattr: a host written before unfinished runs were asked about does not define it.
    unfinished = getattr(host, "unfinished", None)
    return bool(unfinished(thread)) if callable(unfinished) else False


def _forgets(host: Host[Any, Any] | AsyncHost[Any, Any], thread: Any) -> str | None:
    # getattr: optional, like unfinished().
    forgets = getattr(host, "forgets", None)
    reason: object = forgets(thread) if callable(forgets) else None
    return reason if isinstance(reason, str) and reason else None


def _proceed(
    host: Host[Any, Any] | AsyncHost[Any, Any], thread: Any, message: Answer | StartMessage
) -> Generator[Step, Any, Handled]:
    """Continue a run a crash cut short: the redelivery of the message whose run it was."""
    logger.warning(
        "agent-wait host: thread %s has an unfinished run (a worker stopped after a saved "
        "step); continuing it",
        log_safe(message.thread_id),
    )
    result = yield ("proceed", (thread,))
    detail = (
        f"thread {message.thread_id!r} was not parked and had a run left unfinished; it was "
        "continued from its last saved step"
    )
    return (
        yield from _publish(
            Outcome.CONTINUED, host.questions_in(result), message, result, detail=detail
        )
    )


def _answer(
    host: Host[Any, Any] | AsyncHost[Any, Any],
    thread: Any,
    waiting: Waiting,
    answer: Answer,
    trust: AnswerTrust,
    clock: Clock | None,
) -> Generator[Step, Any, Handled]:
    entries = answer.entries()
    thread_id = answer.thread_id
    for entry in entries:
        if trust.signing and (problem := trust.authenticate(entry)):
            # The reason names a key id at most: never a secret, never the answer's content.
            logger.warning(
                "agent-wait host: answer refused as unauthorized (thread %s, question %s): %s",
                log_safe(thread_id),
                log_safe(entry.question_id),
                problem,
            )
            detail = f"{_where(entry)}: {problem}; nothing ran, the question stays answerable"
            return Handled(Outcome.UNAUTHORIZED, detail=detail)
    # In a message answering several questions, those no longer pending are left out; the
    # message is a duplicate (or unknown) only when none is pending.
    pending = [
        e for e in entries if e.question_id in waiting.ids and e.question_id not in waiting.held
    ]
    if not pending:
        return (yield from _not_pending(host, thread, waiting, entries[0]))
    answers: dict[str, Any] = {}
    resumed_detail = None
    # The whole message is refused with any of its answers: every one stays pending.
    refusing = tuple(e.question_id for e in pending)
    for entry in pending:
        vetted = _vet(host, thread, waiting, entry, trust, clock)
        if isinstance(vetted, Handled):
            if vetted.outcome is Outcome.STALE_APPROVAL:
                return (
                    yield from _publish(
                        vetted.outcome, waiting.unanswered, answer, detail=vetted.detail
                    )
                )
            if vetted.outcome is Outcome.INVALID_ANSWER:
                return replace(vetted, refused=refusing)
            return vetted
        value, late_detail = vetted
        answers[entry.question_id] = value
        resumed_detail = resumed_detail or late_detail
    left_out = [e.question_id for e in entries if e not in pending]
    if left_out:
        note = f"answers to {left_out} left out: no longer pending (already answered, or late)"
        resumed_detail = f"{resumed_detail}; {note}" if resumed_detail else note
    first = pending[0].question_id
    # This message's answers only: those held before were announced when they arrived.
    answered = tuple(i for i in waiting.ids if any(e.question_id == i for e in pending))
    where = (
        _where(pending[0])
        if len(pending) == 1
        else f"questions {list(answers)} of thread {thread_id!r}"
    )
    if host.holds_answers:
        held = {**waiting.held, **answers}
        answers = {i: held[i] for i in waiting.ids if i in held}
        remaining = [i for i in waiting.ids if i not in held]
        if remaining:
            yield ("hold", (thread, answers))
            named = first if len(pending) == 1 else [e.question_id for e in pending]
            detail = (
                f"answer to {named!r} held; thread {thread_id!r} resumes once {remaining} "
                "are answered too"
            )
            return Handled(Outcome.HELD, detail=detail, answered=answered)
    else:
        # Publish order, as the framework reports its questions.
        answers = {i: answers[i] for i in waiting.ids if i in answers}
    try:
        result = yield ("resume", (thread, answers))
    except QuestionNotPending:
        detail = f"{where} was answered meanwhile by another handler; nothing ran"
        return Handled(Outcome.DUPLICATE, detail=detail)
    except InvalidAnswer as error:
        return replace(_refused(where, error), refused=refusing)
    except AgentWaitError:
        raise  # agent-wait's own refusals (routing, sizes) are the application's to fix
    except Exception as error:  # noqa: BLE001 - reported as resume_failed, with the error
        # The host's resume undid what the framework kept of the answer; whether the thread
        # still waits on the question is read back from the framework.
        after = yield ("load", (thread_id,))
        still = host.waiting(after).ids
        failed = _resume_failed(where, error, pending=first in still)
        return replace(failed, refused=tuple(i for i in refusing if i in still))
    return (
        yield from _publish(
            Outcome.RESUMED,
            host.questions_in(result),
            answer,
            result,
            detail=resumed_detail,
            answered=answered,
        )
    )


def _where(answer: Answer) -> str:
    return f"question {answer.question_id!r} of thread {answer.thread_id!r}"


def _not_pending(
    host: Host[Any, Any] | AsyncHost[Any, Any], thread: Any, waiting: Waiting, answer: Answer
) -> Generator[Step, Any, Handled]:
    """An answer to a question the thread does not wait on: a duplicate or an unknown question."""
    thread_id, question_id, where = answer.thread_id, answer.question_id, _where(answer)
    if question_id in waiting.held:
        detail = f"{where} is already answered (the first answer stands); nothing ran"
        return (yield from _publish(Outcome.DUPLICATE, waiting.unanswered, answer, detail=detail))
    if not (yield ("asked", (thread, question_id))):
        lost = _forgets(host, thread)
        if lost:
            # Not a stray answer, perhaps: the question may have been asked by a process now gone.
            logger.warning(
                "agent-wait host: thread %s does not know question %s: %s",
                log_safe(thread_id),
                log_safe(question_id),
                lost,
            )
            detail = f"thread {thread_id!r} does not know question {question_id!r}: {lost}"
        else:
            detail = f"thread {thread_id!r} never asked question {question_id!r}"
        return Handled(Outcome.UNKNOWN_QUESTION, detail=f"{detail}; nothing ran")
    if not waiting.ids and _unfinished(host, thread):
        # The redelivery of an answer whose run a crash cut short after a saved step.
        return (yield from _proceed(host, thread, answer))
    # The questions the thread waits on now go out again: this may be the redelivery of an
    # answer whose resume parked on the next question and whose strict publish failed.
    # Consumers deduplicate on question_id.
    state = f"it waits on {waiting.ids}" if waiting.ids else "it is not parked"
    detail = f"{where} is no longer pending (already answered, or late; {state}); nothing ran"
    return (yield from _publish(Outcome.DUPLICATE, waiting.unanswered, answer, detail=detail))


def _vet(
    host: Host[Any, Any] | AsyncHost[Any, Any],
    thread: Any,
    waiting: Waiting,
    answer: Answer,
    trust: AnswerTrust,
    clock: Clock | None,
) -> Handled | tuple[Any, str | None]:
    """The value to resume a pending question with (and a note if late), or why not (no IO)."""
    where = _where(answer)
    late_detail = None
    if trust.signing or trust.expired != "accept" or trust.strict_actions:
        # Only these read the question itself, which a host may build only when it is read.
        question = waiting.questions[waiting.ids.index(answer.question_id)]
        held = _held_to_trust(answer, question, trust, clock, where)
        if isinstance(held, Handled):
            return held
        answer, late_detail = held
    try:
        # Every framework saves the answer with the run: one its store cannot keep unchanged
        # would fail (or come back altered) after the tool ran.
        problem = storable_problem(answer.answer)
        if problem:
            raise InvalidAnswer(problem)
        return host.check(thread, answer), late_detail
    except InvalidAnswer as error:
        return _refused(where, error)


def _held_to_trust(
    answer: Answer, question: Question, trust: AnswerTrust, clock: Clock | None, where: str
) -> Handled | tuple[Answer, str | None]:
    """The answer as the trust settings let it through (and a note if late), or why not."""
    if trust.signing and trust.stale(answer, question):
        detail = (
            f"{where} changed since the answer's reply_with was published (another call or "
            "other arguments); nothing ran, the question as it is now stays answerable"
        )
        return Handled(Outcome.STALE_APPROVAL, detail=detail)
    if trust.expired != "accept" and trust.undated(answer, question):
        # Published before the policy was on, or answered without copying reply_with: unsigned,
        # such a deadline could be forged anyway, and signed, a stripped one fails the token.
        logger.warning(
            "agent-wait host: answer to question %s of thread %s carries no expires_at; its "
            "lateness cannot be checked, accepted",
            log_safe(answer.question_id),
            log_safe(answer.thread_id),
        )
    if trust.expired != "accept" and (late := trust.late(answer, (clock or utc_now)())):
        if trust.expired == "refuse":
            detail = f"{where}: the answer came too late ({late}); nothing ran"
            return Handled(Outcome.EXPIRED, detail=detail)
        answer = answer.model_copy(update={"answer": question.policy.default})
        return answer, f"{where}: the answer came too late ({late}); resumed with its default"
    if trust.strict_actions and (problem := trust.strict_problem(answer.answer, question)):
        return _refused(where, InvalidAnswer(problem))
    return answer, None


def _resume_failed(where: str, error: Exception, *, pending: bool) -> Handled:
    # The message is acknowledged on this outcome: redelivering an answer that fails the same way
    # every time would block the thread's queue group for good. Only the exception type is
    # logged (its text may quote the answer).
    state = (
        "the question is still pending and takes another answer"
        if pending
        else "the thread had moved past the question, which is no longer pending"
    )
    logger.warning("%s: the resume raised %s; %s", where, type(error).__name__, state)
    return Handled(
        Outcome.RESUME_FAILED,
        detail=f"{where}: the resume raised {type(error).__name__}: {error}; {state}",
        error=error,
    )


def _refused(where: str, error: InvalidAnswer) -> Handled:
    return Handled(
        Outcome.INVALID_ANSWER,
        detail=f"{where}: the answer was refused before anything was saved: {error}",
    )


def _publish(
    outcome: Outcome,
    questions: Sequence[Question],
    message: Answer | StartMessage,
    result: Any = None,
    *,
    detail: str | None = None,
    answered: tuple[str, ...] = (),
) -> Generator[Step, Any, Handled]:
    if not questions and outcome not in (Outcome.STARTED, Outcome.RESUMED, Outcome.CONTINUED):
        return Handled(outcome, result, PublishReport(), detail)
    try:
        report = yield ("publish", (list(questions), message.thread_id))
    except AnnounceFailed as failed:
        # The outcome stands (a resume was saved): observers hear of it before the host leaves
        # the message unacknowledged.
        if isinstance(message, Answer):
            _answered(message, Handled(outcome, result, failed.report, detail))
        raise
    return Handled(outcome, result, report, detail, answered=answered)


def _answered(answer: Answer, handled: Handled) -> None:
    if not handled.ran:
        # Ids and the outcome only: the detail may quote the answer, which is the consumer's content.
        logger.info(
            "agent-wait host: %s (thread %s, question %s)",
            handled.outcome.value,
            log_safe(answer.thread_id),
            log_safe(answer.question_id),
        )
    caller = plugin_hooks().handled
    if caller is not None:
        # Through pluggy, so wrapper impls (tracing, timing) work; each impl is contained.
        _hooks.answer_handled(caller, answer, handled)


class _IO:
    """Performs one step: publishes, or calls the host method it names."""

    def __init__(
        self, host: object, publisher: Callable[..., Any], starter: str | None = None
    ) -> None:
        self.host = host
        self.publisher = publisher
        # Who started the run, from its start message: questions published by the step record it.
        self.starter = starter

    def __call__(self, step: Step) -> Any:
        name, args = step
        call = self.publisher if name == "publish" else getattr(self.host, name)
        if self.starter is None:
            return call(*args)
        with started_by(self.starter):
            result = call(*args)
        return self._within(result) if inspect.isawaitable(result) else result

    async def _within(self, pending: Awaitable[Any]) -> Any:
        # An async step runs when awaited, in the awaiting context: the starter is set there.
        with started_by(self.starter):
            return await pending


class _Driver:
    """Steps through :func:`plan` for a runner, which only performs each step's IO."""

    def __init__(self, steps: Generator[Step, Any, Handled]) -> None:
        self._steps = steps
        self._sent: Any = None
        self._error: Exception | None = None

    def next(self) -> Step | Handled:
        """The next step, or what the plan returned."""
        try:
            if self._error is None:
                return self._steps.send(self._sent)
            return self._steps.throw(self._error)
        except StopIteration as done:
            handled: Handled = done.value
            return handled

    def send(self, result: Any) -> None:
        self._sent, self._error = result, None

    def run(self, io: Callable[[Step], Any]) -> Handled:
        """Perform every step with ``io`` until the plan returns."""
        while not isinstance(step := self.next(), Handled):
            try:
                self.send(io(step))
            except Exception as error:  # noqa: BLE001 - thrown into the plan, which decides
                self.throw(error)
        return step

    async def arun(self, io: Callable[[Step], Any]) -> Handled:
        """:meth:`run` with an ``io`` whose steps are awaited."""
        while not isinstance(step := self.next(), Handled):
            try:
                self.send(await io(step))
            except Exception as error:  # noqa: BLE001 - thrown into the plan, which decides
                self.throw(error)
        return step

    def throw(self, error: Exception) -> None:
        self._sent, self._error = None, error


def _parse(message: Message) -> Answer | StartMessage:
    return message if isinstance(message, Answer | StartMessage) else parse_message(message)


def _prepared(
    caller: str,
    host: object,
    message: Message,
    publisher: Callable[..., Any],
    announce: Announce,
    given: Mapping[str, Any],
) -> tuple[_IO, Answer | StartMessage, AnswerTrust, Clock | None]:
    """What every runner starts from: its IO (publishing as configured), message, trust, clock.

    An option :class:`MessageOptions` does not list raises ``TypeError``.
    """
    options = _checked(given, caller)
    trust = options.get("trust")
    trust = configured_trust() if trust is None else trust
    parsed = _parse(message)
    io = _IO(
        host,
        partial(
            publisher,
            announce=announce,
            reply_to=options.get("reply_to"),
            clock=options.get("clock"),
            strict=options.get("strict", False),
            trust=trust,
        ),
        parsed.started_by if isinstance(parsed, StartMessage) else None,
    )
    handling(parsed)  # an approved body that runs now is recorded against this answer
    return io, parsed, trust, options.get("clock")


def handle_message(
    host: Host[Any, Any],
    message: Message,
    announce: Announce = None,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Run :func:`plan` for one inbound message, performing its steps on ``host``.

    Args:
        host: The framework's :class:`Host`.
        message: The inbound message: a dict, JSON text or bytes (validated with
            :func:`~agent_wait.core.parse_message`), or a parsed message.
        announce: Where questions are published (None: the configured default).
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see :class:`MessageOptions`.

    Raises:
        pydantic.ValidationError: The message is neither an answer nor a start message.
        AnnounceFailed: ``strict`` and a delivery failed.
        TypeError: An option :class:`MessageOptions` does not list.
    """
    with one_configuration():
        io, parsed, trust, clock = _prepared(
            "handle_message", host, message, publish, announce, options
        )
        step = _Driver(plan(host, parsed, trust=trust, clock=clock)).run(io)
        audit_handled(step, parsed)
        events = _answered_events(step, parsed, announce, clock)
        return replace(step, events=publish_events(events, announce)) if events else step


async def ahandle_message(
    host: AsyncHost[Any, Any],
    message: Message,
    announce: Announce = None,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Async :func:`handle_message`: awaits the host's IO, announcers delivered concurrently."""
    with one_configuration():
        io, parsed, trust, clock = _prepared(
            "ahandle_message", host, message, apublish, announce, options
        )
        step = await _Driver(plan(host, parsed, trust=trust, clock=clock)).arun(io)
        audit_handled(step, parsed)
        events = _answered_events(step, parsed, announce, clock)
        return replace(step, events=await apublish_events(events, announce)) if events else step


@dataclass(frozen=True)
class Ran:
    """The last item a streaming host's run yields: the run's result.

    What ``start`` or ``resume`` would have returned; :func:`plan` reads the parked questions
    from it.
    """

    result: Any


class StreamingHost(Host[ThreadT, ResultT], Protocol[ThreadT, ResultT]):
    """A :class:`Host` whose runs can stream the framework's events (see :func:`stream_message`)."""

    def stream_start(self, thread: ThreadT, message: StartMessage) -> Iterator[Any]:
        """:meth:`Host.start` as a stream: the framework's events, then one :class:`Ran`."""
        ...

    def stream_resume(self, thread: ThreadT, answers: Mapping[str, Any]) -> Iterator[Any]:
        """:meth:`Host.resume` as a stream: the framework's events, then one :class:`Ran`.

        Raises as :meth:`Host.resume` does (possibly after some events were yielded).
        """
        ...


class AsyncStreamingHost(AsyncHost[ThreadT, ResultT], Protocol[ThreadT, ResultT]):
    """An :class:`AsyncHost` whose runs can stream (see :func:`astream_message`)."""

    def astream_start(self, thread: ThreadT, message: StartMessage) -> AsyncIterator[Any]:
        """See :meth:`StreamingHost.stream_start`."""
        ...

    def astream_resume(self, thread: ThreadT, answers: Mapping[str, Any]) -> AsyncIterator[Any]:
        """See :meth:`StreamingHost.stream_resume`."""
        ...


_STREAMED_STEPS = frozenset({"start", "resume"})


class Streamed:
    """The events of one streamed message, then its :class:`Handled`.

    Iterate it once (``for event in run: ...``): the run happens while you do, and the
    questions it parked on are published before the iteration ends. ``handled`` is then set.
    """

    def __init__(self, events: Generator[Any, None, Handled]) -> None:
        self._events = events
        self._handled: Handled | None = None

    def __iter__(self) -> Generator[Any]:
        self._handled = yield from self._events

    @property
    def handled(self) -> Handled:
        """What ``handle_message`` would have returned.

        Raises:
            RuntimeError: The events were not iterated to the end.
        """
        if self._handled is None:
            raise RuntimeError("iterate the streamed run to its end before reading handled")
        return self._handled


class AsyncStreamed:
    """Async :class:`Streamed`: ``async for event in run: ...``, then ``run.handled``."""

    def __init__(self, events: Callable[[list[Handled]], AsyncIterator[Any]]) -> None:
        self._events = events
        self._out: list[Handled] = []

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events(self._out)

    @property
    def handled(self) -> Handled:
        """See :attr:`Streamed.handled`."""
        if not self._out:
            raise RuntimeError("iterate the streamed run to its end before reading handled")
        return self._out[0]


@contextmanager
def _closing(stream: Iterator[Any]) -> Generator[Iterator[Any]]:
    """The host's stream, closed when its consumer stops early.

    A ``for`` loop left by a ``break`` or an exception does not close the iterator it was
    over; the run's own clean-up (the framework's ``finally``) must run then, not whenever the
    iterator is collected.
    """
    try:
        yield stream
    finally:
        close = getattr(stream, "close", None)
        if callable(close):
            close()


@asynccontextmanager
async def _aclosing(stream: AsyncIterator[Any]) -> AsyncGenerator[AsyncIterator[Any]]:
    """Async :func:`_closing`.

    An async generator left early is otherwise closed by the event loop's finalizer: later, and
    outside the task that ran it.
    """
    try:
        yield stream
    finally:
        close = getattr(stream, "aclose", None)
        if callable(close):
            await cast("Callable[[], Awaitable[object]]", close)()


def _streamed_result(item: Any, result: list[Any]) -> bool:
    if isinstance(item, Ran):
        result[:] = [item.result]
        return True
    return False


def stream_message(
    host: StreamingHost[Any, Any],
    message: Message,
    announce: Announce = None,
    **options: Unpack[MessageOptions],
) -> Streamed:
    """:func:`handle_message` for a host that streams: the framework's events as the run goes.

    The same decisions, checks and publishing as :func:`handle_message`; only a start or a
    resume streams (the other outcomes yield no events). Arguments as :func:`handle_message`.

    Returns:
        A :class:`Streamed`: iterate it for the events; ``handled`` is the outcome.
    """
    io, parsed, trust, clock = _prepared(
        "stream_message", host, message, publish, announce, options
    )

    def events() -> Generator[Any, None, Handled]:
        driver = _Driver(plan(host, parsed, trust=trust, clock=clock))
        while not isinstance(step := driver.next(), Handled):
            name, args = step
            try:
                if name in _STREAMED_STEPS:
                    result: list[Any] = []
                    with _closing(getattr(host, f"stream_{name}")(*args)) as stream:
                        for item in stream:
                            if not _streamed_result(item, result):
                                yield item
                    driver.send(_only_result(result))
                else:
                    driver.send(io(step))
            except Exception as error:  # noqa: BLE001 - thrown into the plan, which decides
                driver.throw(error)
        audit_handled(step, parsed)
        answered = _answered_events(step, parsed, announce, clock)
        return replace(step, events=publish_events(answered, announce)) if answered else step

    return Streamed(events())


def astream_message(
    host: AsyncStreamingHost[Any, Any],
    message: Message,
    announce: Announce = None,
    **options: Unpack[MessageOptions],
) -> AsyncStreamed:
    """Async :func:`stream_message`: iterate the result with ``async for``."""
    io, parsed, trust, clock = _prepared(
        "astream_message", host, message, apublish, announce, options
    )

    async def events(out: list[Handled]) -> AsyncIterator[Any]:
        driver = _Driver(plan(host, parsed, trust=trust, clock=clock))
        while not isinstance(step := driver.next(), Handled):
            name, args = step
            try:
                if name in _STREAMED_STEPS:
                    result: list[Any] = []
                    async with _aclosing(getattr(host, f"astream_{name}")(*args)) as stream:
                        async for item in stream:
                            if not _streamed_result(item, result):
                                yield item
                    driver.send(_only_result(result))
                else:
                    driver.send(await io(step))
            except Exception as error:  # noqa: BLE001 - thrown into the plan, which decides
                driver.throw(error)
        audit_handled(step, parsed)
        answered = _answered_events(step, parsed, announce, clock)
        out.append(
            replace(step, events=await apublish_events(answered, announce)) if answered else step
        )

    return AsyncStreamed(events)


def _only_result(result: list[Any]) -> Any:
    if not result:
        raise TypeError("the host's stream ended without a Ran(result) item")
    return result[0]


def _answered_events(
    handled: Handled, message: Answer | StartMessage, announce: Announce, clock: Clock | None
) -> list[LifecycleEvent]:
    """The lifecycle events of a handled message, for the announcers that opted in to them.

    One ``wait.answered`` per question it answered, or one ``wait.answer_refused`` per
    question whose answer the host refused. ``by`` is the message's ``answered_by``: who the sender says answered, or None.
    """
    if handled.refused and isinstance(message, Answer):
        return _refused_events(handled, message, announce, clock)
    if not handled.answered or not event_announcers(announce, ANSWERED_TYPE):
        return []
    at = (clock or utc_now)()
    by = message.answered_by if isinstance(message, Answer) else None
    return [
        lifecycle_event(
            ANSWERED_TYPE, message.thread_id, i, outcome=handled.outcome.value, by=by, at=at
        )
        for i in handled.answered
    ]


def _refused_events(
    handled: Handled, message: Answer, announce: Announce, clock: Clock | None
) -> list[LifecycleEvent]:
    """One ``wait.answer_refused`` per refused question: why, and a digest of its answer.

    A question store that recorded that answer opens the question again with the reason.
    """
    if not event_announcers(announce, ANSWER_REFUSED_TYPE):
        return []
    at = (clock or utc_now)()
    answers = {entry.question_id: entry.answer for entry in message.entries()}
    return [
        lifecycle_event(
            ANSWER_REFUSED_TYPE,
            message.thread_id,
            i,
            outcome=handled.outcome.value,
            by=message.answered_by,
            at=at,
            reason=handled.detail,
            answer_digest=answer_digest(answers[i]),
        )
        for i in handled.refused
    ]
