"""The OpenAI Agents SDK host in one call, on core's host state machine: load, run or resume, store.

A start message runs ``Runner.run(agent, input)``; a run that parks returns its pending calls
as ``interruptions``, and its ``RunState`` (``to_string()``) is stored with the questions
under the thread id. An answer restores the state (``RunState.from_string``), applies
``state.approve(item)`` or ``state.reject(item, rejection_message=...)`` to its call, and
resumes with ``Runner.run(agent, state)``. Each answer resumes its own call: the SDK keeps the
other pending calls pending, and the resumed run reports them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, Unpack, cast

from agents import Agent, RunConfig, Runner, RunResult, RunResultStreaming, RunState

import agent_wait.host as core_host
from agent_wait.core import Announce, Answer, Handled, InvalidAnswer, Question, StartMessage
from agent_wait.host import (
    AsyncStreamed,
    AsyncStreamingHost,
    MessageOptions,
    QuestionNotPending,
    Ran,
    Streamed,
    StreamingHost,
    Waiting,
)
from agent_wait.host.adapter import IN_DOUBT_ACTIONS
from agent_wait.openai_agents._history import RunStore, ThreadRecord
from agent_wait.openai_agents._questions import Decision, decision, questions_in
from agent_wait.openai_agents._records import (
    Approved,
    InDoubt,
    approving,
    done_approving,
    guard,
    in_doubt_in,
)

_T = TypeVar("_T")


@dataclass(frozen=True)
class Thread:
    """A loaded thread: its id and stored record (None for a new thread)."""

    thread_id: str
    record: ThreadRecord | None


def _input(thread: Thread, message: StartMessage) -> str | list[Any]:
    """The start message's input, after the conversation of the thread's finished runs."""
    given: Any = message.input
    if isinstance(given, str):
        items: list[Any] = [{"role": "user", "content": given}]
    elif isinstance(given, list):
        items = cast("list[Any]", given)
    else:
        raise ValueError(
            f"input: expected text or a list of input items for the OpenAI Agents SDK, got {given!r}"
        )
    earlier = [] if thread.record is None else thread.record.conversation
    if not earlier and isinstance(given, str):
        return given
    return [*earlier, *items]


def _record(thread: Thread, result: RunResult | RunResultStreaming) -> ThreadRecord:
    """What to store after a run: its state while parked, its conversation once finished."""
    questions = tuple(questions_in(result))
    asked = list(thread.record.asked) if thread.record is not None else []
    asked += [q.question_id for q in questions if q.question_id not in asked]
    if questions:
        return ThreadRecord(
            state=result.to_state().to_string(), questions=questions, asked=tuple(asked)
        )
    return ThreadRecord(asked=tuple(asked), conversation=list(result.to_input_list()))


@dataclass(frozen=True)
class InDoubtParked:
    """The result of a resume that stopped before an approved call cut short earlier.

    Nothing ran: the thread waits on ``questions``, the in-doubt one among them.
    """

    questions: list[Question]


def _in_doubt_record(
    thread: Thread, doubt: InDoubt, replies: dict[str, dict[str, Any]], answered: set[str]
) -> ThreadRecord:
    """The thread's record parked on ``doubt``'s question instead of its call's approval."""
    record = thread.record
    assert record is not None  # only a parked thread resumes
    question = doubt.question
    kept = [
        q
        for q in record.questions
        if q.question_id != doubt.call_id and q.question_id not in answered
    ]
    doubts = {i: d for i, d in record.doubts.items() if i not in answered}
    doubts[question.question_id] = {"call_id": doubt.call_id, "attempt": doubt.attempt}
    asked = [
        *record.asked,
        *([] if question.question_id in record.asked else [question.question_id]),
    ]
    return ThreadRecord(
        state=record.state,
        questions=(*kept, question),
        asked=tuple(asked),
        doubts=doubts,
        replies=replies,
    )


class _Base:
    holds_answers = False

    def __init__(
        self,
        agent: Agent[Any],
        runs: RunStore,
        *,
        run_config: RunConfig | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.agent = agent
        self.runs = runs
        guard(agent)
        self._options: dict[str, Any] = {}
        if run_config is not None:
            self._options["run_config"] = run_config
        if max_turns is not None:
            self._options["max_turns"] = max_turns

    def waiting(self, thread: Thread) -> Waiting:
        return Waiting(() if thread.record is None else thread.record.questions)

    def check(self, thread: Thread, answer: Answer) -> Any:
        if thread.record is not None and answer.question_id in thread.record.doubts:
            given = answer.answer
            action = (
                cast("Mapping[str, Any]", given).get("action")
                if isinstance(given, Mapping)
                else None
            )
            if action not in IN_DOUBT_ACTIONS:
                raise InvalidAnswer(
                    "answer.action: an in-doubt question takes {'action': 'yes'} (it happened; "
                    "its result may be given as answer.result) or {'action': 'no'} (it did not: "
                    f"it runs once), got {given!r}"
                )
            return dict(cast("Mapping[str, Any]", given))
        return decision(answer.answer)

    def questions_in(self, result: RunResult | InDoubtParked) -> list[Question]:
        if isinstance(result, InDoubtParked):
            return result.questions
        return questions_in(result)

    def _approved(
        self, thread: Thread, answers: Mapping[str, Any]
    ) -> tuple[dict[str, Decision], Approved]:
        """The decisions on pending calls ``answers`` make, and what the resume approves.

        An in-doubt answer is the approval of its call again, with the answer kept for the
        guarded tool (:mod:`agent_wait.openai_agents._records`).
        """
        record = thread.record
        doubts = {} if record is None else record.doubts
        replies = {k: dict(v) for k, v in ({} if record is None else record.replies).items()}
        decisions: dict[str, Decision] = {}
        for question_id, value in answers.items():
            doubt = doubts.get(question_id)
            if doubt is None:
                decisions[question_id] = cast("Decision", value)
                continue
            replies.setdefault(doubt["call_id"], {})[str(doubt["attempt"])] = value
            decisions[doubt["call_id"]] = (True, None)
        calls = frozenset(i for i, (approve, _) in decisions.items() if approve)
        return decisions, Approved(thread.thread_id, calls, replies)

    def _parked_in_doubt(
        self, thread: Thread, doubt: InDoubt, approved: Approved, answers: Mapping[str, Any]
    ) -> InDoubtParked:
        replies = {k: dict(v) for k, v in approved.replies.items()}
        record = _in_doubt_record(thread, doubt, replies, set(answers))
        self.runs.save(thread.thread_id, record)
        return InDoubtParked(list(record.questions))

    def _asked(self, thread: Thread, question_id: str) -> bool:
        return thread.record is not None and question_id in thread.record.asked

    async def _start(self, thread: Thread, message: StartMessage) -> RunResult:
        result = await Runner.run(self.agent, _input(thread, message), **self._options)
        return self._saved(thread, result)

    async def _resume(
        self, thread: Thread, answers: Mapping[str, Any]
    ) -> RunResult | InDoubtParked:
        decisions, approved = self._approved(thread, answers)
        state = await self._decided(thread, decisions)
        # Nothing is saved before the run returns: a run that raises leaves the stored state
        # (and the question) as they were, and the next answer starts from them again.
        token = approving(approved)
        try:
            result = await Runner.run(self.agent, state, **self._options)
        except Exception as error:
            doubt = in_doubt_in(error)
            if doubt is None:
                raise
            return self._parked_in_doubt(thread, doubt, approved, answers)
        finally:
            done_approving(token)
        return self._saved(thread, result)

    async def _decided(
        self, thread: Thread, answers: Mapping[str, Decision]
    ) -> RunState[Any, Agent[Any]]:
        """The stored state restored, with ``answers`` applied to their pending calls."""
        if thread.record is None or thread.record.state is None:
            raise QuestionNotPending(f"thread {thread.thread_id!r} is not parked")
        state = await RunState.from_string(self.agent, thread.record.state)
        pending = {item.call_id: item for item in state.get_interruptions()}
        for question_id, (approve, message) in answers.items():
            item = pending.get(question_id)
            if item is None:
                raise QuestionNotPending(f"call {question_id!r} is no longer pending")
            if approve:
                state.approve(item)
            else:
                state.reject(item, rejection_message=message)
        return state

    async def _streamed(
        self,
        thread: Thread,
        run_input: str | list[Any] | RunState[Any, Agent[Any]],
        resumed: tuple[Approved, Mapping[str, Any]] | None = None,
    ) -> AsyncGenerator[Any]:
        """``Runner.run_streamed``: the SDK's events, then the stored run as :class:`Ran`."""
        # The run's task copies the context when it starts: the approvals are set around that.
        token = approving(resumed[0]) if resumed is not None else None
        try:
            result = Runner.run_streamed(self.agent, run_input, **self._options)
        finally:
            if token is not None:
                done_approving(token)
        events = cast("AsyncGenerator[Any]", result.stream_events())
        try:
            async for event in events:
                yield event
        except Exception as error:
            # stream_events() re-raises what the run raised: nothing is saved then.
            doubt = in_doubt_in(error)
            if doubt is None or resumed is None:
                raise
            yield Ran(self._parked_in_doubt(thread, doubt, *resumed))
            return
        except GeneratorExit:
            # The consumer stopped early: the run stops with it, and the SDK's stream is closed
            # now rather than whenever (and on whatever loop) it is collected.
            result.cancel()
            await events.aclose()
            raise
        yield Ran(self._saved(thread, result))

    async def _streamed_resume(
        self, thread: Thread, answers: Mapping[str, Any]
    ) -> AsyncGenerator[Any]:
        decisions, approved = self._approved(thread, answers)
        state = await self._decided(thread, decisions)
        # Closed with this generator: a consumer that stops early stops the run now.
        async with contextlib.aclosing(self._streamed(thread, state, (approved, answers))) as run:
            async for event in run:
                yield event

    def _saved(self, thread: Thread, result: RunResult | RunResultStreaming) -> Any:
        self.runs.save(thread.thread_id, _record(thread, result))
        return result


class _Owned:
    """A thread's host loop; collected with the thread's local data when the thread ends."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        # Streamed runs under way: their async generators live on the loop between two events.
        self.streams = 0
        weakref.finalize(self, self.loop.close)


_THREAD_LOOP = threading.local()


def _owned() -> _Owned:
    """This thread's host loop, kept from one message to the next and closed with the thread.

    A loop per message (``asyncio.run``) also shuts its worker threads down, so every
    ``asyncio.to_thread`` of the next message (the execution ledger's claim and finish)
    started a thread anew: a third of what a resume adds. One loop per thread, rather than
    one for the whole process, keeps each thread's runs in that thread, as before.
    """
    owned: _Owned | None = getattr(_THREAD_LOOP, "owned", None)
    if owned is None or owned.loop.is_closed():
        owned = _THREAD_LOOP.owned = _Owned()
    return owned


_HANDLE_IN_A_LOOP = (
    "handle_message() cannot be called from a running event loop: await ahandle_message() there"
)
_STREAM_IN_A_LOOP = (
    "stream_message() cannot be called or iterated in a running event loop: iterate "
    "astream_message() there"
)


def _in_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run(coroutine: Coroutine[Any, Any, _T], refusal: str = _HANDLE_IN_A_LOOP) -> _T:
    # The sync host runs the SDK's async runner on a loop it owns, as Runner.run_sync does.
    if _in_a_loop():
        coroutine.close()
        raise RuntimeError(refusal)
    owned = _owned()
    loop = owned.loop
    task = loop.create_task(coroutine)
    try:
        return loop.run_until_complete(task)
    finally:
        if not task.done():  # interrupted (KeyboardInterrupt): nothing of it runs later
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(task)
        if not owned.streams:
            loop.run_until_complete(loop.shutdown_asyncgens())


_END = object()


async def _next(events: AsyncGenerator[Any]) -> Any:
    return await anext(events, _END)


async def _closed(events: AsyncGenerator[Any]) -> None:
    await events.aclose()


def _iterate(events: AsyncGenerator[Any]) -> Generator[Any]:
    """``events`` as a sync generator: each item awaited on this thread's host loop in turn.

    The run advances only while the caller asks for its next item, as under ``async for``;
    closing the generator (a consumer that stops early) closes ``events`` on the loop.
    """
    owned = _owned()
    owned.streams += 1
    try:
        while (item := _run(_next(events), _STREAM_IN_A_LOOP)) is not _END:
            yield item
    finally:
        owned.streams -= 1
        _run(_closed(events), _STREAM_IN_A_LOOP)


class _SyncHost(_Base, StreamingHost[Thread, RunResult | InDoubtParked]):
    """The :class:`~agent_wait.host.StreamingHost` of an agent and its run store."""

    def load(self, thread_id: str) -> Thread:
        return Thread(thread_id, self.runs.load(thread_id))

    def asked(self, thread: Thread, question_id: str) -> bool:
        return self._asked(thread, question_id)

    def start(self, thread: Thread, message: StartMessage) -> RunResult:
        return _run(self._start(thread, message))

    def resume(self, thread: Thread, answers: Mapping[str, Any]) -> RunResult | InDoubtParked:
        return _run(self._resume(thread, answers))

    def stream_start(self, thread: Thread, message: StartMessage) -> Generator[Any]:
        return _iterate(self._streamed(thread, _input(thread, message)))

    def stream_resume(self, thread: Thread, answers: Mapping[str, Any]) -> Generator[Any]:
        return _iterate(self._streamed_resume(thread, answers))


class _AsyncHost(_Base, AsyncStreamingHost[Thread, RunResult | InDoubtParked]):
    """The :class:`~agent_wait.host.AsyncHost` of an agent and its run store."""

    async def load(self, thread_id: str) -> Thread:
        return Thread(thread_id, await asyncio.to_thread(self.runs.load, thread_id))

    async def asked(self, thread: Thread, question_id: str) -> bool:
        return self._asked(thread, question_id)

    async def start(self, thread: Thread, message: StartMessage) -> RunResult:
        return await self._start(thread, message)

    async def resume(self, thread: Thread, answers: Mapping[str, Any]) -> RunResult | InDoubtParked:
        return await self._resume(thread, answers)

    def astream_start(self, thread: Thread, message: StartMessage) -> AsyncIterator[Any]:
        return self._streamed(thread, _input(thread, message))

    def astream_resume(self, thread: Thread, answers: Mapping[str, Any]) -> AsyncIterator[Any]:
        return self._streamed_resume(thread, answers)


def handle_message(
    agent: Agent[Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    runs: RunStore,
    run_config: RunConfig | None = None,
    max_turns: int | None = None,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Handle one inbound message for an OpenAI Agents SDK agent: run or resume, store, publish.

    A start message (``{"thread_id", "input"}``) runs the agent on ``input`` (text, or a list
    of input items), after the conversation of the thread's finished runs; on a parked thread
    it runs nothing and publishes the pending questions again. An answer
    (``{"thread_id", "question_id", "answer"}``) to a pending call restores the stored
    ``RunState``, approves or rejects that call and resumes the run. The run is stored before
    anything is published; duplicate, late and unknown answers run nothing.

    Args:
        agent: The agent the runs start from (the same agent graph restores their states).
        message: The inbound message (a dict, JSON text or bytes, or a parsed message).
        announce: Where questions are published (None: the configured default).
        runs: Where each thread's run is kept (:class:`SqliteRuns`, :class:`InMemoryRuns`).
        run_config: The SDK's ``RunConfig`` for every run and resume.
        max_turns: The SDK's ``max_turns`` for every run and resume.
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see
            :class:`~agent_wait.host.MessageOptions`.

    Returns:
        The :class:`~agent_wait.core.Handled` outcome; its ``result`` is the ``RunResult``.
    """
    host = _SyncHost(agent, runs, run_config=run_config, max_turns=max_turns)
    return core_host.handle_message(host, message, announce, **options)


async def ahandle_message(
    agent: Agent[Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    runs: RunStore,
    run_config: RunConfig | None = None,
    max_turns: int | None = None,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Async :func:`handle_message`: the SDK's ``Runner.run`` awaited on the running loop."""
    host = _AsyncHost(agent, runs, run_config=run_config, max_turns=max_turns)
    return await core_host.ahandle_message(host, message, announce, **options)


def stream_message(
    agent: Agent[Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    runs: RunStore,
    run_config: RunConfig | None = None,
    max_turns: int | None = None,
    **options: Unpack[MessageOptions],
) -> Streamed:
    """:func:`handle_message` with the run streamed (``Runner.run_streamed``), iterated.

    ``for event in run: ...`` yields the SDK's stream events as the run makes them (only a
    start or a resume streams); the run is stored and its questions published before the
    iteration ends, and ``run.handled`` is then the outcome. The run goes on the same event
    loop as :func:`handle_message`'s (one per calling thread) and advances only as you
    iterate. Stopping early (``break``) cancels the run and stores and publishes nothing: an
    answer's question is still pending. Arguments as :func:`handle_message`; like it, not for
    use inside a running event loop (iterate :func:`astream_message` there).

    Example::

        run = stream_message(agent, message, announce, runs=runs)
        for event in run:
            send_to_ui(event)
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    # Refused here, not once iterated: then a resume would be reported as a failed one.
    if _in_a_loop():
        raise RuntimeError(_STREAM_IN_A_LOOP)
    host = _SyncHost(agent, runs, run_config=run_config, max_turns=max_turns)
    return core_host.stream_message(host, message, announce, **options)


def astream_message(
    agent: Agent[Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    runs: RunStore,
    run_config: RunConfig | None = None,
    max_turns: int | None = None,
    **options: Unpack[MessageOptions],
) -> AsyncStreamed:
    """:func:`ahandle_message` with the run streamed (``Runner.run_streamed``).

    ``async for event in run: ...`` yields the SDK's stream events as the run makes them (only
    a start or a resume streams); the run is stored and its questions published before the
    iteration ends, and ``run.handled`` is then the outcome. Arguments as
    :func:`handle_message`.
    """
    host = _AsyncHost(agent, runs, run_config=run_config, max_turns=max_turns)
    return core_host.astream_message(host, message, announce, **options)
