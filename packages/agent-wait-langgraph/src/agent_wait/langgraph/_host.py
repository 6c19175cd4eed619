"""The whole LangGraph host of seed section 4 in one call, with the guarantees LangGraph leaves out.

LangGraph alone (FRAMEWORK_FACTS sections 1-2): a stale id can answer the *next* interrupt of
the same node; a start message redelivered to a parked thread mints a new interrupt id and
orphans the published one; a malformed ``HumanInTheLoopMiddleware`` batch answer is saved and
poisons the thread; and under the prebuilt ``ToolNode`` an answer can reach another tool.
:func:`handle_message` reads the thread's state before it runs anything and closes each of these.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

import langgraph.types
from agent_wait.core import (
    Announce,
    Answer,
    Handled,
    Outcome,
    StartMessage,
    apublish,
    parse_message,
    publish,
)
from agent_wait.langgraph._adapter import (
    batch_actions,
    interrupts_in,
    is_batch_request,
    questions_in,
)
from agent_wait.langgraph._routing import (
    RUN_LOG,
    InterruptRoutingError,
    Misaddressed,
    RunLog,
    address,
)
from langgraph.errors import UnknownInterruptError, is_invalid_resume
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, PregelTask, StateSnapshot

Graph = Pregel[Any, Any, Any, Any]

STRICT_RESUME_KEY = "__pregel_strict_resume"
"""LangGraph's strict-resume switch (``CONFIG_KEY_STRICT_RESUME``, langgraph 1.2): a resume naming
an interrupt that is no longer pending raises ``UnknownInterruptError`` before anything is written."""

Clock = Callable[[], datetime]

_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
# LangGraph's id of a task's n-th interrupt (private in langgraph 1.2; see _earlier_ids).
_slot_id: Callable[[str, int], object] | None = getattr(langgraph.types, "_interrupt_id", None)
_MAX_SLOTS = 100


def _answer(message: Answer | Mapping[str, Any] | str | bytes) -> Answer:
    parsed = message if isinstance(message, Answer) else parse_message(message)
    if not isinstance(parsed, Answer):
        raise ValueError(
            f"question_id: missing, so this is a start message, not an answer: {message!r}"
        )
    return parsed


def resume_command(
    answer_message: Answer | Mapping[str, Any] | str | bytes,
    *,
    pending: Any = None,
) -> Command[Any]:
    """The ``Command`` that resumes a thread with one answer: ``Command(resume={question_id: answer})``.

    Args:
        answer_message: The answer message (seed section 2): ``{"thread_id", "question_id",
            "answer"}``, as a dict, JSON text or :class:`~agent_wait.core.Answer`.
        pending: Optional: the thread's pending interrupts (``graph.get_state(config)``, its
            ``.interrupts``, or the last run's result). When the question is a ``@wait`` one,
            the answer is then *addressed*: the ``@wait`` call receives it unchanged, and any
            other ``@wait`` call LangGraph might hand it to refuses it (nothing is saved).

    Returns:
        The command to pass to ``graph.invoke`` with the thread's config.

    Raises:
        ValueError: The message is not an answer, or its ``question_id`` is not a LangGraph
            interrupt id (LangGraph would take ``{id: answer}`` as the answer itself and give
            it to whatever question is pending).
    """
    answer = _answer(answer_message)
    if not _INTERRUPT_ID.match(answer.question_id):
        raise ValueError(
            f"question_id: {answer.question_id!r} is not a LangGraph interrupt id (32 lowercase "
            "hex characters); LangGraph would hand the whole {id: answer} map to the pending question"
        )
    value = answer.answer
    if pending is not None:
        for item in interrupts_in(pending):
            if item.id == answer.question_id:
                value = address(answer.thread_id, item.value, answer.answer)
                break
    return Command(resume={answer.question_id: value})


def answer_problem(pending: Interrupt, answer: Any) -> str | None:
    """Why ``answer`` would break the question it answers, or None if it is usable.

    Only ``HumanInTheLoopMiddleware`` batches need this: LangChain saves a malformed batch answer
    before it fails, and every later resume of the thread then fails the same way. (``@wait``
    calls and per-call approvals check their answers inside ``interrupt()``, before saving.)
    """
    if not is_batch_request(pending.value):
        return None
    actions = batch_actions(pending.value)
    expected = f"{{'decisions': [...]}} with {len(actions)} decision(s), one per action in order"
    if not isinstance(answer, Mapping):
        return f"answer: expected {expected}, got {answer!r}"
    decisions = cast("Mapping[str, Any]", answer).get("decisions")
    if not isinstance(decisions, list):
        return f"answer.decisions: expected a list ({expected}), got {decisions!r}"
    decisions = cast("list[Any]", decisions)
    if len(decisions) != len(actions):
        return f"answer.decisions: expected {len(actions)} decision(s), one per action in order, got {len(decisions)}"
    for index, (decision, action) in enumerate(zip(decisions, actions, strict=True)):
        problem = _decision_problem(f"answer.decisions[{index}]", decision, action)
        if problem:
            return problem
    return None


def _decision_problem(where: str, decision: Any, action: Mapping[str, Any]) -> str | None:
    if not isinstance(decision, Mapping):
        return f"{where}: expected an object such as {{'type': 'approve'}}, got {decision!r}"
    decision = cast("Mapping[str, Any]", decision)
    kind = decision.get("type")
    allowed = action["allowed_decisions"]
    if kind not in allowed:
        return f"{where}.type: {kind!r} is not allowed for {action['name']!r} (allowed: {allowed})"
    if kind == "edit":
        edited = decision.get("edited_action")
        if not (
            isinstance(edited, Mapping)
            and isinstance(cast("Mapping[str, Any]", edited).get("name"), str)
            and isinstance(cast("Mapping[str, Any]", edited).get("args"), Mapping)
        ):
            return (
                f"{where}.edited_action: expected {{'name': str, 'args': {{...}}}}, got {edited!r}"
            )
    if kind == "respond" and not isinstance(decision.get("message"), str):
        return f"{where}.message: a 'respond' decision needs the reply text, got {decision.get('message')!r}"
    if kind == "reject" and not isinstance(decision.get("message", ""), str):
        return f"{where}.message: expected text, got {decision.get('message')!r}"
    return None


def _run_config(
    config: RunnableConfig | Mapping[str, Any] | None, thread_id: str
) -> RunnableConfig:
    merged: dict[str, Any] = dict(config or {})
    configurable: dict[str, Any] = dict(merged.get("configurable") or {})
    existing = configurable.get("thread_id")
    if existing is not None and str(existing) != thread_id:
        raise ValueError(
            f"config.configurable.thread_id: {existing!r} differs from the message's thread_id "
            f"{thread_id!r}; the message decides the thread"
        )
    configurable["thread_id"] = thread_id
    merged["configurable"] = configurable
    return cast("RunnableConfig", merged)


def _strict(config: RunnableConfig) -> RunnableConfig:
    configurable = {**(config.get("configurable") or {}), STRICT_RESUME_KEY: True}
    return cast("RunnableConfig", {**config, "configurable": configurable})


def _check_graph(graph: Any) -> Graph:
    if not isinstance(graph, Pregel):
        raise TypeError(f"graph: expected a compiled LangGraph graph, got {type(graph).__name__}")
    checkpointer: object = getattr(cast("object", graph), "checkpointer", None)
    if checkpointer is None or checkpointer is False:
        raise ValueError(
            "graph: handle_message needs a graph compiled with a checkpointer "
            "(builder.compile(checkpointer=...)); without one a parked thread cannot be resumed"
        )
    return cast("Graph", graph)


@contextmanager
def _logged() -> Generator[RunLog]:
    log = RunLog()
    token = RUN_LOG.set(log)
    try:
        yield log
    finally:
        RUN_LOG.reset(token)


def _check_routing(log: RunLog, result: Any, thread_id: str) -> None:
    problems = log.problems(interrupts_in(result))
    if problems:
        raise InterruptRoutingError(
            f"thread {thread_id!r}: {'; '.join(problems)}. LangGraph matches answers to a task's "
            "interrupt() calls by the order they run, so an answer could reach the wrong call, and "
            "a call approved earlier in the task runs again when it resumes. Nothing was "
            "published. Ask one question per task: langchain.agents.create_agent runs each tool "
            "call as its own task; otherwise let the model call one gated tool per turn "
            "(bind_tools(..., parallel_tool_calls=False)) or give each @wait call its own node. "
            "This thread stays parked and should be abandoned"
        )


def _refused(error: ValidationError, question_id: str, thread_id: str) -> Handled:
    for detail in error.errors():
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, Misaddressed):
            raise InterruptRoutingError(
                f"thread {thread_id!r}, question {question_id}: {cause}"
            ) from error
    return Handled(
        Outcome.INVALID_ANSWER,
        detail=f"question {question_id}: the answer was refused before it was saved: {error}",
    )


def _resume(answer: Answer, target: Interrupt) -> Command[Any] | Handled:
    problem = answer_problem(target, answer.answer)
    if problem:
        return Handled(Outcome.INVALID_ANSWER, detail=f"question {target.id}: {problem}")
    return Command(resume={target.id: address(answer.thread_id, target.value, answer.answer)})


def _seen(snapshots: Iterable[StateSnapshot], question_id: str) -> bool:
    """True if the thread's history shows it asked ``question_id``."""
    for snapshot in snapshots:
        if any(i.id == question_id for i in snapshot.interrupts):
            return True
        for task in snapshot.tasks:
            for item in task.interrupts:
                if item.id == question_id or question_id in _earlier_ids(task, item.id):
                    return True
    return False


def _earlier_ids(task: PregelTask, interrupt_id: str) -> list[str]:
    """The ids of the interrupts a task answered before the one it raised as ``interrupt_id``.

    The history keeps only a task's latest interrupt, so a question the task moved past is
    recognised by LangGraph's id scheme (``xxh3(namespace | answers so far)``, langgraph 1.2).
    The scheme is only trusted when it reproduces ``interrupt_id``; otherwise the answer is
    reported as for an unknown question, which is just as much a no-op.
    """
    if _slot_id is None:
        return []
    namespace = f"{task.name}:{task.id}"
    ids: list[str] = []
    for answered in range(_MAX_SLOTS):
        slot = str(_slot_id(namespace, answered))
        if slot == interrupt_id:
            return ids
        ids.append(slot)
    return []


def _not_pending(seen: bool, question_id: str, thread_id: str, pending: list[Interrupt]) -> Handled:
    if seen:
        state = f"parked on {[i.id for i in pending]}" if pending else "not parked"
        return Handled(
            Outcome.DUPLICATE,
            detail=f"question {question_id} of thread {thread_id!r} was already answered or the "
            f"thread moved on (it is {state}); nothing ran",
        )
    return Handled(
        Outcome.UNKNOWN_QUESTION,
        detail=f"thread {thread_id!r} never asked question {question_id}; nothing ran",
    )


def handle_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    strict: bool = False,
    reply_to: Mapping[str, Any] | None = None,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    clock: Clock | None = None,
) -> Handled:
    """Run or resume a LangGraph thread for one inbound message, then publish what it parked on.

    - A start message (no ``question_id``) runs ``graph.invoke(message["input"], config)``
      (:attr:`~agent_wait.core.Outcome.STARTED`). If the thread is already parked, nothing runs:
      the pending questions are published again under their same ids
      (:attr:`~agent_wait.core.Outcome.REPUBLISHED`), because invoking a parked thread with
      input would ask again under new ids and orphan the published ones.
    - An answer for a question the thread is waiting on resumes it with
      ``Command(resume={question_id: answer})`` (:attr:`~agent_wait.core.Outcome.RESUMED`).
      An answer to anything else runs nothing: :attr:`~agent_wait.core.Outcome.DUPLICATE` if the
      thread asked it before (answered already, or late; the questions the thread waits on now
      are then published again, so the redelivery of an answer whose publish failed gets the
      next question out), else
      :attr:`~agent_wait.core.Outcome.UNKNOWN_QUESTION`. An answer the question cannot take (a
      ``HumanInTheLoopMiddleware`` batch with the wrong decisions, ``@wait`` ``args`` that are
      not its arguments, a per-call decision its schema refuses) is refused before anything is
      saved: :attr:`~agent_wait.core.Outcome.INVALID_ANSWER`.

    Process one message per thread at a time (a FIFO queue grouped by thread id, or a lock):
    two resumes of the same thread racing each other are LangGraph's to order, not ours.

    Args:
        graph: The compiled graph, with a checkpointer.
        message: The inbound message: a dict, JSON text or bytes (validated with
            :func:`~agent_wait.core.parse_message`), or a parsed message.
        announce: Announcers for what the run parked on (None: the configured default).
        strict: Raise ``AnnounceFailed`` after every announcer was tried if a delivery failed,
            so the host can leave the message unacknowledged.
        reply_to: A hint for where answers go, copied into every envelope.
        config: Extra run config (callbacks, recursion_limit, configurable values); the
            message's thread id is merged into ``configurable``.
        clock: Returns "now" (aware); ``expires_at`` is measured from it.

    Returns:
        :class:`~agent_wait.core.Handled`: the outcome, the run's result (None when nothing ran)
        and the publish report.

    Raises:
        InterruptRoutingError: A question was asked in a task that asked or answered another
            one in the same run (two gated tools in one model turn under the prebuilt
            ``ToolNode``, several ``@wait`` calls in one node), or an answer reached a ``@wait``
            call it was not addressed to; nothing was published.
        ValueError: The graph has no checkpointer, or ``config`` names another thread.
        pydantic.ValidationError: The message is malformed (the error names the field).
    """
    graph = _check_graph(graph)
    parsed = message if isinstance(message, Answer | StartMessage) else parse_message(message)
    thread_id = parsed.thread_id
    run_config = _run_config(config, thread_id)
    pending = list(graph.get_state(run_config).interrupts)
    options: dict[str, Any] = {"reply_to": reply_to, "strict": strict, "clock": clock}

    if isinstance(parsed, StartMessage):
        if pending:
            report = publish(questions_in(pending), thread_id, announce, **options)
            return Handled(Outcome.REPUBLISHED, report=report, detail=_republished(pending))
        with _logged() as log:
            result = graph.invoke(parsed.input, run_config)
        outcome = Outcome.STARTED
    else:
        target = next((i for i in pending if i.id == parsed.question_id), None)
        if target is None:
            seen = _seen(graph.get_state_history(run_config), parsed.question_id)
            handled = _not_pending(seen, parsed.question_id, thread_id, pending)
            if handled.outcome is Outcome.DUPLICATE and pending:
                # This may be the redelivery of an answer whose resume parked on the next
                # question and whose strict publish failed: that question goes out now.
                report = publish(questions_in(pending), thread_id, announce, **options)
                handled = replace(handled, report=report)
            return handled
        command = _resume(parsed, target)
        if isinstance(command, Handled):
            return command
        try:
            with _logged() as log:
                result = graph.invoke(command, _strict(run_config))
        except UnknownInterruptError:
            # Answered by a concurrent handler between our read and the resume.
            return _not_pending(True, parsed.question_id, thread_id, [])
        except ValidationError as error:
            if not is_invalid_resume(error):
                raise
            return _refused(error, target.id, thread_id)
        outcome = Outcome.RESUMED
    _check_routing(log, result, thread_id)
    report = publish(questions_in(result), thread_id, announce, **options)
    return Handled(outcome, result=result, report=report)


async def ahandle_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    strict: bool = False,
    reply_to: Mapping[str, Any] | None = None,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    clock: Clock | None = None,
) -> Handled:
    """Async :func:`handle_message`: ``aget_state``, ``ainvoke`` and concurrent announcers.

    Use it with async checkpointers (``AsyncSqliteSaver``) and async nodes and tools.
    """
    graph = _check_graph(graph)
    parsed = message if isinstance(message, Answer | StartMessage) else parse_message(message)
    thread_id = parsed.thread_id
    run_config = _run_config(config, thread_id)
    pending = list((await graph.aget_state(run_config)).interrupts)
    options: dict[str, Any] = {"reply_to": reply_to, "strict": strict, "clock": clock}

    if isinstance(parsed, StartMessage):
        if pending:
            report = await apublish(questions_in(pending), thread_id, announce, **options)
            return Handled(Outcome.REPUBLISHED, report=report, detail=_republished(pending))
        with _logged() as log:
            result = await graph.ainvoke(parsed.input, run_config)
        outcome = Outcome.STARTED
    else:
        target = next((i for i in pending if i.id == parsed.question_id), None)
        if target is None:
            seen = await _aseen(graph.aget_state_history(run_config), parsed.question_id)
            handled = _not_pending(seen, parsed.question_id, thread_id, pending)
            if handled.outcome is Outcome.DUPLICATE and pending:
                report = await apublish(questions_in(pending), thread_id, announce, **options)
                handled = replace(handled, report=report)
            return handled
        command = _resume(parsed, target)
        if isinstance(command, Handled):
            return command
        try:
            with _logged() as log:
                result = await graph.ainvoke(command, _strict(run_config))
        except UnknownInterruptError:
            return _not_pending(True, parsed.question_id, thread_id, [])
        except ValidationError as error:
            if not is_invalid_resume(error):
                raise
            return _refused(error, target.id, thread_id)
        outcome = Outcome.RESUMED
    _check_routing(log, result, thread_id)
    report = await apublish(questions_in(result), thread_id, announce, **options)
    return Handled(outcome, result=result, report=report)


async def _aseen(snapshots: AsyncIterator[StateSnapshot], question_id: str) -> bool:
    collected = [snapshot async for snapshot in snapshots]
    return _seen(collected, question_id)


def _republished(pending: list[Interrupt]) -> str:
    return (
        f"the thread is parked on {len(pending)} question(s) {[i.id for i in pending]}; nothing ran, "
        "they were published again under the same ids"
    )
