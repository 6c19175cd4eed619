"""The Pydantic AI host in one call, on core's host state machine: load, run or resume, store.

Pydantic AI keeps no state between runs, so everything :func:`handle_message` needs to know
about a parked thread lives in its stored history: the pending calls are the last response's
tool calls that have no result yet, and the ``DeferredToolRequests`` the run parked on (their
kinds and ``@wait`` payloads) plus any answers held so far are recorded in that response's
``metadata["agent_wait"]``, which Pydantic AI keeps for the application and never sends to
the model. Any :class:`HistoryStore` therefore suffices.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, closing
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from pydantic import TypeAdapter

import agent_wait.host as core_host
from agent_wait.core import (
    Announce,
    Answer,
    Handled,
    Question,
    StartMessage,
    canonical_json,
)
from agent_wait.host import (
    AsyncStreamed,
    AsyncStreamingHost,
    MessageOptions,
    Ran,
    Streamed,
    StreamingHost,
    Waiting,
    refuse_unknown,
)
from agent_wait.host.adapter import PAYLOAD_KEY, last_messages, with_asker
from agent_wait.pydantic_ai._adapter import (
    deferred_requests,
    in_doubt_of,
    is_ours,
    question_id_of,
    questions_in,
    recorded_args,
    running_thread,
)
from agent_wait.pydantic_ai._compat import SyncStreamBridge
from agent_wait.pydantic_ai._history import HistoryStore, IndexedHistoryStore
from agent_wait.pydantic_ai._records import ApprovedCallRecords
from agent_wait.pydantic_ai._results import checked_results
from pydantic_ai import (
    Agent,
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResultEvent

_REQUESTS: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)
# handle_message supplies these itself; a caller passing one would silently fight it.
_RESERVED = frozenset({"message_history", "deferred_tool_results"})
_MESSAGE_OPTIONS = MessageOptions.__optional_keys__


@dataclass(frozen=True)
class Parked:
    """A thread that waits on deferred calls, read from its stored history.

    Attributes:
        requests: The pending calls (only those still without a result).
        answers: Answers received so far, held until every pending call has one.
        prompts: User prompts that came with the held answers, sent with the resume.
    """

    requests: DeferredToolRequests
    answers: dict[str, Any]
    prompts: tuple[str, ...] = ()


def _last_response(messages: Sequence[ModelMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], ModelResponse):
            return index
    return None


def _unprocessed(messages: Sequence[ModelMessage], index: int) -> list[str]:
    response = cast("ModelResponse", messages[index])
    # Results answer calls in the requests that follow the response (tool returns and retries).
    answered = {
        cast("str", getattr(part, "tool_call_id", None))
        for message in messages[index + 1 :]
        for part in message.parts
        if part.part_kind in ("tool-return", "retry-prompt")
    }
    return [call.tool_call_id for call in response.tool_calls if call.tool_call_id not in answered]


def parked(thread_id: str, messages: Sequence[ModelMessage]) -> Parked | None:
    """What the stored history of a thread is parked on, or None when it is not parked.

    Raises:
        ValueError: The history ends in unprocessed tool calls that :func:`handle_message` did
            not record (it was written by other code), so their kinds are unknown.
    """
    index = _last_response(messages)
    if index is None:
        return None
    pending = _unprocessed(messages, index)
    if not pending:
        return None
    metadata = cast("ModelResponse", messages[index]).metadata or {}
    record = metadata.get(PAYLOAD_KEY)
    if not isinstance(record, Mapping) or "pending" not in record:
        raise ValueError(
            f"thread {thread_id!r}: the stored history ends in tool calls without results "
            f"{pending} that handle_message did not record; store histories of parked runs "
            "through handle_message (or finish the run) before handing the thread to it"
        )
    record = cast("Mapping[str, Any]", record)
    requests = _REQUESTS.validate_python(record["pending"])
    # Only calls still without a result are pending, whatever the record says.
    resolved = DeferredToolResults(
        approvals={
            c.tool_call_id: True for c in requests.approvals if c.tool_call_id not in pending
        },
        calls={c.tool_call_id: None for c in requests.calls if c.tool_call_id not in pending},
    )
    requests = requests.remaining(resolved)
    if requests is None:
        return None
    asking = set(_question_ids(requests))
    answers = {
        k: v
        for k, v in cast("Mapping[str, Any]", record.get("answers") or {}).items()
        if k in asking
    }
    prompts = record.get("prompts") or ()
    return Parked(requests, answers, tuple(str(p) for p in cast("Sequence[Any]", prompts)))


def _question_ids(requests: DeferredToolRequests) -> list[str]:
    """The pending calls' question ids, in the order questions_in publishes them."""
    return [
        question_id_of(call, requests.metadata.get(call.tool_call_id))
        for call in (*requests.approvals, *requests.calls)
    ]


def recorded(
    messages: Sequence[ModelMessage],
    requests: DeferredToolRequests,
    answers: Mapping[str, Any],
    prompts: Sequence[str] = (),
) -> list[ModelMessage]:
    """``messages`` with the parked requests, held answers and their prompts recorded."""
    history = list(messages)
    index = _last_response(history)
    if index is None:
        raise ValueError("a parked history has no model response to record the pending calls on")
    response = cast("ModelResponse", history[index])
    record: dict[str, Any] = {
        "pending": _REQUESTS.dump_python(requests, mode="json"),
        "answers": dict(answers),
    }
    if prompts:
        record["prompts"] = list(prompts)
    # An in-doubt question is not one of the response's tool call ids: those it asked stay
    # listed, so that a late answer to one is a duplicate, not an unknown question.
    asked = _in_doubt_asked(response)
    if asked:
        record[_IN_DOUBT_ASKED] = asked
    history[index] = dataclasses.replace(
        response, metadata={**(response.metadata or {}), PAYLOAD_KEY: record}
    )
    return history


_IN_DOUBT_ASKED = "in_doubt_asked"


def _in_doubt_asked(response: ModelResponse) -> list[str]:
    """The in-doubt question ids the response's calls asked, as its record lists them."""
    record: object = (response.metadata or {}).get(PAYLOAD_KEY)
    if not isinstance(record, Mapping):
        return []
    record = cast("Mapping[str, Any]", record)
    asked = [str(i) for i in cast("Sequence[Any]", record.get(_IN_DOUBT_ASKED) or ())]
    pending: object = record.get("pending")
    payloads: object = (
        cast("Mapping[str, Any]", pending).get("metadata") if isinstance(pending, Mapping) else None
    )
    for payload in (
        cast("Mapping[str, Any]", payloads).values() if isinstance(payloads, Mapping) else ()
    ):
        doubt = in_doubt_of(payload)
        if doubt is not None and doubt.get("question_id") not in asked:
            asked.append(str(doubt.get("question_id")))
    return asked


def _call_ids(messages: Sequence[ModelMessage]) -> dict[str, None]:
    """The question ids the history asked: its tool call ids and its in-doubt questions'."""
    ids: dict[str, None] = {}
    for message in messages:
        if isinstance(message, ModelResponse):
            ids.update((call.tool_call_id, None) for call in message.tool_calls)
            ids.update((asked, None) for asked in _in_doubt_asked(message))
    return ids


def _index(thread_id: str, messages: Sequence[ModelMessage]) -> str | None:
    """The index saved beside ``messages``; None when they end in calls it cannot describe.

    Its first line is what the thread is parked on (JSON); every further line one tool call id
    of the history (a JSON string), so that a membership test is a substring search and the
    thread's length costs nothing to parse.
    """
    try:
        state = parked(thread_id, messages)
    except ValueError:
        return None  # read in full next time, which reports the problem
    head = None
    if state is not None:
        head = {
            "pending": _REQUESTS.dump_python(state.requests, mode="json"),
            "answers": state.answers,
            "prompts": list(state.prompts),
        }
    lines = [_line(head), *(_line(call_id) for call_id in _call_ids(messages))]
    return "\n".join(lines) + "\n"


def _line(value: Any) -> str:
    # JSON text never holds a raw newline: one value per line, whatever the ids contain.
    return _encode(value)


# json.dumps with options builds a new encoder on every call: one line per call id adds up.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@dataclass(frozen=True)
class _Head:
    """The first line of a thread's index: what it is parked on, as :func:`_index` writes it."""

    pending: DeferredToolRequests
    answers: dict[str, Any]
    prompts: tuple[str, ...]


# One pass from the JSON text to the requests' objects, without an intermediate parse.
_HEAD: TypeAdapter[_Head | None] = TypeAdapter(_Head | None)


def _from_index(thread_id: str, text: str) -> _Thread:
    # The first line only: partition would copy the rest, which grows with the thread.
    end = text.find("\n")
    head = _HEAD.validate_json(text if end < 0 else text[:end])
    state = None if head is None else Parked(head.pending, head.answers, head.prompts)
    return _Thread(thread_id, None, state, text)


def _said(message: ModelMessage) -> tuple[str, str] | None:
    """A message's role and text for a question's context: user prompts and model text only."""
    if isinstance(message, ModelRequest):
        said = [p.content for p in message.parts if isinstance(p, UserPromptPart)]
        texts = [t for t in said if isinstance(t, str)]  # images and files are not shared
        return ("user", "\n".join(texts)) if texts else None
    texts = [p.content for p in message.parts if isinstance(p, TextPart)]
    return ("assistant", "\n".join(texts)) if texts else None


def _after_run(result: AgentRunResult[Any]) -> list[ModelMessage]:
    messages = result.all_messages()
    requests = deferred_requests(result)
    return messages if requests is None else recorded(messages, requests, {})


def _prompt(message: StartMessage) -> str | None:
    value = message.input
    if value is None or isinstance(value, str):
        return value
    # A structured start message reaches the model as its JSON text.
    return canonical_json(value)


@dataclass(frozen=True)
class _Thread:
    """A thread read in full (``messages``) or from its index (messages loaded on demand)."""

    thread_id: str
    messages: list[ModelMessage] | None
    state: Parked | None
    index: str | None = None

    def has_asked(self, question_id: str) -> bool:
        if self.index is not None:
            return f"\n{_line(question_id)}\n" in self.index
        assert self.messages is not None
        return question_id in _call_ids(self.messages)


_INDEXED_MEMBERS = ("load", "save", "load_index", "save_indexed")
_indexed_classes: set[type] = set()
"""Store classes whose own methods make every instance an :class:`IndexedHistoryStore`."""


def _indexed_store(history: HistoryStore) -> bool:
    # A runtime protocol check looks up every member on the instance (several microseconds,
    # twice per answer); a class that defines them all answers it for all its instances.
    kind = type(history)
    if kind in _indexed_classes:
        return True
    indexed = isinstance(history, IndexedHistoryStore)
    if indexed and all(callable(getattr(kind, name, None)) for name in _INDEXED_MEMBERS):
        _indexed_classes.add(kind)
    return indexed


class _Host:
    """What Pydantic AI adds to core's host: state from the stored history, answers held."""

    holds_answers = True

    def __init__(
        self,
        agent: Agent[Any, Any],
        history: HistoryStore,
        options: Mapping[str, Any],
        prompt: str | None = None,
    ):
        # MessageOptions are the host's; everything else is the agent's run's.
        self.message_options = cast(
            "MessageOptions", {k: v for k, v in options.items() if k in _MESSAGE_OPTIONS}
        )
        self.options = {k: v for k, v in options.items() if k not in _MESSAGE_OPTIONS}
        _check_options(agent, self.options, prompt)
        self.agent = agent
        self.history = history
        self.indexed = _indexed_store(history)
        self.prompt = prompt
        # The results check() built, reused by the resume that follows it with the same answer.
        self._checked: tuple[DeferredToolRequests, str, Any, DeferredToolResults] | None = None

    def _indexed(self, thread_id: str) -> _Thread | None:
        """The thread read from its index, or None when the store or the thread has none."""
        if not self.indexed:
            return None
        text = cast("IndexedHistoryStore", self.history).load_index(thread_id)
        return None if text is None else _from_index(thread_id, text)

    def _load(self, thread_id: str, messages: list[ModelMessage]) -> _Thread:
        return _Thread(thread_id, messages, parked(thread_id, messages))

    def _save(self, thread_id: str, messages: list[ModelMessage]) -> None:
        index = _index(thread_id, messages)
        if index is not None and self.indexed:
            cast("IndexedHistoryStore", self.history).save_indexed(thread_id, messages, index)
        else:
            self.history.save(thread_id, messages)

    def waiting(self, thread: _Thread) -> Waiting:
        if thread.state is None:
            return Waiting()
        requests = thread.state.requests
        # Read from its index, the thread's messages are not loaded: none are shared then.
        messages = thread.messages or ()
        return Waiting.deferred(
            _question_ids(requests),
            lambda: self._with_asker(questions_in(requests), messages),
            held=thread.state.answers,
        )

    def _with_asker(
        self, questions: list[Question], messages: Sequence[ModelMessage]
    ) -> list[Question]:
        """``questions`` with the asker: Pydantic AI, the agent's name, shared messages."""
        shared = last_messages(messages, _said)
        return with_asker(questions, "pydantic_ai", self.agent.name, shared)

    def check(self, thread: _Thread, answer: Answer) -> Any:
        assert thread.state is not None  # only pending questions are checked
        # The answer is passed on as received (1.0 stays a float); checked_results raises
        # InvalidAnswer for one that does not fit the call.
        requests = thread.state.requests
        results = checked_results(requests, {answer.question_id: answer.answer})
        self._checked = (requests, answer.question_id, answer.answer, results)
        return answer.answer

    def _results(self, thread: _Thread, answers: Mapping[str, Any]) -> DeferredToolResults:
        assert thread.state is not None
        requests = thread.state.requests
        checked = self._checked
        if checked is not None and checked[0] is requests and len(answers) == 1:
            # The usual resume: the one answer check() just built results for, unchanged
            # (the very same value: 1 and 1.0 are equal, but not the same answer).
            _, question_id, answer, results = checked
            if question_id in answers and answers[question_id] is answer:
                return results
        return checked_results(requests, answers)

    def questions_in(self, result: AgentRunResult[Any]) -> list[Question]:
        asked = questions_in(result)
        return self._with_asker(asked, result.all_messages()) if asked else asked

    def _prompts(self, thread: _Thread) -> list[str]:
        assert thread.state is not None
        own = [] if self.prompt is None else [self.prompt]
        return [*thread.state.prompts, *own]

    def _held(
        self, thread: _Thread, messages: list[ModelMessage], answers: Mapping[str, Any]
    ) -> list[ModelMessage]:
        assert thread.state is not None
        return recorded(messages, thread.state.requests, answers, self._prompts(thread))

    def _start_args(self, messages: list[ModelMessage], message: StartMessage) -> dict[str, Any]:
        if self.prompt is not None:
            raise ValueError(
                f"user_prompt: {self.prompt!r} goes with an answer (sent with the deferred "
                f"results); the start message of thread {message.thread_id!r} carries its own "
                "prompt as input"
            )
        return {
            **self.options,
            "user_prompt": _prompt(message),
            "message_history": messages or None,
        }

    def _run_args(
        self, thread: _Thread, messages: list[ModelMessage], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        results = self._results(thread, answers)
        prompts = self._prompts(thread)
        # One prompt as is; several (held answers each brought one) as one user turn, in order.
        prompt: str | list[str] | None = (
            None if not prompts else prompts[0] if len(prompts) == 1 else prompts
        )
        assert thread.state is not None
        requests = thread.state.requests
        # Approved calls that are not @wait ones (those keep their own records).
        recorded = frozenset(
            call_id
            for call_id, approval in results.approvals.items()
            if isinstance(approval, ToolApproved)
            and (
                not is_ours(metadata := requests.metadata.get(call_id))
                or recorded_args(metadata) is not None
            )
        )
        # The run's own options, then these: the run's capabilities and the records'.
        own: Sequence[Any] = self.options.get("capabilities") or ()
        return {
            **self.options,
            "user_prompt": prompt,
            "message_history": messages or None,
            "deferred_tool_results": results,
            "capabilities": [*own, ApprovedCallRecords(recorded)],
        }


class _SyncHost(_Host, StreamingHost[_Thread, AgentRunResult[Any]]):
    def load(self, thread_id: str) -> _Thread:
        indexed = self._indexed(thread_id)
        return indexed or self._load(thread_id, self.history.load(thread_id))

    def _messages(self, thread: _Thread) -> list[ModelMessage]:
        if thread.messages is not None:
            return thread.messages
        return self.history.load(thread.thread_id)

    def asked(self, thread: _Thread, question_id: str) -> bool:
        return thread.has_asked(question_id)

    def hold(self, thread: _Thread, answers: Mapping[str, Any]) -> None:
        self._save(thread.thread_id, self._held(thread, self._messages(thread), answers))

    def start(self, thread: _Thread, message: StartMessage) -> AgentRunResult[Any]:
        return self._run(thread, self._start_args(self._messages(thread), message))

    def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> AgentRunResult[Any]:
        return self._run(thread, self._run_args(thread, self._messages(thread), answers))

    def _run(self, thread: _Thread, args: dict[str, Any]) -> AgentRunResult[Any]:
        with running_thread(thread.thread_id):
            result = self.agent.run_sync(**args)
        self._save(thread.thread_id, _after_run(result))
        return result

    def stream_start(self, thread: _Thread, message: StartMessage) -> Iterator[Any]:
        args = self._start_args(self._messages(thread), message)
        return self._stream(thread, lambda: self.agent.run_stream_events(**args))

    def stream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Iterator[Any]:
        args = self._run_args(thread, self._messages(thread), answers)
        return self._stream(thread, lambda: self.agent.run_stream_events(**args))

    def _stream(
        self,
        thread: _Thread,
        run: Callable[[], AbstractAsyncContextManager[AsyncIterator[Any]]],
    ) -> Iterator[Any]:
        # Pydantic AI's own sync stream bridge (what run_stream_sync uses): the run goes on the
        # event loop run_sync uses, its context manager and its iteration each stay in one task,
        # and the stream advances only as the caller asks for the next event.
        result: AgentRunResult[Any] | None = None
        exit_info: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
        exit_info = (None, None, None)
        with running_thread(thread.thread_id):
            bridge = SyncStreamBridge(run(), async_alternative="astream_message")
            try:
                # A generator, typed as an iterator: closed here, so it ends before the bridge
                # does.
                stream = cast("Generator[Any]", bridge.stream_sync(lambda: bridge.stream))
                with closing(stream) as events:
                    for event in events:
                        result = _result_of(event, result)
                        yield event
            except Exception as error:
                exit_info = (type(error), error, error.__traceback__)
                raise
            finally:
                bridge.shutdown(exit_info)
        # Saved only once the run ended: a consumer that stops early leaves the history as it
        # was, and an answer's question still pending.
        self._save(thread.thread_id, _after_run(_ran(result)))
        yield Ran(result)


class _AsyncHost(_Host, AsyncStreamingHost[_Thread, AgentRunResult[Any]]):
    # The history store is called in a worker thread: a blocking store must not stall the loop.

    async def load(self, thread_id: str) -> _Thread:
        indexed = await asyncio.to_thread(self._indexed, thread_id)
        if indexed is not None:
            return indexed
        return self._load(thread_id, await asyncio.to_thread(self.history.load, thread_id))

    async def _messages(self, thread: _Thread) -> list[ModelMessage]:
        if thread.messages is not None:
            return thread.messages
        return await asyncio.to_thread(self.history.load, thread.thread_id)

    async def asked(self, thread: _Thread, question_id: str) -> bool:
        return thread.has_asked(question_id)

    async def hold(self, thread: _Thread, answers: Mapping[str, Any]) -> None:
        held = self._held(thread, await self._messages(thread), answers)
        await asyncio.to_thread(self._save, thread.thread_id, held)

    async def start(self, thread: _Thread, message: StartMessage) -> AgentRunResult[Any]:
        return await self._run(thread, self._start_args(await self._messages(thread), message))

    async def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> AgentRunResult[Any]:
        args = self._run_args(thread, await self._messages(thread), answers)
        return await self._run(thread, args)

    async def _run(self, thread: _Thread, args: dict[str, Any]) -> AgentRunResult[Any]:
        with running_thread(thread.thread_id):
            result = await self.agent.run(**args)
        await asyncio.to_thread(self._save, thread.thread_id, _after_run(result))
        return result

    def astream_start(self, thread: _Thread, message: StartMessage) -> AsyncIterator[Any]:
        return self._stream(thread, lambda messages: self._start_args(messages, message))

    def astream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> AsyncIterator[Any]:
        return self._stream(thread, lambda messages: self._run_args(thread, messages, answers))

    async def _stream(
        self, thread: _Thread, run_args: Callable[[list[ModelMessage]], dict[str, Any]]
    ) -> AsyncIterator[Any]:
        # A generator: the history is read, and the arguments checked, once it is iterated.
        run = self.agent.run_stream_events(**run_args(await self._messages(thread)))
        with running_thread(thread.thread_id):
            async with run as events:
                async for item in self._saved(thread, events):
                    yield item

    async def _saved(self, thread: _Thread, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # The last event carries the run's result; the history is saved from it, as after run().
        result: AgentRunResult[Any] | None = None
        async for event in events:
            result = _result_of(event, result)
            yield event
        await asyncio.to_thread(self._save, thread.thread_id, _after_run(_ran(result)))
        yield Ran(result)


def _result_of(event: Any, result: AgentRunResult[Any] | None) -> AgentRunResult[Any] | None:
    if isinstance(event, AgentRunResultEvent):
        return cast("AgentRunResultEvent[Any]", event).result
    return result


def _ran(result: AgentRunResult[Any] | None) -> AgentRunResult[Any]:
    if result is None:
        raise RuntimeError("Pydantic AI's event stream ended without its result event")
    return result


def _check_options(
    agent: Agent[Any, Any], run_options: Mapping[str, Any], user_prompt: object
) -> None:
    if user_prompt is not None and not isinstance(user_prompt, str):
        # Kept in the stored history with a held answer: text only.
        raise TypeError(f"user_prompt: expected text, got {type(user_prompt).__name__}")
    reserved = sorted(set(run_options) & _RESERVED)
    if reserved:
        raise TypeError(
            f"handle_message() sets {reserved} itself from the message and the stored history; "
            "do not pass them"
        )
    # Checked on every message, not only when one runs: a misspelt option is an error on a
    # redelivery too, instead of being ignored until the next run.
    accepted = _run_parameters(type(agent))
    if accepted is not None:
        refuse_unknown(run_options, accepted | _MESSAGE_OPTIONS, "handle_message")


@functools.cache
def _run_parameters(agent_type: type[Agent[Any, Any]]) -> frozenset[str] | None:
    """The keyword arguments ``agent_type.run_sync`` takes; None when it takes any."""
    parameters = inspect.signature(agent_type.run_sync).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters) - {"self", "user_prompt"}


def handle_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    user_prompt: str | None = None,
    **options: Any,
) -> Handled:
    """Handle one inbound message for a Pydantic AI agent: run or resume, store, publish.

    A start message (no ``question_id``) runs the agent with ``input`` as the prompt (a string
    as is, anything else as its JSON text) on the thread's stored history. An answer resumes
    the call it names with ``DeferredToolResults`` built by :func:`deferred_results`. After
    every run the history is saved under the thread id **before** anything is published or
    returned, then one envelope per call the run parked on is published.

    Guarantees (every case but a run leaves the history as it was, and runs nothing):

    - An answer whose question is no longer pending (answered, late, or a stale one from an
      earlier cycle) is ``DUPLICATE``; one the thread never asked is ``UNKNOWN_QUESTION``.
      Pydantic AI itself would run an approved tool again on a duplicate resumed from the
      pre-resume history; storing first is what makes the duplicate a no-op.
    - A start message arriving while the thread is parked is ``REPUBLISHED``: the pending
      questions go out again with their same ids.
    - Pydantic AI resumes only with every pending call answered, so an answer to one of
      several pending calls is stored in the history and ``HELD``; the run resumes once, when
      the last one arrives. A second answer to a held question is ``DUPLICATE``.
    - An answer whose ``args`` do not fit the call is ``INVALID_ANSWER``, refused before it is
      held or resumed.

    Messages of one thread must be handled one at a time (a FIFO group, a partition, or a
    lock per thread): two concurrent answers would both read the same stored history.

    Args:
        agent: The agent; its ``output_type`` includes ``DeferredToolRequests``.
        message: The inbound message: a mapping, JSON text, or a parsed
            :class:`~agent_wait.core.Answer` / :class:`~agent_wait.core.StartMessage`.
        announce: Where questions are published (an announcer, a list, a registered name, or
            None for the configured default).
        history: Where the thread's message history is stored, by thread id.
        user_prompt: A new user message sent together with the deferred results when the
            answer resumes the run (Pydantic AI's "approve and ask for more" in one turn). With
            an answer that is held, it is stored with it and sent when the run resumes; with
            a start message it is refused (``ValueError``: its ``input`` is the prompt).
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see
            :class:`~agent_wait.host.MessageOptions` (``strict``: a failed delivery raises
            :class:`~agent_wait.core.AnnounceFailed` once the history is stored). Every other
            name is passed to ``agent.run_sync`` (``deps``, ``model``, ``usage_limits``...).

    Returns:
        :class:`~agent_wait.core.Handled`: the outcome, the ``AgentRunResult`` (None when
        nothing ran), the publish report and, when nothing ran, why.

    Raises:
        pydantic.ValidationError: The message is neither a valid answer nor start message.
        TypeError: ``options`` names a run argument handle_message sets itself, or
            ``user_prompt`` is not text.
        ValueError: ``user_prompt`` with a start message.
    """
    host = _SyncHost(agent, history, options, user_prompt)
    return core_host.handle_message(host, message, announce, **host.message_options)


async def ahandle_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    user_prompt: str | None = None,
    **options: Any,
) -> Handled:
    """Async :func:`handle_message`: ``await agent.run(...)``, announcers delivered concurrently.

    The history store is called in a worker thread, so a blocking store does not stall the
    event loop. Same arguments, guarantees and result as :func:`handle_message`.
    """
    host = _AsyncHost(agent, history, options, user_prompt)
    return await core_host.ahandle_message(host, message, announce, **host.message_options)


def stream_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    user_prompt: str | None = None,
    **options: Any,
) -> Streamed:
    """:func:`handle_message` for a sync host that streams: ``agent.run_stream_events(...)``, iterated.

    The run goes on the event loop ``agent.run_sync`` uses, through the bridge Pydantic AI's
    ``run_stream_sync`` is built on, and its events are handed over one at a time: the run
    advances as you iterate. Iterate the result with ``for`` for Pydantic AI's events (part
    starts and deltas, tool calls and results, and last ``AgentRunResultEvent``); once the
    stream ends, the history is saved, the calls the run deferred are published and
    ``.handled`` is the :class:`~agent_wait.core.Handled`. Stopping early (``break``) closes the
    run and saves and publishes nothing: the history stays as it was, so an answer's question
    is still pending. The same decisions as :func:`handle_message` (held answers, duplicates,
    invalid answers yield no events). Same arguments as :func:`handle_message`; like
    ``run_sync``, not for use inside a running event loop (use :func:`astream_message`).

    Example::

        run = stream_message(agent, message, announce, history=store)
        for event in run:
            if isinstance(event, PartDeltaEvent):
                send_to_ui(event.delta)
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    host = _SyncHost(agent, history, options, user_prompt)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running here: the run can have one
    else:
        # Refused here, not once iterated: then a resume would be reported as a failed one.
        raise RuntimeError(
            "stream_message() drives its own event loop and cannot run inside a running one; "
            "use astream_message()"
        )
    return core_host.stream_message(host, message, announce, **host.message_options)


def astream_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    user_prompt: str | None = None,
    **options: Any,
) -> AsyncStreamed:
    """:func:`ahandle_message` for a host that streams: ``agent.run_stream_events(...)``.

    Iterate the result with ``async for`` for Pydantic AI's events (part starts and deltas,
    tool calls and results, and last ``AgentRunResultEvent``); once the stream ends, the history
    is saved, the calls the run deferred are published and ``.handled`` is the
    :class:`~agent_wait.core.Handled`. The same decisions as :func:`handle_message` (held
    answers, duplicates, invalid answers yield no events). Same arguments as
    :func:`handle_message`.

    Example::

        run = astream_message(agent, message, announce, history=store)
        async for event in run:
            if isinstance(event, PartDeltaEvent):
                await send_to_ui(event.delta)
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    host = _AsyncHost(agent, history, options, user_prompt)
    return core_host.astream_message(host, message, announce, **host.message_options)
