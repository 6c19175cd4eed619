"""``handle_message`` for Google ADK: a thread is an ADK session, an answer a function response."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import uuid
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, Unpack, cast

from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from agent_wait.core import Announce, Answer, Handled, Question, StartMessage
from agent_wait.google_adk._adapter import (
    CONFIRMATION,
    Request,
    answered_in,
    confirmation,
    questions_in,
    requests_in,
    response_part,
)
from agent_wait.google_adk._once import install
from agent_wait.host import (
    AsyncStreamed,
    AsyncStreamingHost,
    Message,
    MessageOptions,
    Ran,
    Streamed,
    StreamingHost,
    Waiting,
)
from agent_wait.host import ahandle_message as _ahandle
from agent_wait.host import astream_message as _astream
from agent_wait.host import handle_message as _handle
from agent_wait.host import stream_message as _stream

T = TypeVar("T")

DEFAULT_USER = "agent-wait"
"""The ADK ``user_id`` threads run under unless ``user_id=`` says otherwise."""


RECORD_KEY = "agent_wait_questions"
"""The session state key of what the session asked and answered (see :func:`_record_of`)."""

_WINDOW = 16
"""How many recent events a load reads: a session's record covers the events before them."""


@dataclass
class _Thread:
    """A loaded session: every confirmation it asked and answered, the recent events' requests.

    ``uncovered`` counts the events its record does not cover (all of them without a record):
    a run that would leave more than half the window uncovered writes the record again.
    """

    thread_id: str
    session: Session | None
    asked: list[str] = field(default_factory=list[str])
    answered: set[str] = field(default_factory=set[str])
    requests: dict[str, Request] = field(default_factory=dict[str, Request])
    pending: list[str] = field(default_factory=list[str])
    uncovered: int = 0


def _record_of(session: Session) -> tuple[list[str], set[str], str] | None:
    """The session's record: the ids it asked (in order) and answered, through which event.

    The host keeps it in the session's state (``RECORD_KEY``), written with an event's
    ``state_delta`` as ADK persists any state: it holds every confirmation of the events up
    to and including the event ``through``. None for a session without one (or another shape).
    """
    record: object = session.state.get(RECORD_KEY)
    if not isinstance(record, Mapping):
        return None
    fields = cast("Mapping[str, Any]", record)
    asked, answered, through = fields.get("asked"), fields.get("answered"), fields.get("through")
    if not (isinstance(asked, list) and isinstance(answered, list) and isinstance(through, str)):
        return None
    return (
        [str(i) for i in cast("list[Any]", asked)],
        {str(i) for i in cast("list[Any]", answered)},
        through,
    )


def _read(thread_id: str, session: Session | None, complete: bool) -> _Thread | None:
    """The thread from ``session``'s events (all of them if ``complete``, else the recent ones).

    None when recent events are not enough: no record, a record through an event older than
    them, or a pending confirmation asked before them.
    """
    if session is None:
        return _Thread(thread_id, None)
    events = session.events
    record = _record_of(session)
    through = (
        None
        if record is None
        else next((i for i in range(len(events) - 1, -1, -1) if events[i].id == record[2]), None)
    )
    if record is None or through is None:
        if not complete:
            return None
        asked, answered, tail = [], set[str](), events
    else:
        asked, answered, tail = list(record[0]), set(record[1]), events[through + 1 :]
    asked += [i for i in requests_in(tail) if i not in asked]
    answered |= answered_in(tail)
    requests = requests_in(events)
    pending = [i for i in asked if i not in answered]
    if any(i not in requests for i in pending):
        return None
    return _Thread(thread_id, session, asked, answered, requests, pending, len(tail))


@dataclass(frozen=True)
class _Turn:
    """What one ``runner.run_async`` is given: a new message, and the invocation it resumes.

    ``invocation_id`` is set only for a resumable app (``ResumabilityConfig(is_resumable=True)``),
    where ADK resumes an invocation by its id: the one that asked the answered confirmation, or
    the one a worker stopped in (``message`` None then: ADK goes on from its own events).
    """

    message: types.Content | None
    invocation_id: str | None = None


def _covered(
    thread: _Thread, message: types.Content | None, events: list[Event]
) -> dict[str, Any] | None:
    """The record of ``thread`` after a run of ``message`` made ``events``: None if not needed.

    Written only when the events it would leave uncovered pass half the window a load reads,
    through the run's last event: so a session is read from its recent events alone.
    """
    stored = [e for e in events if not e.partial]
    if not stored or thread.uncovered + 1 + len(stored) <= _WINDOW // 2:
        return None
    asked = [*thread.asked]
    asked += [i for i in requests_in(stored) if i not in asked]
    answered = thread.answered | answered_in(stored)
    answered |= {
        p.function_response.id
        for p in (message.parts if message is not None else None) or ()
        if p.function_response is not None
        and p.function_response.name == CONFIRMATION
        and p.function_response.id
    }
    return {"asked": asked, "answered": sorted(answered), "through": stored[-1].id}


def _cut_short(thread: _Thread) -> list[types.Part]:
    """The confirmations a run was given and never got past: the session ends on their answer.

    ADK appends the answer to the session before it runs the confirmed tool, and the tool's
    response after it returns: a session whose last event is still the answer is one whose
    worker stopped in between (inside the tool, or before it). Empty for any other session.
    """
    if thread.session is None or thread.pending or not thread.session.events:
        return []
    last = thread.session.events[-1]
    if last.author != "user":
        return []
    parts = last.content.parts if last.content is not None else None
    return [
        p
        for p in parts or ()
        if p.function_response is not None and p.function_response.name == CONFIRMATION
    ]


def _unasked(events: list[Event]) -> list[Event]:
    """The tool responses of a run that request a confirmation ADK did not ask for.

    ADK turns a confirmation a tool requests into an ``adk_request_confirmation`` call, except
    when the tool requests it while running again on a confirmation (an execution record in
    doubt asks a person this way): the run then ends on a response that asks nothing.
    """
    asked = {
        str(cast("Mapping[str, Any]", call.args.get("originalFunctionCall") or {}).get("id"))
        for event in events
        for call in event.get_function_calls()
        if call.name == CONFIRMATION and call.args
    }
    return [
        event
        for event in events
        if event.actions.requested_tool_confirmations
        and not set(event.actions.requested_tool_confirmations) <= asked
    ]


def _request_event(response: Event, calls: Mapping[str, types.FunctionCall]) -> Event:
    """The ``adk_request_confirmation`` event ADK makes for ``response``'s requests."""
    parts: list[types.Part] = []
    ids: set[str] = set()
    for call_id, wanted in response.actions.requested_tool_confirmations.items():
        original = calls.get(call_id)
        if original is None:
            continue
        request_id = f"adk-{uuid.uuid4()}"
        args = {
            "originalFunctionCall": original.model_dump(exclude_none=True, by_alias=True),
            "toolConfirmation": wanted.model_dump(by_alias=True, exclude_none=True),
        }
        parts.append(
            types.Part(
                function_call=types.FunctionCall(name=CONFIRMATION, id=request_id, args=args)
            )
        )
        ids.add(request_id)
    return Event(
        invocation_id=response.invocation_id,
        author=response.author,
        branch=response.branch,
        content=types.Content(parts=parts, role="model"),
        long_running_tool_ids=ids,
    )


def _content(value: Any) -> types.Content:
    if isinstance(value, types.Content):
        return value
    if isinstance(value, str):
        return types.Content(role="user", parts=[types.Part(text=value)])
    if isinstance(value, Mapping):
        return types.Content.model_validate(value)
    raise TypeError(
        f"input: expected text or an ADK Content (as a mapping), got {type(value).__name__}"
    )


class _AsyncAdkHost(AsyncStreamingHost[_Thread, list[Event]]):
    """:class:`agent_wait.host.AsyncHost` over an ADK ``Runner`` and its session service."""

    holds_answers = False

    def __init__(self, runner: Runner, user_id: str) -> None:
        install(runner)
        self.runner = runner
        self.user_id = user_id
        config = runner.resumability_config
        self.resumable = config is not None and config.is_resumable

    async def load(self, thread_id: str) -> _Thread:
        # The recent events and the session's record first: a session of any length is then
        # read without its earlier events; one without a usable record is read whole.
        recent = await self._session(thread_id, GetSessionConfig(num_recent_events=_WINDOW))
        thread = _read(thread_id, recent, recent is None or len(recent.events) < _WINDOW)
        if thread is None:
            thread = _read(thread_id, await self._session(thread_id), True)
            assert thread is not None  # read whole, every request is there
        return thread

    async def _session(
        self, thread_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        return await self.runner.session_service.get_session(
            app_name=self.runner.app_name,
            user_id=self.user_id,
            session_id=thread_id,
            config=config,
        )

    def waiting(self, thread: _Thread) -> Waiting:
        ids = list(thread.pending)
        return Waiting.deferred(ids, lambda: [thread.requests[i].question() for i in ids])

    async def asked(self, thread: _Thread, question_id: str) -> bool:
        return question_id in thread.asked

    def check(self, thread: _Thread, answer: Answer) -> Any:
        return confirmation(thread.requests[answer.question_id], answer.answer)

    def forgets(self, thread: _Thread) -> str | None:
        if isinstance(self.runner.session_service, InMemorySessionService):
            return (
                "the runner keeps its sessions in an InMemorySessionService, which forgets "
                "them when its process ends; use a DatabaseSessionService"
            )
        return None

    def questions_in(self, result: list[Event]) -> list[Question]:
        return questions_in(result)

    def unfinished(self, thread: _Thread) -> bool:
        return bool(_cut_short(thread))

    async def proceed(self, thread: _Thread) -> list[Event]:
        return await self._run(thread, self._unfinished_turn(thread))

    def _unfinished_turn(self, thread: _Thread) -> _Turn:
        """The turn that goes on with a run a worker stopped in (see :func:`_cut_short`)."""
        assert thread.session is not None  # an unfinished thread has a session
        if self.resumable:
            # ADK's own resume of the invocation: it runs the confirmed tool again from its events.
            return _Turn(None, thread.session.events[-1].invocation_id)
        # The same answers again: ADK takes a confirmation whose tool never responded as not yet
        # consumed and runs the tool again. Either way the execution record decides what runs.
        return _Turn(types.Content(role="user", parts=_cut_short(thread)))

    def answer_turn(self, thread: _Thread, answers: Mapping[str, Any]) -> _Turn:
        """The turn that answers confirmations: in the invocation that asked them, if resumable."""
        asked = thread.requests[next(iter(answers))].invocation if self.resumable else None
        return _Turn(_answers(answers), asked)

    async def _events(
        self, thread: _Thread, turn: _Turn, into: list[Event]
    ) -> AsyncIterator[Event]:
        """The run's events as ADK yields them, each also appended to ``into``."""
        if thread.session is None:
            await self.runner.session_service.create_session(
                app_name=self.runner.app_name, user_id=self.user_id, session_id=thread.thread_id
            )
        async for event in self.runner.run_async(
            user_id=self.user_id,
            session_id=thread.thread_id,
            invocation_id=turn.invocation_id,
            new_message=turn.message,
        ):
            into.append(event)
            yield event
        unasked = _unasked(into)
        if unasked:
            for request in await self._ask(thread.thread_id, unasked):
                into.append(request)
                yield request
        record = _covered(thread, turn.message, into)
        if record is not None:
            await self._remember(thread.thread_id, record)

    async def _remember(self, thread_id: str, record: dict[str, Any]) -> None:
        """Append the session's record as an event's state delta (how ADK persists state)."""
        # A session read without events: appending needs one as fresh as the stored one.
        session = await self._session(thread_id, GetSessionConfig(num_recent_events=0))
        assert session is not None  # the run just appended to it
        event = Event(author="user", actions=EventActions(state_delta={RECORD_KEY: record}))
        await self.runner.session_service.append_event(session, event)

    async def _run(self, thread: _Thread, turn: _Turn) -> list[Event]:
        events: list[Event] = []
        async for _ in self._events(thread, turn, events):
            pass
        return events

    async def streamed(self, thread: _Thread, turn: _Turn) -> AsyncGenerator[Any]:
        """The run of ``turn``: its events as ADK yields them, then :class:`Ran`."""
        events: list[Event] = []
        async for event in self._events(thread, turn, events):
            yield event
        yield Ran(events)

    async def _ask(self, thread_id: str, unasked: list[Event]) -> list[Event]:
        """Append the confirmation requests ADK did not make for ``unasked`` responses."""
        session = await self.runner.session_service.get_session(
            app_name=self.runner.app_name, user_id=self.user_id, session_id=thread_id
        )
        assert session is not None  # the run just appended to it
        calls = {
            call.id: call
            for event in session.events
            for call in event.get_function_calls()
            if call.id and call.name != CONFIRMATION
        }
        asked: list[Event] = []
        for response in unasked:
            request = _request_event(response, calls)
            await self.runner.session_service.append_event(session, request)
            asked.append(request)
        return asked

    async def start(self, thread: _Thread, message: StartMessage) -> list[Event]:
        return await self._run(thread, _Turn(_content(message.input)))

    async def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> list[Event]:
        return await self._run(thread, self.answer_turn(thread, answers))

    def astream_start(self, thread: _Thread, message: StartMessage) -> AsyncIterator[Any]:
        return self.streamed(thread, _Turn(_content(message.input)))

    def astream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> AsyncIterator[Any]:
        return self.streamed(thread, self.answer_turn(thread, answers))


def _answers(answers: Mapping[str, Any]) -> types.Content:
    """The user message that answers confirmations: one function response each."""
    parts = [response_part(i, confirmed) for i, confirmed in answers.items()]
    return types.Content(role="user", parts=parts)


_LOOPS: weakref.WeakKeyDictionary[Runner, asyncio.AbstractEventLoop] = weakref.WeakKeyDictionary()
_LOOPS_LOCK = threading.Lock()


def _loop_of(runner: Runner) -> asyncio.AbstractEventLoop:
    """The event loop the sync host runs ``runner``'s async work on: one per runner, for good.

    ADK's session services are async, and a database one pools connections bound to the loop
    that opened them: every message for a runner must use the same loop. It runs on a daemon
    thread and stops when the runner is collected.
    """
    with _LOOPS_LOCK:
        loop = _LOOPS.get(runner)
        if loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agent-wait-adk", daemon=True).start()
            weakref.finalize(runner, loop.call_soon_threadsafe, loop.stop)
            _LOOPS[runner] = loop
        return loop


class _Loop:
    """Runs coroutines on a runner's loop (see :func:`_loop_of`) from sync code."""

    def __init__(self, runner: Runner) -> None:
        self._loop = _loop_of(runner)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def iterate(self, stream: AsyncGenerator[T]) -> Generator[T]:
        """``stream``'s items, one at a time: it advances only as they are taken.

        The whole iteration is one task on the loop (ADK's run keeps context across its
        yields); leaving early cancels that task, which closes ``stream`` there.
        """
        handed: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        taken = asyncio.Semaphore(0)

        async def pump() -> None:
            try:
                async with contextlib.aclosing(stream):
                    async for item in stream:
                        handed.put(("item", item))
                        await taken.acquire()
                handed.put(("end", None))
            except BaseException as error:  # noqa: BLE001 - handed over: the consumer raises it
                handed.put(("error", error))

        task = asyncio.run_coroutine_threadsafe(pump(), self._loop)
        kind = "item"
        try:
            while True:
                kind, value = handed.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
                self._loop.call_soon_threadsafe(taken.release)
        finally:
            if kind == "item":  # left early: the run is waiting for the next take
                task.cancel()
                while handed.get()[0] == "item":
                    pass  # until the cancelled run has closed


class _SyncAdkHost(StreamingHost[_Thread, list[Event]]):
    """:class:`agent_wait.host.Host`: the async host's steps, each run on the host's own loop."""

    holds_answers = False

    def __init__(self, host: _AsyncAdkHost, loop: _Loop) -> None:
        self._host = host
        self._loop = loop

    def load(self, thread_id: str) -> _Thread:
        return self._loop.run(self._host.load(thread_id))

    def waiting(self, thread: _Thread) -> Waiting:
        return self._host.waiting(thread)

    def asked(self, thread: _Thread, question_id: str) -> bool:
        return question_id in thread.asked

    def check(self, thread: _Thread, answer: Answer) -> Any:
        return self._host.check(thread, answer)

    def forgets(self, thread: _Thread) -> str | None:
        return self._host.forgets(thread)

    def questions_in(self, result: list[Event]) -> list[Question]:
        return questions_in(result)

    def unfinished(self, thread: _Thread) -> bool:
        return self._host.unfinished(thread)

    def proceed(self, thread: _Thread) -> list[Event]:
        return self._loop.run(self._host.proceed(thread))

    def start(self, thread: _Thread, message: StartMessage) -> list[Event]:
        return self._loop.run(self._host.start(thread, message))

    def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> list[Event]:
        return self._loop.run(self._host.resume(thread, answers))

    def stream_start(self, thread: _Thread, message: StartMessage) -> Iterator[Any]:
        return self._loop.iterate(self._host.streamed(thread, _Turn(_content(message.input))))

    def stream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Iterator[Any]:
        return self._loop.iterate(
            self._host.streamed(thread, self._host.answer_turn(thread, answers))
        )


def handle_message(
    runner: Runner,
    message: Message,
    announce: Announce = None,
    *,
    user_id: str = DEFAULT_USER,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Handle one inbound message for an ADK agent: start it, resume it, or refuse.

    The thread id is the ADK session id (under ``runner.app_name`` and ``user_id``); the
    session is created by the first start message. A start message runs the agent with its
    ``input`` (text, or an ADK ``Content`` as a mapping); an answer becomes the
    ``adk_request_confirmation`` function response of its question and resumes the run. The
    confirmations the run ends on are published, one question each. An answer to a
    confirmation already answered runs nothing (``duplicate``), one the session never asked
    runs nothing (``unknown_question``).

    Args:
        runner: The ADK ``Runner`` (its agent, ``app_name`` and session service).
        message: A start message, an answer, or their JSON.
        announce: Announcers for what the run parks on (None: the configured default).
        user_id: The ADK user the sessions belong to.
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see
            :class:`~agent_wait.host.MessageOptions`.

    Returns:
        The :class:`~agent_wait.core.Handled` report; ``result`` is the run's events.
    """
    host = _SyncAdkHost(_AsyncAdkHost(runner, user_id), _Loop(runner))
    return _handle(host, message, announce, **options)


async def ahandle_message(
    runner: Runner,
    message: Message,
    announce: Announce = None,
    *,
    user_id: str = DEFAULT_USER,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Async :func:`handle_message`."""
    return await _ahandle(
        _AsyncAdkHost(runner, user_id),
        message,
        announce,
        **options,
    )


def astream_message(
    runner: Runner,
    message: Message,
    announce: Announce = None,
    *,
    user_id: str = DEFAULT_USER,
    **options: Unpack[MessageOptions],
) -> AsyncStreamed:
    """:func:`ahandle_message` with the run's ADK events yielded as ADK makes them.

    ``async for event in run: ...`` yields each ``Event`` of a start or a resume as
    ``runner.run_async`` yields it (with the runner's ``RunConfig`` streaming mode, partial
    events too); the questions are published before the iteration ends, and ``run.handled``
    is then the outcome. The other outcomes yield nothing. Arguments as :func:`handle_message`.
    """
    return _astream(
        _AsyncAdkHost(runner, user_id),
        message,
        announce,
        **options,
    )


def stream_message(
    runner: Runner,
    message: Message,
    announce: Announce = None,
    *,
    user_id: str = DEFAULT_USER,
    **options: Unpack[MessageOptions],
) -> Streamed:
    """:func:`handle_message` with the run's ADK events yielded as ADK makes them.

    ``for event in run: ...`` yields each ``Event`` of a start or a resume as
    ``runner.run_async`` yields it, on the runner's own loop as :func:`handle_message` runs
    it (so it may be called from sync code and from inside a running loop); the run advances
    only as you iterate. The questions are published before the iteration ends, and
    ``run.handled`` is then the outcome; the other outcomes yield nothing. Stopping early
    (``break``) closes the run where it is and publishes nothing: what ADK stored by then
    stays in the session. Arguments as :func:`handle_message`.
    """
    host = _SyncAdkHost(_AsyncAdkHost(runner, user_id), _Loop(runner))
    return _stream(host, message, announce, **options)
