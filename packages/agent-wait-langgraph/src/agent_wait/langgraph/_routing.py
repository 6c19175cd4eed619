"""Give every answer to its own ``@wait`` call, where LangGraph matches answers by call order.

LangGraph keeps a task's answers as one list and hands them to the task's ``interrupt()`` calls in
the order the calls run; a resume appends one answer to that list. With one question per task
that is exact. With several in one task (two gated tools in one model turn under the prebuilt
``ToolNode``, which runs them in threads or with ``asyncio.gather``; a node or a hand-built tool
loop calling ``@wait`` functions one after another) the order is the scheduler's, an answer can
reach another call, and a call approved earlier runs again each time the task is resumed.

So ``@wait`` calls do not take answers by position. Each call has an address,
``sha256(thread_id | function | canonical args)``, and :func:`park`:

- looks through the task's whole answer list for the entry addressed to it (an answer from
  :func:`agent_wait.langgraph.handle_message` or ``resume_command(..., pending=...)`` is
  ``{"__agent_wait__": {"to": <address>, "answer": ...}}``); a plain answer (a host of one's own
  resuming with ``{question_id: answer}`` or ``Command(resume=answer)``) is taken by the first
  call without an entry, in call order as LangGraph would, and then addressed to it;
- checks the answer before anything is saved (a refused answer raises LangGraph's invalid-resume
  ``ValidationError``), writes the list back with the entry addressed to this call, and returns
  the answer;
- otherwise asks: raises LangGraph's interrupt under the id of the list's next slot (LangGraph's
  own id scheme), so the answer to it is appended there whichever call asked.

When the body of an answered call returns, its result is written into its entry
(:func:`run_once`), so a resume of the task for another call's question returns it again
without running the body twice. An asking call of an async task waits until its siblings'
bodies have returned, so nothing is lost when ``asyncio.gather`` gives up on the first interrupt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import logging
import threading
import weakref
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, cast

from pydantic import AfterValidator, TypeAdapter

from agent_wait.core import derive_question_id
from agent_wait.host.adapter import PAYLOAD_KEY, WaitCall, apply_answer, question_from_value
from agent_wait.langgraph._compat import (
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    RESUME,
    PregelScratchpad,
    interrupt_id,
    validate_resume,
)
from agent_wait.langgraph._errors import InterruptRoutingError
from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt, interrupt

logger = logging.getLogger(__name__)

ADDRESS_KEY = "__agent_wait__"
"""The key of an addressed answer: ``{ADDRESS_KEY: {"to": address, "answer": answer}}``."""

_LOCK = threading.Lock()  # a task's tools run in threads; its answer list is shared


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    """``value`` as a string-keyed mapping, or None."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else None


def call_id(thread_id: str, question: Mapping[str, Any]) -> str:
    """The address of a ``@wait`` question: ``sha256(thread_id | function | canonical args)``.

    It names the call itself, so it tells apart calls LangGraph gives one interrupt id.
    """
    return derive_question_id(thread_id, str(question["function"]), question.get("args") or {})


def address(thread_id: str, pending_value: Any, answer: Any) -> Any:
    """The resume value for ``answer`` to a pending interrupt: addressed if it is a ``@wait`` one.

    Bare interrupts and LangChain middleware interrupts get the answer verbatim.
    """
    if not (isinstance(pending_value, Mapping) and PAYLOAD_KEY in pending_value):
        return answer  # not a @wait payload: nothing to address
    asked = question_from_value("pending", pending_value)
    # Only a @wait payload reads back with a source (see agent_wait.host.adapter.question_from_value).
    question = as_mapping(asked.question)
    if asked.source is None or question is None or "function" not in question:
        return answer
    return {ADDRESS_KEY: {"to": call_id(thread_id, question), "answer": answer}}


@dataclass(frozen=True)
class _Entry:
    """One entry of a task's answer list, read."""

    answer: Any
    to: str | None = None
    ran: bool = False
    result: Any = None


def _read(value: Any) -> _Entry:
    outer = as_mapping(value)
    if outer is not None and len(outer) == 1:
        inner = as_mapping(outer.get(ADDRESS_KEY))
        if inner is not None and "answer" in inner and isinstance(inner.get("to"), str):
            return _Entry(inner["answer"], inner["to"], "result" in inner, inner.get("result"))
    return _Entry(value)


def _write(to: str, answer: Any, *result: Any) -> dict[str, Any]:
    entry = {"to": to, "answer": answer}
    if result:
        entry["result"] = result[0]
    return {ADDRESS_KEY: entry}


@dataclass
class _Run:
    """What the ``@wait`` calls of one task run share (the task's calls may run in threads)."""

    ticks: set[int] = field(default_factory=set[int])  # positions taken by @wait calls
    in_flight: int = 0  # bodies running with an answer


# Keyed by the scratchpad's get_null_resume, a closure LangGraph makes for each task run (the
# scratchpad itself cannot be weakly referenced): the entry goes when the task run does.
_RUNS: weakref.WeakKeyDictionary[Callable[..., Any], _Run] = weakref.WeakKeyDictionary()


@dataclass
class _Task:
    """The running task a ``@wait`` call is in: its answer list and how to save it."""

    pad: PregelScratchpad
    send: Callable[[list[tuple[str, Any]]], None]
    namespace: str
    thread_id: str
    node: str | None
    serde: Any  # the checkpointer's serializer, which saves the answer list

    @property
    def entries(self) -> list[Any]:
        return self.pad.resume

    @property
    def run(self) -> _Run:
        """This task run's shared state (call under ``_LOCK``)."""
        return _RUNS.setdefault(self.pad.get_null_resume, _Run())

    def save(self) -> None:
        # The list object itself: LangGraph serialises it when the task ends, so the last
        # state of every call's entry is what is saved.
        self.send([(RESUME, self.entries)])


def _task() -> _Task | None:
    try:
        config = get_config()
    except RuntimeError:
        return None
    configurable = config.get("configurable") or {}
    pad = configurable.get(CONFIG_KEY_SCRATCHPAD)
    send = configurable.get(CONFIG_KEY_SEND)
    if not isinstance(pad, PregelScratchpad) or send is None:
        return None
    node = (config.get("metadata") or {}).get("langgraph_node")
    return _Task(
        pad,
        cast("Callable[[list[tuple[str, Any]]], None]", send),
        str(configurable.get(CONFIG_KEY_CHECKPOINT_NS) or ""),
        str(configurable.get("thread_id") or ""),
        None if node is None else str(node),
        getattr(configurable.get(CONFIG_KEY_CHECKPOINTER), "serde", None),
    )


class AlreadyRan(Exception):
    """The call's body ran in an earlier run of this task; carries its result out of ``park``."""

    def __init__(self, result: Any) -> None:
        super().__init__("already ran")
        self.result = result


@dataclass
class _Running:
    """Set by :func:`run_once` around one call: where ``park`` left its answer entry."""

    task: _Task | None = None
    index: int = -1
    answer: Any = None
    to: str = ""
    function: str = ""


F = TypeVar("F", bound=Callable[..., Any])

_RUNNING: ContextVar[_Running | None] = ContextVar("agent_wait_langgraph_running", default=None)


def accept(call: WaitCall, answer: Any) -> Any:
    """Check an answer can apply to ``call`` (raises ``ValueError`` if not); return it."""
    # Apply to a copy: the real application happens after park() returns.
    bound = inspect.BoundArguments(call.bound.signature, dict(call.bound.arguments))
    apply_answer(dataclasses.replace(call, bound=bound), answer, call.decision)
    return answer


def _claim(task: _Task, own: str, position: int) -> int | None:
    """The index of this call's entry in the task's answers, or None if it must ask.

    Its addressed entry wherever it is; else the first plain answer from the call's position on
    (LangGraph's rule, exact in a node that runs its calls one after another; an answer
    addressed to no call of the task keeps its slot and is passed over); else a plain
    ``Command(resume=answer)`` given while one question was pending.
    """
    entries = task.entries
    for index, value in enumerate(entries):
        if _read(value).to == own:
            return index
    for index in range(position, len(entries)):
        if _read(entries[index]).to is None:
            return index
    plain = task.pad.get_null_resume(True)
    if plain is None:
        return None
    entries.append(plain)
    return len(entries) - 1


def _check_no_bare_interrupt(task: _Task, run: _Run, position: int) -> None:
    # A bare interrupt() takes the answer at its position, whatever it is; if it took one of a
    # @wait call's answers, the run must stop here rather than go on with that call's answer.
    taken = [
        p
        for p in range(min(position, len(task.entries)))
        if p not in run.ticks and _read(task.entries[p]).to is not None
    ]
    if taken:
        raise InterruptRoutingError(
            f"node {task.node or '?'!r}: a bare interrupt() in the same task took the answer "
            f"addressed to a @wait call (position {taken[0]}); LangGraph hands interrupt() the "
            "task's answers by position. Keep bare interrupt() calls in tasks without @wait "
            "calls running beside them (another node, or create_agent's per-call tasks)"
        )


def park(call: WaitCall) -> Any:
    """Return ``call``'s answer from its task, or ask (raise LangGraph's interrupt)."""
    schema = TypeAdapter[Any](Annotated[Any, AfterValidator(lambda value: accept(call, value))])
    task = _task()
    if task is None:  # not in a LangGraph task: interrupt() says why
        return interrupt(call.payload, response_schema=cast("Any", schema))
    own = call_id(task.thread_id, call.payload["question"])
    with _LOCK:
        run = task.run
        # One position per call, as interrupt() counts them, so bare interrupt() calls of the
        # same node keep theirs.
        position = task.pad.interrupt_counter()
        run.ticks.add(position)
        _check_no_bare_interrupt(task, run, position)
        index = _claim(task, own, position)
        if index is None:
            asked = Interrupt(
                value=call.payload,
                id=interrupt_id(task.namespace, len(task.entries)),
                response_schema=schema.json_schema(),
            )
            if task.entries:
                task.save()  # the id names the slot after these entries: save them with it
            raise GraphInterrupt((asked,))
        entry = _read(task.entries[index])
        if entry.ran:
            raise AlreadyRan(entry.result)
        try:
            answer = validate_resume(schema, entry.answer)
        except ValueError:
            # Only this run's new answer is unchecked. Out of the list (which LangGraph saves
            # when the task ends), so the question still takes a good answer next.
            del task.entries[index]
            raise
        task.entries[index] = _write(own, entry.answer)
        task.save()
        running = _RUNNING.get()
        # The first answer of the call is the one its body runs on; a second (the in-doubt
        # question of a body a crash cut short) must not take over its entry.
        if running is not None and running.task is None:
            running.task, running.index, running.answer, running.to = task, index, entry.answer, own
            running.function = call.name
            run.in_flight += 1
        return answer


def execution_key(call: WaitCall) -> str | None:
    """The key of ``call``'s answered question in the execution ledger (None outside a task)."""
    task = _task()
    if task is None:
        return None
    own = call_id(task.thread_id, call.payload["question"])
    return derive_question_id(task.thread_id, task.namespace, {"call": own})


async def apark(call: WaitCall) -> Any:
    """:func:`park` for async calls: an asking call first lets its siblings' bodies finish.

    ``asyncio.gather`` (the async ``ToolNode``) gives up on the first interrupt and LangGraph
    saves the task right then; a sibling still running its approved body would run it again
    on the next resume, its result unsaved.
    """
    try:
        return park(call)
    except GraphInterrupt:
        task = _task()
        if task is not None:
            # A call asking its in-doubt question holds an answer itself: not a sibling.
            running = _RUNNING.get()
            own = 1 if running is not None and running.task is not None else 0
            await asyncio.sleep(0)  # siblings started by the same gather reach park() first
            while _busy(task, own):
                await asyncio.sleep(0.005)
        raise


def _busy(task: _Task, own: int = 0) -> bool:
    with _LOCK:
        return task.run.in_flight > own


def _finish(running: _Running, *result: Any) -> None:
    task = running.task
    if task is None:
        return
    if result and not _storable(task, running.function, result[0]):
        result = ()
    with _LOCK:
        task.run.in_flight -= 1
        if result:
            task.entries[running.index] = _write(running.to, running.answer, result[0])
            task.save()


def _storable(task: _Task, function: str, result: Any) -> bool:
    # A result the checkpointer cannot save would fail the whole task's save: the call's body
    # then runs again if the task is resumed for another question, as it would without us.
    if task.serde is None:
        return True
    try:
        task.serde.dumps_typed(result)
    except Exception as error:  # noqa: BLE001 - any serializer failure means "do not keep"
        logger.warning(
            "@wait %r in node %r: its result (%s) cannot be saved with the thread (%s); if "
            "another question of the same task is answered later, the body runs again",
            function,
            task.node,
            type(result).__name__,
            error,
        )
        return False
    return True


@contextmanager
def _once() -> Generator[list[Any]]:
    """One ``@wait`` call's run: the block appends the body's result to the list it is given.

    The result is written into the call's answer entry. A body that ran in an earlier run of
    the task (``park`` raised :class:`AlreadyRan`) leaves the kept result in the list instead.
    """
    running = _Running()
    token = _RUNNING.set(running)
    result: list[Any] = []
    try:
        yield result
    except AlreadyRan as ran:
        result.append(ran.result)
        return
    except BaseException:
        _finish(running)
        raise
    finally:
        _RUNNING.reset(token)
    _finish(running, *result)


def run_once(wrapper: F) -> F:
    """Wrap a ``@wait`` wrapper so an answered call's result is kept with its answer.

    A later run of the same task (resumed for another call's question) returns that result
    instead of running the body again.
    """
    if inspect.iscoroutinefunction(wrapper):

        @functools.wraps(wrapper)
        async def async_once(*args: Any, **kwargs: Any) -> Any:
            with _once() as result:
                result.append(await wrapper(*args, **kwargs))
            return result[0]

        return cast("F", async_once)

    @functools.wraps(wrapper)
    def once(*args: Any, **kwargs: Any) -> Any:
        with _once() as result:
            result.append(wrapper(*args, **kwargs))
        return result[0]

    return cast("F", once)
