"""The LangGraph host in one call, on core's host state machine, with what LangGraph leaves out.

LangGraph alone: a stale id can answer the *next* interrupt of
the same node; a start message redelivered to a parked thread mints a new interrupt id and
orphans the published one; a malformed ``HumanInTheLoopMiddleware`` batch answer is saved and
poisons the thread; and a static breakpoint pauses a thread without a question (the host asks
one: see ``agent_wait.langgraph._breakpoints``).
:func:`handle_message` reads the thread's state before it runs anything and closes each of these
(answers reach their own ``@wait`` call through ``agent_wait.langgraph._routing``);
the decisions (start, resume, republish, duplicate...) are ``agent_wait.host``'s.
"""

from __future__ import annotations

import dataclasses
import re
import weakref
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Unpack, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

import agent_wait.host as core_host
from agent_wait.core import (
    Announce,
    Answer,
    CallContext,
    Handled,
    InvalidAnswer,
    Question,
    StartMessage,
    parse_message,
    schema_problem,
    storable_problem,
)
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
from agent_wait.host.adapter import last_messages, with_asker
from agent_wait.langgraph import _compat
from agent_wait.langgraph._adapter import (
    TASKS_CHANNEL,
    answer_schema_of,
    batch_actions,
    contexts_in,
    interrupts_in,
    is_batch_request,
    questions_in,
    sends_needed,
)
from agent_wait.langgraph._breakpoints import (
    REASON_KEY,
    REJECTED_KEY,
    Breakpoint,
    Breakpoints,
    stopped_at,
    verdict_of,
)
from agent_wait.langgraph._breakpoints import question_of as breakpoint_question
from agent_wait.langgraph._recovery import (
    aanswers_restored_on_failure,
    answering_tasks,
    answers_restored_on_failure,
    checkpointer,
    interrupts_written,
)
from agent_wait.langgraph._routing import address
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.errors import UnknownInterruptError, is_invalid_resume
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, PregelTask, StateSnapshot

Graph = Pregel[Any, Any, Any, Any]

_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
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
        answer_message: The answer message: ``{"thread_id", "question_id",
            "answer"}``, as a dict, JSON text or :class:`~agent_wait.core.Answer`.
        pending: Optional: the thread's pending interrupts (``graph.get_state(config)``, its
            ``.interrupts``, or the last run's result). When the question is a ``@wait`` one,
            the answer is then *addressed*: the ``@wait`` call it answers finds it wherever
            LangGraph puts it in the task and receives it unchanged, and no other call takes it
            (several ``@wait`` calls in one task: a ``ToolNode`` turn, a loop in a node).

    Returns:
        The command to pass to ``graph.invoke`` with the thread's config.

    Raises:
        ValueError: The message is not an answer, or its ``question_id`` is not a LangGraph
            interrupt id (LangGraph would take ``{id: answer}`` as the answer itself and give
            it to whatever question is pending).
        InvalidAnswer: The checkpointer could not save the answer unchanged (see
            :func:`~agent_wait.core.storable_problem`).
    """
    answer = _answer(answer_message)
    if not _INTERRUPT_ID.match(answer.question_id):
        raise ValueError(
            f"question_id: {answer.question_id!r} is not a LangGraph interrupt id (32 lowercase "
            "hex characters); LangGraph would hand the whole {id: answer} map to the pending question"
        )
    problem = storable_problem(answer.answer)
    if problem:
        raise InvalidAnswer(f"question {answer.question_id}: {problem}")
    value = answer.answer
    if pending is not None:
        for item in interrupts_in(pending):
            if item.id == answer.question_id:
                value = address(answer.thread_id, item.value, answer.answer)
                break
    return Command(resume={answer.question_id: value})


def answer_problem(pending: Interrupt, answer: Any) -> str | None:
    """Why ``answer`` would break the question it answers, or None if it is usable.

    An answer that does not match the question's answer schema (``interrupt(value,
    response_schema=...)``, or an Agent Inbox request's) is refused: LangGraph does not check
    against a schema given as a dict, and a foreign tool that chokes on the answer has it saved
    first, so every later resume of the thread fails the same way. A
    ``HumanInTheLoopMiddleware`` batch answer is checked decision by decision for the same
    reason. (``@wait`` calls check their answers inside ``interrupt()``, before saving.)
    """
    schema = answer_schema_of(pending)
    if schema is not None:
        return schema_problem(schema, answer)
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


def _parked_on(result: Any) -> Any:
    """What a run's result tells it parked on; an entrypoint's own return value tells nothing.

    ``invoke`` gives a dict (``"__interrupt__"``), a streaming host a snapshot; an entrypoint
    that finished returns whatever it returns (a string, a list...).
    """
    if isinstance(result, StateSnapshot):
        return result
    return cast("Mapping[str, Any]", result) if isinstance(result, Mapping) else ()


_UNNAMED = "LangGraph"
"""The name LangGraph gives a graph compiled without one: not worth showing as the asker."""
_ROLES = {"human": "user", "ai": "assistant"}


def _said(message: object) -> tuple[str, str] | None:
    """A chat message's role and text for a question's context: the user's and the model's."""
    if not isinstance(message, BaseMessage) or message.type not in _ROLES:
        return None
    content = message.content
    if isinstance(content, str):
        return _ROLES[message.type], content
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return (_ROLES[message.type], "\n".join(str(t) for t in texts)) if texts else None


def _messages_of(values: object) -> Sequence[object]:
    """The ``messages`` of a graph's state (a run's result, a snapshot's or checkpoint's values)."""
    if not isinstance(values, Mapping):
        return ()
    messages: object = cast("Mapping[str, object]", values).get("messages")
    return cast("list[object]", messages) if isinstance(messages, list) else ()


def _thread_of(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {})["thread_id"])


def _strict(config: RunnableConfig) -> RunnableConfig:
    configurable = {**(config.get("configurable") or {}), _compat.CONFIG_KEY_STRICT_RESUME: True}
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


def _asked_in(snapshots: Iterable[StateSnapshot]) -> set[str]:
    """Every question id the thread's history shows it asked (walks the whole history)."""
    asked: set[str] = set()
    for snapshot in snapshots:
        asked.update(i.id for i in snapshot.interrupts)
        for task in snapshot.tasks:
            for item in task.interrupts:
                asked.add(item.id)
                asked.update(_earlier_ids(f"{task.name}:{task.id}", item.id))
    return asked


def _latest_asked(thread: _Thread) -> set[str]:
    """The ids the tasks of the latest checkpoint asked, including those they moved past.

    A resume that parks again in the same step, or that lets one of several interrupted tasks
    finish, writes no new checkpoint: its questions are only in this checkpoint's writes. Only
    a task holding answers (a resume write) moved past earlier questions: the tasks' names,
    which their ids need, are read for those alone.
    """
    written = interrupts_written(thread.latest)
    asked = {item.id for _, item in written}
    answering = answering_tasks(thread.latest)
    if any(task_id in answering for task_id, _ in written):
        names = {task.id: task.name for task in thread.tasks}
        for task_id, item in written:
            if task_id in answering and task_id in names:
                asked.update(_earlier_ids(f"{names[task_id]}:{task_id}", item.id))
    return asked


def _earlier_ids(namespace: str, interrupt_id: str) -> list[str]:
    """The ids of the interrupts a task answered before the one it raised as ``interrupt_id``.

    A checkpoint keeps only a task's latest interrupt, so a question the task moved past is
    recognised by LangGraph's id scheme (``xxh3(namespace | answers so far)``, langgraph 1.2;
    ``namespace`` is ``"<task name>:<task id>"``). The scheme is only trusted when it reproduces
    ``interrupt_id``; otherwise the answer is reported as for an unknown question, which is just
    as much a no-op.
    """
    ids: list[str] = []
    for answered in range(_MAX_SLOTS):
        slot = _compat.interrupt_id(namespace, answered)
        if slot == interrupt_id:
            return ids
        ids.append(slot)
    return []


def _task_names(pregel: Any) -> frozenset[str]:
    """The names of the functional API's ``@task`` functions an ``@entrypoint`` graph calls.

    A task called from an entrypoint is no node: its name is only in the code. These are the
    tasks the nodes' functions reach (their module's globals and their closures, then the
    tasks' own functions in turn). Kept per graph.
    """
    names = _TASK_NAMES.get(pregel)
    if names is None:
        found: dict[int, str] = {}
        todo = [getattr(node.bound, "func", None) for node in pregel.nodes.values()]
        while todo:
            function = todo.pop()
            code = getattr(function, "__code__", None)
            if code is None:
                continue
            scope = getattr(function, "__globals__", {})
            cells = [c.cell_contents for c in getattr(function, "__closure__", None) or ()]
            for value in (*(scope.get(n) for n in code.co_names), *cells):
                if isinstance(value, _compat.TASK_FUNCTION_TYPES) and id(value) not in found:
                    task_function: Any = getattr(value, "func", None)
                    found[id(value)] = str(getattr(task_function, "__name__", ""))
                    todo.append(task_function)
        names = frozenset(n for n in found.values() if n)
        _TASK_NAMES[pregel] = names
    return names


_TASK_NAMES: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()


def _asking_tasks(
    pregel: Any, contexts: dict[str, CallContext], latest: CheckpointTuple | None
) -> dict[str, CallContext]:
    """``contexts`` with a question asked in a ``@task`` of an entrypoint placed in that task.

    The interrupt reaches the entrypoint's own task, which the snapshot lists; the task that
    asked wrote it too, under its task id. Its name is found among the entrypoint's
    :func:`_task_names` by LangGraph's id scheme (see :func:`_earlier_ids`): a name counts only
    when ``<entrypoint namespace>|<name>:<task id>`` (through any tasks between) gives the
    interrupt's id, so a task it cannot tell leaves the entrypoint as the context.
    """
    if latest is None or not contexts or not (names := _task_names(pregel)):
        return contexts
    writers: dict[str, list[str]] = {}
    for task_id, channel, value in latest.pending_writes or ():
        if channel == _compat.INTERRUPT:
            for item in cast("Iterable[Any]", value or ()):
                writers.setdefault(str(getattr(item, "id", "")), []).append(str(task_id))
    placed = dict(contexts)
    for question_id, context in contexts.items():
        if context.namespace is None:
            continue
        others = [t for t in writers.get(question_id, ()) if t not in context.namespace]
        found = _asker(context.namespace, question_id, others, names)
        if found is not None:
            placed[question_id] = context.model_copy(update=found)
    return placed


def _asker(
    namespace: str, question_id: str, writers: list[str], names: frozenset[str]
) -> dict[str, str] | None:
    for task_id in writers:
        rest = [t for t in writers if t != task_id]
        for name in names:
            inner = f"{namespace}|{name}:{task_id}"
            if question_id in _slot_ids(inner):
                return {"node": name, "namespace": inner}
            deeper = _asker(inner, question_id, rest, names) if rest else None
            if deeper is not None:
                return deeper
    return None


def _slot_ids(namespace: str) -> list[str]:
    return [_compat.interrupt_id(namespace, answered) for answered in range(_MAX_SLOTS)]


ASKED_KEY = "agent_wait_asked"
"""Checkpoint metadata: the ids of the questions the thread asked before its pending ones.

Every run :func:`handle_message` makes carries it in ``config["metadata"]``, which LangGraph
copies into each checkpoint of the run, so the latest checkpoint alone tells an answer to a
question asked long ago (a duplicate) from one to a question never asked, however long the
history. Space-separated: LangGraph keeps only text, numbers and booleans in metadata."""


_Described = tuple[tuple[PregelTask, ...], Mapping[str, CallContext]]
"""A thread's next tasks, and where each pending question was asked (by its id)."""


@dataclass(frozen=True)
class _Thread:
    thread_id: str
    config: RunnableConfig
    pending: list[Interrupt]
    index: frozenset[str] | None
    """The ids in the latest checkpoint's :data:`ASKED_KEY`; None when it has none (a thread
    written before the index, or by a run outside handle_message): then the history is walked."""
    latest: CheckpointTuple | None
    """The latest checkpoint the state was read from: its pending writes hold the questions the
    thread moved past in its last step and the answers to put back if a resume fails."""
    describe: Callable[[], _Described] = field(repr=False, compare=False)
    """Tells the tasks and contexts (no IO): a resume needs neither, so they are worked out only
    when asked for."""
    stop: Breakpoint | None = None
    """The static breakpoint the thread is stopped at (then nothing is in ``pending``)."""
    stop_values: Any = field(default=None, repr=False, compare=False)
    """The thread's state at that breakpoint, summarised in its question."""

    @cached_property
    def _described(self) -> _Described:
        return self.describe()

    @property
    def tasks(self) -> tuple[PregelTask, ...]:
        return self._described[0]

    @property
    def contexts(self) -> Mapping[str, CallContext]:
        """Where each pending question was asked (node, nested graph, tool call), by its id."""
        return self._described[1]

    @cached_property
    def questions(self) -> list[Question]:
        """The pending questions, without where they were asked (see :class:`_Waiting`)."""
        if self.stop is not None:
            return [breakpoint_question(self.stop, self.stop_values)]
        return questions_in(self.pending)

    @property
    def pending_ids(self) -> list[str]:
        """The ids of the questions the thread waits on: its interrupts', or its breakpoint's."""
        if self.stop is not None:
            return [self.stop.question_id]
        return [item.id for item in self.pending]

    def target(self, question_id: str) -> Interrupt:
        return next(i for i in self.pending if i.id == question_id)

    def indexed(self, asked: Iterable[str]) -> RunnableConfig:
        """The run config whose checkpoints record ``asked`` plus what the thread waits on now."""
        ids = sorted({*asked, *self.pending_ids})
        metadata = {**(self.config.get("metadata") or {}), ASKED_KEY: " ".join(ids)}
        return cast("RunnableConfig", {**self.config, "metadata": metadata})


def _index_of(metadata: Mapping[str, Any] | None, *, saved: bool) -> frozenset[str] | None:
    index = (metadata or {}).get(ASKED_KEY)
    if isinstance(index, str):
        return frozenset(index.split())
    # No checkpoint yet: nothing was asked. A checkpoint without the index: unknown.
    return None if saved else frozenset()


_State = tuple[StateSnapshot, dict[str, CallContext], CheckpointTuple | None]
"""A thread's state with its nested graphs', where each question was asked, its latest checkpoint."""


def _thread(thread_id: str, config: RunnableConfig, state: _State) -> _Thread:
    snapshot, contexts, latest = state
    described: _Described = (tuple(snapshot.tasks), contexts)
    return _Thread(
        thread_id,
        config,
        list(snapshot.interrupts),
        _index_of(snapshot.metadata, saved=snapshot.created_at is not None),
        latest,
        lambda: described,
    )


def _quick_thread(
    pregel: Any, saver: Any, thread_id: str, config: RunnableConfig, latest: CheckpointTuple | None
) -> _Thread:
    """The thread from its latest checkpoint alone: what it waits on, from the checkpoint's writes.

    LangGraph tells a task's pending interrupts from the writes of its step
    (``read_task_statuses``); the tasks themselves, which need the graph's channels rebuilt, are
    told only when something asks for them (see :func:`_lean`). Several pending questions are
    put in the tasks' order, as the full snapshot lists them.
    """

    def describe() -> _Described:
        snapshot = None if latest is None else _lean(pregel, config, latest, saver)
        if snapshot is None:
            return (), {}
        contexts = contexts_in(snapshot, {"": _sends_of(latest)})
        return tuple(snapshot.tasks), _asking_tasks(pregel, contexts, latest)

    pending: list[Interrupt] = []
    if latest is not None and _compat.read_task_statuses is not None:  # (see _quick_ok)
        statuses = _compat.read_task_statuses(latest.pending_writes or [])
        pending = [item for status in statuses.values() for item in status.pending_interrupts]
    thread = _Thread(
        thread_id,
        config,
        pending,
        _index_of(None if latest is None else latest.metadata, saved=latest is not None),
        latest,
        describe,
    )
    if len(pending) > 1:
        # In place, so the thread keeps the tasks it has just worked out for the order.
        pending[:] = [item for task in thread.tasks for item in task.interrupts]
    return thread


def _live(config: RunnableConfig) -> bool:
    # As Pregel.get_state: the latest state (not a past checkpoint's) shows what is pending now.
    return "checkpoint_id" not in (config.get("configurable") or {})


def _read(
    graph: Graph, config: RunnableConfig, *, lean: bool = False
) -> tuple[StateSnapshot, CheckpointTuple | None]:
    """``graph.get_state(config, subgraphs=True)`` and the checkpoint it was built from, one read.

    ``Pregel.get_state`` reads the latest checkpoint and builds the snapshot from it; this makes
    the same two LangGraph calls (langgraph 1.2) and keeps the checkpoint, whose pending writes
    the host needs too, instead of reading it a second time. The host's configs are the thread's
    own (no ``checkpoint_ns``), so no nested graph is addressed. ``lean``: see :func:`_lean`.
    """
    pregel: Any = graph
    if not _compat.reads_once(pregel):
        return graph.get_state(config, subgraphs=True), pregel.checkpointer.get_tuple(config)
    saver: BaseCheckpointSaver[Any] = _compat.state_checkpointer(pregel, config)
    latest = saver.get_tuple(config)
    snapshot = _lean(pregel, config, latest, saver) if lean else None
    if snapshot is None:
        snapshot = _compat.prepare_state_snapshot(pregel, config, latest, saver, _live(config))
    return snapshot, latest


def _lean_ok(pregel: Any, config: RunnableConfig) -> bool:
    """Whether the thread's tasks can be told without the full snapshot (see :func:`_lean`)."""
    return _live(config) and _flat(pregel)


_FLAT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _flat(pregel: Any) -> bool:
    """Whether the compiled graph has no subgraph (whose states a snapshot reads too).

    Kept per graph: finding subgraphs walks every node, and a compiled graph keeps its nodes.
    """
    flat = _FLAT.get(pregel)
    if flat is None:
        flat = _compat.migrates_checkpoints(pregel) and not any(
            True for _ in pregel.get_subgraphs()
        )
        _FLAT[pregel] = flat
    return flat


def _saver(pregel: Any, config: RunnableConfig) -> BaseCheckpointSaver[Any]:
    """``Pregel._state_checkpointer(config)`` for the host's own run config, without its merge.

    That merge (``ensure_config``) is most of its cost and changes nothing here: a config naming
    its thread, as the host's always does, drops what a parent run would lend.
    """
    saver = _compat.resolve_checkpointer(pregel, config)
    if isinstance(saver, BaseCheckpointSaver):
        return cast("BaseCheckpointSaver[Any]", saver)
    return _compat.state_checkpointer(pregel, config)


def _quick_ok(pregel: Any, config: RunnableConfig) -> bool:
    """Whether :func:`_quick_thread` reads this thread (else the full snapshot is read)."""
    return (
        _compat.read_task_statuses is not None
        and _compat.LEAN_STEPS is not None
        and _compat.reads_once(pregel)
        and _lean_ok(pregel, config)
    )


def _lean(
    pregel: Any, config: RunnableConfig, saved: CheckpointTuple | None, saver: Any
) -> StateSnapshot | None:
    """The thread's tasks and pending interrupts without the rest of the snapshot, or None.

    A resume reads the thread only to know what it waits on, then LangGraph reads the same
    checkpoint again to run it: the full snapshot (every channel's value, executable tasks) is
    most of what the host adds to a resume. This takes ``Pregel._prepare_state_snapshot``'s
    steps that tell the tasks, so the tasks, interrupts and metadata are the full snapshot's;
    the values are left empty (no decision reads them). None, and the full snapshot is built:
    no checkpoint yet, a graph with nested graphs (whose states the snapshot reads too), a past
    checkpoint, or a langgraph without these steps.
    """
    if saved is None or _compat.LEAN_STEPS is None or not _lean_ok(pregel, config):
        return None
    from_checkpoint, next_tasks, with_writes = _compat.LEAN_STEPS
    _compat.migrate_checkpoint(pregel, saved.checkpoint)
    step = saved.metadata.get("step", -1) + 1
    channels, managed = from_checkpoint(
        pregel.channels, saved.checkpoint, saver=saver, config=saved.config
    )
    tasks = next_tasks(
        saved.checkpoint,
        saved.pending_writes or [],
        pregel.nodes,
        channels,
        managed,
        saved.config,
        step,
        step + 2,
        for_execution=False,
    )
    written: tuple[PregelTask, ...] = with_writes(
        tasks.values(), saved.pending_writes, None, pregel.stream_channels_asis, live=True
    )
    return StateSnapshot(
        values={},
        next=(),
        config=saved.config,
        metadata=saved.metadata,
        created_at=saved.checkpoint["ts"],
        parent_config=saved.parent_config,
        tasks=written,
        interrupts=tuple(i for task in written for i in task.interrupts),
    )


async def _aread(
    graph: Graph, config: RunnableConfig, *, lean: bool = False
) -> tuple[StateSnapshot, CheckpointTuple | None]:
    """Async :func:`_read`."""
    pregel: Any = graph
    if not _compat.reads_once(pregel):
        snapshot = await graph.aget_state(config, subgraphs=True)
        return snapshot, await pregel.checkpointer.aget_tuple(config)
    saver: BaseCheckpointSaver[Any] = _compat.state_checkpointer(pregel, config)
    latest = await saver.aget_tuple(config)
    snapshot = _lean(pregel, config, latest, saver) if lean else None
    if snapshot is None:
        snapshot = await _compat.aprepare_state_snapshot(
            pregel, config, latest, saver, _live(config)
        )
    return snapshot, latest


def _sends_of(checkpoint: CheckpointTuple | None) -> list[Any]:
    values = {} if checkpoint is None else checkpoint.checkpoint.get("channel_values") or {}
    return list(values.get(TASKS_CHANNEL) or ())


def _namespace(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("checkpoint_ns") or "")


@dataclass(frozen=True)
class _Waiting(Waiting):
    """What a LangGraph thread waits on: where each question was asked is worked out when read.

    It needs the thread's tasks, and no decision reads it: only the questions published again
    (:attr:`unanswered`) carry it.
    """

    thread: _Thread | None = field(default=None, repr=False, compare=False)
    asker: Callable[[list[Question], object], list[Question]] | None = field(
        default=None, repr=False, compare=False
    )
    """Adds the framework, the graph's name and shared messages (from the state's values)."""

    @property
    def unanswered(self) -> list[Question]:
        contexts: Mapping[str, CallContext] = {} if self.thread is None else self.thread.contexts
        asked = [
            q.model_copy(update={"context": contexts[q.question_id]})
            if q.question_id in contexts
            else q
            for q in super().unanswered
        ]
        if self.asker is None or not asked:
            return asked
        latest = None if self.thread is None else self.thread.latest
        return self.asker(asked, None if latest is None else latest.checkpoint["channel_values"])


class _Host:
    """What LangGraph adds to core's host: state from the checkpointer, strict resumes."""

    # Any: pyright reads Pregel.invoke's overloads as partially unknown (``Command[Unknown]``).
    graph: Any

    def __init__(
        self,
        graph: Graph,
        config: RunnableConfig | Mapping[str, Any] | None,
        stream_options: Mapping[str, Any] | None = None,
        run_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.graph = graph
        self.config = config
        self.stream_options = dict(stream_options or {})
        # Where the last run's questions were asked: read after it parks (one host per message).
        self._parked: Mapping[str, CallContext] = {}
        # Given to every run: breakpoints set at invoke time rather than compiled.
        self.run_options = dict(run_options or {})
        # The breakpoint the last run stopped at, asked as a question.
        self._stopped: Question | None = None

    def waiting(self, thread: _Thread) -> Waiting:
        return _Waiting.deferred(
            thread.pending_ids, lambda: thread.questions, thread=thread, asker=self._with_asker
        )

    def _with_asker(self, questions: list[Question], values: object) -> list[Question]:
        """``questions`` with the asker: LangGraph, the graph's name, shared messages."""
        name = getattr(self.graph, "name", None)
        agent = name if isinstance(name, str) and name != _UNNAMED else None
        return with_asker(questions, "langgraph", agent, last_messages(_messages_of(values), _said))

    def check(self, thread: _Thread, answer: Answer) -> Any:
        if thread.stop is not None:
            verdict_of(answer.answer)  # raises InvalidAnswer for anything but approve / reject
            return answer.answer
        problem = answer_problem(thread.target(answer.question_id), answer.answer)
        if problem:
            raise InvalidAnswer(problem)
        return answer.answer

    def questions_in(self, result: Any) -> list[Question]:
        values = result.values if isinstance(result, StateSnapshot) else result
        if self._stopped is not None:
            return self._with_asker([self._stopped], values)
        asked = questions_in(_parked_on(result), self._parked)
        return self._with_asker(asked, values) if asked else asked

    def _breakpoints(self) -> tuple[Breakpoints, Breakpoints]:
        """The ``interrupt_before`` and ``interrupt_after`` nodes: compiled, and given to runs."""
        before: Breakpoints = self.graph.interrupt_before_nodes or ()
        after: Breakpoints = self.graph.interrupt_after_nodes or ()
        given_before = self.run_options.get("interrupt_before") or ()
        given_after = self.run_options.get("interrupt_after") or ()
        return (
            "*" if "*" in (before, given_before) else (*before, *given_before),
            "*" if "*" in (after, given_after) else (*after, *given_after),
        )

    def _stop_in(
        self, thread_id: str, snapshot: StateSnapshot, latest: CheckpointTuple | None, ran: Any
    ) -> Breakpoint | None:
        before, after = self._breakpoints()
        return stopped_at(thread_id, latest, snapshot.next, before, after, ran)

    def _with_stop(self, thread: _Thread, snapshot: StateSnapshot, ran: Any) -> _Thread:
        stop = self._stop_in(thread.thread_id, snapshot, thread.latest, ran)
        if stop is None:
            return thread
        return dataclasses.replace(thread, stop=stop, stop_values=snapshot.values)

    def _may_stop(self, pending: Iterable[Any]) -> bool:
        """Whether to look for a breakpoint stop: breakpoints are set and nothing else is asked."""
        return not any(True for _ in pending) and any(self._breakpoints())

    def _streaming(self) -> dict[str, Any]:
        return {**self.stream_options, **self.run_options}

    def _rejected_config(
        self, thread: _Thread, asked: Iterable[str], reason: str
    ) -> RunnableConfig:
        config = thread.indexed(asked)
        assert thread.stop is not None
        metadata = {
            **(config.get("metadata") or {}),
            REJECTED_KEY: thread.stop.question_id,
            REASON_KEY: reason,
        }
        return cast("RunnableConfig", {**config, "metadata": metadata})

    def unfinished(self, thread: _Thread) -> bool:
        # Not parked, yet the latest checkpoint has tasks to run: the run stopped after a saved
        # step (a worker killed), and nothing would ever run them. A breakpoint a person
        # rejected leaves tasks too, on purpose: the thread stays stopped there.
        if thread.pending or thread.stop is not None or not thread.tasks:
            return False
        metadata: Mapping[str, Any] = {} if thread.latest is None else thread.latest.metadata
        return REJECTED_KEY not in metadata

    def _command(self, thread: _Thread, answers: Mapping[str, Any]) -> Command[Any]:
        # Several answers (a message with more_answers) resume in one step: each pending
        # task runs once, instead of once per answer.
        return Command(
            resume={
                question_id: address(thread.thread_id, thread.target(question_id).value, value)
                for question_id, value in answers.items()
            }
        )


@contextmanager
def _resuming() -> Generator[None]:
    try:
        yield
    except UnknownInterruptError as error:
        # Answered by a concurrent handler between our read and the resume.
        raise QuestionNotPending(str(error)) from error
    except ValidationError as error:
        if not is_invalid_resume(error):
            raise
        raise InvalidAnswer(str(error)) from error


class _SyncHost(_Host, StreamingHost[_Thread, Any]):
    def load(self, thread_id: str) -> _Thread:
        config = _run_config(self.config, thread_id)
        if _quick_ok(self.graph, config):
            saver = _saver(self.graph, config)
            thread = _quick_thread(self.graph, saver, thread_id, config, saver.get_tuple(config))
        else:
            thread = _thread(thread_id, config, self._state(config, lean=True))
        if thread.latest is None or not self._may_stop(thread.pending):
            return thread
        snapshot = self.graph.get_state(config)
        return self._with_stop(thread, snapshot, self._ran_nodes(snapshot))

    def _ran_nodes(self, snapshot: StateSnapshot) -> tuple[str, ...] | None:
        """The nodes of the step that wrote ``snapshot``, read only for ``interrupt_after``."""
        if not self._breakpoints()[1] or snapshot.parent_config is None:
            return None
        return self.graph.get_state(snapshot.parent_config).next

    def _note_stop(self, thread_id: str, snapshot: StateSnapshot, latest: Any) -> None:
        if snapshot.interrupts or not self._may_stop(()):
            return
        stop = self._stop_in(thread_id, snapshot, latest, self._ran_nodes(snapshot))
        self._stopped = None if stop is None else breakpoint_question(stop, snapshot.values)

    def _past_breakpoint(self, thread: _Thread, answers: Mapping[str, Any]) -> Any:
        go, reason = verdict_of(next(iter(answers.values())))
        asked = self._asked(thread)
        if not go:
            # The thread stays where it stopped; its state records who stopped it there and why.
            self.graph.update_state(self._rejected_config(thread, asked, reason), None)
            return self.graph.get_state(thread.config)
        config = thread.indexed(asked)
        # LangGraph's documented way past a breakpoint: run again with no input.
        return self._ran(config, self.graph.invoke(None, config, **self.run_options))

    def _state(self, config: RunnableConfig, *, lean: bool = False) -> _State:
        snapshot, latest = _read(self.graph, config, lean=lean)
        saver = checkpointer(self.graph)
        sends = {
            # The thread's own level is the checkpoint just read.
            _namespace(level): _sends_of(
                latest if not _namespace(level) or saver is None else saver.get_tuple(level)
            )
            for level in sends_needed(snapshot)
        }
        contexts = _asking_tasks(self.graph, contexts_in(snapshot, sends), latest)
        return snapshot, contexts, latest

    def _ran(self, config: RunnableConfig, result: Any) -> Any:
        if interrupts_in(_parked_on(result)):
            # Only where the questions were asked is kept: the lean read tells it as well.
            self._parked = self._state(config, lean=True)[1]
        elif self._may_stop(()):
            snapshot, latest = _read(self.graph, config)
            self._note_stop(_thread_of(config), snapshot, latest)
        return result

    def asked(self, thread: _Thread, question_id: str) -> bool:
        if thread.index is not None and question_id in thread.index:
            return True  # the usual duplicate: decided without another read
        return question_id in self._asked(thread)

    def _asked(self, thread: _Thread) -> set[str]:
        if thread.index is None:
            return _asked_in(self.graph.get_state_history(thread.config))
        return {*thread.index, *_latest_asked(thread)}

    def start(self, thread: _Thread, message: StartMessage) -> Any:
        config = thread.indexed(self._asked(thread))
        return self._ran(config, self.graph.invoke(message.input, config, **self.run_options))

    def proceed(self, thread: _Thread) -> Any:
        # Input None: LangGraph runs the latest checkpoint's pending tasks.
        config = thread.indexed(self._asked(thread))
        return self._ran(config, self.graph.invoke(None, config))

    def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Any:
        if thread.stop is not None:
            return self._past_breakpoint(thread, answers)
        command = self._command(thread, answers)
        config = _strict(thread.indexed(self._asked(thread)))
        with answers_restored_on_failure(self.graph, thread.latest, *answers), _resuming():
            return self._ran(config, self.graph.invoke(command, config, **self.run_options))

    def stream_start(self, thread: _Thread, message: StartMessage) -> Iterator[Any]:
        config = thread.indexed(self._asked(thread))
        yield from self.graph.stream(message.input, config, **self._streaming())
        yield self._streamed(thread)

    def stream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Iterator[Any]:
        if thread.stop is not None:
            go, reason = verdict_of(next(iter(answers.values())))
            asked = self._asked(thread)
            if not go:
                self.graph.update_state(self._rejected_config(thread, asked, reason), None)
                yield Ran(self.graph.get_state(thread.config))
                return
            yield from self.graph.stream(None, thread.indexed(asked), **self._streaming())
            yield self._streamed(thread)
            return
        command = self._command(thread, answers)
        config = _strict(thread.indexed(self._asked(thread)))
        with answers_restored_on_failure(self.graph, thread.latest, *answers), _resuming():
            yield from self.graph.stream(command, config, **self._streaming())
        yield self._streamed(thread)

    def _streamed(self, thread: _Thread) -> Ran:
        # What the run parked on is in the checkpoint, whatever the stream mode showed of it.
        snapshot, self._parked, latest = self._state(thread.config)
        self._note_stop(thread.thread_id, snapshot, latest)
        return Ran(snapshot)


class _AsyncHost(_Host, AsyncStreamingHost[_Thread, Any]):
    async def load(self, thread_id: str) -> _Thread:
        config = _run_config(self.config, thread_id)
        if _quick_ok(self.graph, config):
            saver = _saver(self.graph, config)
            latest = await saver.aget_tuple(config)
            thread = _quick_thread(self.graph, saver, thread_id, config, latest)
        else:
            thread = _thread(thread_id, config, await self._state(config, lean=True))
        if thread.latest is None or not self._may_stop(thread.pending):
            return thread
        snapshot = await self.graph.aget_state(config)
        return self._with_stop(thread, snapshot, await self._ran_nodes(snapshot))

    async def _ran_nodes(self, snapshot: StateSnapshot) -> tuple[str, ...] | None:
        if not self._breakpoints()[1] or snapshot.parent_config is None:
            return None
        return (await self.graph.aget_state(snapshot.parent_config)).next

    async def _note_stop(self, thread_id: str, snapshot: StateSnapshot, latest: Any) -> None:
        if snapshot.interrupts or not self._may_stop(()):
            return
        stop = self._stop_in(thread_id, snapshot, latest, await self._ran_nodes(snapshot))
        self._stopped = None if stop is None else breakpoint_question(stop, snapshot.values)

    async def _past_breakpoint(self, thread: _Thread, answers: Mapping[str, Any]) -> Any:
        go, reason = verdict_of(next(iter(answers.values())))
        asked = await self._asked(thread)
        if not go:
            await self.graph.aupdate_state(self._rejected_config(thread, asked, reason), None)
            return await self.graph.aget_state(thread.config)
        config = thread.indexed(asked)
        return await self._ran(config, await self.graph.ainvoke(None, config, **self.run_options))

    async def _state(self, config: RunnableConfig, *, lean: bool = False) -> _State:
        snapshot, latest = await _aread(self.graph, config, lean=lean)
        saver = checkpointer(self.graph)
        sends = {
            _namespace(level): _sends_of(
                latest if not _namespace(level) or saver is None else await saver.aget_tuple(level)
            )
            for level in sends_needed(snapshot)
        }
        contexts = _asking_tasks(self.graph, contexts_in(snapshot, sends), latest)
        return snapshot, contexts, latest

    async def _ran(self, config: RunnableConfig, result: Any) -> Any:
        if interrupts_in(_parked_on(result)):
            self._parked = (await self._state(config, lean=True))[1]
        elif self._may_stop(()):
            snapshot, latest = await _aread(self.graph, config)
            await self._note_stop(_thread_of(config), snapshot, latest)
        return result

    async def asked(self, thread: _Thread, question_id: str) -> bool:
        if thread.index is not None and question_id in thread.index:
            return True
        return question_id in await self._asked(thread)

    async def _asked(self, thread: _Thread) -> set[str]:
        if thread.index is None:
            return _asked_in([s async for s in self.graph.aget_state_history(thread.config)])
        return {*thread.index, *_latest_asked(thread)}

    async def start(self, thread: _Thread, message: StartMessage) -> Any:
        config = thread.indexed(await self._asked(thread))
        result = await self.graph.ainvoke(message.input, config, **self.run_options)
        return await self._ran(config, result)

    async def proceed(self, thread: _Thread) -> Any:
        config = thread.indexed(await self._asked(thread))
        return await self._ran(config, await self.graph.ainvoke(None, config))

    async def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Any:
        if thread.stop is not None:
            return await self._past_breakpoint(thread, answers)
        command = self._command(thread, answers)
        config = _strict(thread.indexed(await self._asked(thread)))
        async with aanswers_restored_on_failure(self.graph, thread.latest, *answers):
            with _resuming():
                result = await self.graph.ainvoke(command, config, **self.run_options)
                return await self._ran(config, result)

    async def astream_start(self, thread: _Thread, message: StartMessage) -> AsyncIterator[Any]:
        config = thread.indexed(await self._asked(thread))
        async for chunk in self.graph.astream(message.input, config, **self._streaming()):
            yield chunk
        yield await self._streamed(thread)

    async def astream_resume(
        self, thread: _Thread, answers: Mapping[str, Any]
    ) -> AsyncIterator[Any]:
        if thread.stop is not None:
            go, reason = verdict_of(next(iter(answers.values())))
            asked = await self._asked(thread)
            if not go:
                await self.graph.aupdate_state(self._rejected_config(thread, asked, reason), None)
                yield Ran(await self.graph.aget_state(thread.config))
                return
            async for chunk in self.graph.astream(None, thread.indexed(asked), **self._streaming()):
                yield chunk
            yield await self._streamed(thread)
            return
        command = self._command(thread, answers)
        config = _strict(thread.indexed(await self._asked(thread)))
        async with aanswers_restored_on_failure(self.graph, thread.latest, *answers):
            with _resuming():
                async for chunk in self.graph.astream(command, config, **self._streaming()):
                    yield chunk
        yield await self._streamed(thread)

    async def _streamed(self, thread: _Thread) -> Ran:
        snapshot, self._parked, latest = await self._state(thread.config)
        await self._note_stop(thread.thread_id, snapshot, latest)
        return Ran(snapshot)


def _given(before: Breakpoints | None, after: Breakpoints | None) -> dict[str, Any]:
    """The breakpoints given to every run, as ``invoke`` takes them."""
    given: dict[str, Any] = {}
    for option, nodes in (("interrupt_before", before), ("interrupt_after", after)):
        if nodes is None:
            continue
        if isinstance(nodes, str) and nodes != "*":
            raise TypeError(f"{option}: expected a list of node names or '*', got {nodes!r}")
        given[option] = nodes
    return given


def _stream_options(stream_mode: Any, subgraphs: bool) -> dict[str, Any]:
    """What every ``graph.stream`` call of a run takes (no ``stream_mode``: LangGraph's default)."""
    options: dict[str, Any] = {"subgraphs": subgraphs}
    if stream_mode is not None:
        options["stream_mode"] = stream_mode
    return options


def handle_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    interrupt_before: Breakpoints | None = None,
    interrupt_after: Breakpoints | None = None,
    **options: Unpack[MessageOptions],
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
      :attr:`~agent_wait.core.Outcome.UNKNOWN_QUESTION`. An answer or start message that comes
      back to a thread that is not parked but has tasks left (a worker killed after a step was
      saved) continues the run with ``graph.invoke(None, config)``
      (:attr:`~agent_wait.core.Outcome.CONTINUED`). An answer the question cannot take (a
      ``HumanInTheLoopMiddleware`` batch with the wrong decisions, ``@wait`` ``args`` that are
      not its arguments, a per-call decision its schema refuses) is refused before anything is
      saved: :attr:`~agent_wait.core.Outcome.INVALID_ANSWER`.
    - A run stopped at a static breakpoint (``interrupt_before`` / ``interrupt_after``,
      compiled or given here) asks "continue past the breakpoint before/after <node>?"
      (``question``: ``{"breakpoint", "node", "next", "text", "state"}``, ``context.node``).
      ``{"action": "approve"}`` continues the run (``invoke(None, config)``, as LangGraph
      documents); ``{"action": "reject", "reason": ...}`` runs nothing and leaves the thread
      stopped there, recording the question id and reason in the checkpoint metadata
      (``agent_wait_breakpoint_rejected``, ``agent_wait_breakpoint_reason``).

    Process one message per thread at a time (a FIFO queue grouped by thread id, or a lock):
    two resumes of the same thread racing each other are LangGraph's to order, not ours.

    Args:
        graph: The compiled graph, with a checkpointer.
        message: The inbound message: a dict, JSON text or bytes (validated with
            :func:`~agent_wait.core.parse_message`), or a parsed message.
        announce: Announcers for what the run parked on (None: the configured default).
        config: Extra run config (callbacks, recursion_limit, configurable values); the
            message's thread id is merged into ``configurable``.
        interrupt_before: Static breakpoints given to every run (node names or ``"*"``), as
            ``graph.invoke`` takes them, besides those compiled in. Give the same ones with
            every message of a thread: the answer's host recognises the stop by them.
        interrupt_after: As ``interrupt_before``, after the nodes run.
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see
            :class:`~agent_wait.host.MessageOptions`.

    Returns:
        :class:`~agent_wait.core.Handled`: the outcome, the run's result (None when nothing ran)
        and the publish report.

    Raises:
        InterruptRoutingError: A bare ``interrupt()`` took the answer of a ``@wait`` call
            running in the same task; the run stopped there.
        ValueError: The graph has no checkpointer, or ``config`` names another thread.
        TypeError: ``interrupt_before`` / ``interrupt_after`` is a string other than ``"*"``.
        pydantic.ValidationError: The message is malformed (the error names the field).
    """
    breakpoints = _given(interrupt_before, interrupt_after)
    host = _SyncHost(_check_graph(graph), config, run_options=breakpoints)
    return core_host.handle_message(host, message, announce, **options)


async def ahandle_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    interrupt_before: Breakpoints | None = None,
    interrupt_after: Breakpoints | None = None,
    **options: Unpack[MessageOptions],
) -> Handled:
    """Async :func:`handle_message`: ``aget_state``, ``ainvoke`` and concurrent announcers.

    Use it with async checkpointers (``AsyncSqliteSaver``) and async nodes and tools.
    """
    breakpoints = _given(interrupt_before, interrupt_after)
    host = _AsyncHost(_check_graph(graph), config, run_options=breakpoints)
    return await core_host.ahandle_message(host, message, announce, **options)


def stream_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    stream_mode: Any = None,
    subgraphs: bool = False,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    interrupt_before: Breakpoints | None = None,
    interrupt_after: Breakpoints | None = None,
    **options: Unpack[MessageOptions],
) -> Streamed:
    """:func:`handle_message` for a host that streams: ``graph.stream(...)`` instead of ``invoke``.

    Iterate the result for the chunks ``graph.stream`` yields (with ``stream_mode`` and
    ``subgraphs`` as LangGraph takes them: ``"updates"``, ``"messages"``, ``["values",
    "custom"]``, ...); once the stream ends, the questions the run parked on (read from the
    checkpoint) are published, and ``.handled`` is the :class:`~agent_wait.core.Handled`. The
    same decisions as :func:`handle_message`: a redelivered start, a duplicate or an invalid
    answer yields no chunks. Other arguments as :func:`handle_message`.

    Example::

        run = stream_message(graph, message, announce, stream_mode="messages")
        for token, metadata in run:
            send_to_ui(token)
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    streaming = _stream_options(stream_mode, subgraphs)
    breakpoints = _given(interrupt_before, interrupt_after)
    host = _SyncHost(_check_graph(graph), config, streaming, breakpoints)
    return core_host.stream_message(host, message, announce, **options)


def astream_message(
    graph: Any,
    message: Answer | StartMessage | Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    stream_mode: Any = None,
    subgraphs: bool = False,
    config: RunnableConfig | Mapping[str, Any] | None = None,
    interrupt_before: Breakpoints | None = None,
    interrupt_after: Breakpoints | None = None,
    **options: Unpack[MessageOptions],
) -> AsyncStreamed:
    """Async :func:`stream_message`: ``graph.astream(...)``; iterate with ``async for``."""
    streaming = _stream_options(stream_mode, subgraphs)
    breakpoints = _given(interrupt_before, interrupt_after)
    host = _AsyncHost(_check_graph(graph), config, streaming, breakpoints)
    return core_host.astream_message(host, message, announce, **options)
