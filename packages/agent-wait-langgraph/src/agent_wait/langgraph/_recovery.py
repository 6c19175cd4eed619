"""Undo what LangGraph saved of an answer whose resume raised.

When an ``interrupt()`` call takes its answer, LangGraph saves the answer as the task's resume
value (a pending write on the checkpoint) before the rest of the task runs. If the task then
raises, the write stays, and every later resume of the task hands ``interrupt()`` that saved
answer again: a corrected answer is ignored and the thread can never go on. The host reads the
task's resume value before resuming and puts it back when the run raises.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from agent_wait.core import AgentWaitError
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel
from langgraph.types import Interrupt

# The pending-write channels of a task's interrupts and of its answers so far (langgraph 1.2,
# ``langgraph._internal._constants``; an empty resume list is the same as none).
_INTERRUPT = "__interrupt__"
_RESUME = "__resume__"


@dataclass(frozen=True)
class SavedAnswers:
    """The answers a task had taken before a resume, and where they are saved."""

    checkpoint: RunnableConfig
    task_id: str
    answers: list[Any]


def _checkpointer(graph: Pregel[Any, Any, Any, Any]) -> BaseCheckpointSaver[Any] | None:
    saver: object = getattr(cast("object", graph), "checkpointer", None)
    return (
        cast("BaseCheckpointSaver[Any]", saver) if isinstance(saver, BaseCheckpointSaver) else None
    )


def _asks(value: object, question_id: str) -> bool:
    items: Iterable[object] = (
        cast("Sequence[object]", value) if isinstance(value, list | tuple) else [value]
    )
    return any(isinstance(item, Interrupt) and item.id == question_id for item in items)


def _saved(saved: CheckpointTuple | None, question_id: str) -> SavedAnswers | None:
    if saved is None:
        return None
    writes = saved.pending_writes or []
    task_id = next(
        (
            task
            for task, channel, value in writes
            if channel == _INTERRUPT and _asks(value, question_id)
        ),
        None,
    )
    if task_id is None:
        return None
    none: list[Any] = []
    answers: object = next(
        (value for task, channel, value in writes if task == task_id and channel == _RESUME), none
    )
    listed = cast("list[Any]", answers) if isinstance(answers, list) else [answers]
    return SavedAnswers(saved.config, task_id, list(listed))


def saved_answers(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, question_id: str
) -> SavedAnswers | None:
    """What the task asking ``question_id`` has answered so far (None: not a root-graph task)."""
    saver = _checkpointer(graph)
    return None if saver is None else _saved(saver.get_tuple(config), question_id)


async def asaved_answers(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, question_id: str
) -> SavedAnswers | None:
    """Async :func:`saved_answers`."""
    saver = _checkpointer(graph)
    return None if saver is None else _saved(await saver.aget_tuple(config), question_id)


def restore_answers(graph: Pregel[Any, Any, Any, Any], saved: SavedAnswers | None) -> None:
    """Put the task's answers back as they were before the failed resume."""
    saver = _checkpointer(graph)
    if saver is not None and saved is not None:
        # Special channels are upserted: this replaces the failed answer's write.
        saver.put_writes(saved.checkpoint, [(_RESUME, saved.answers)], saved.task_id)


async def arestore_answers(graph: Pregel[Any, Any, Any, Any], saved: SavedAnswers | None) -> None:
    """Async :func:`restore_answers`."""
    saver = _checkpointer(graph)
    if saver is not None and saved is not None:
        await saver.aput_writes(saved.checkpoint, [(_RESUME, saved.answers)], saved.task_id)


@contextmanager
def answers_restored_on_failure(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *question_ids: str
) -> Generator[None]:
    """Around a resume: if the run raises, the tasks' saved answers are put back, then it re-raises.

    The tasks are those asking ``question_ids``. agent-wait's own errors (a refused or misrouted answer) are raised before anything is saved
    and pass through untouched.
    """
    saved = [saved_answers(graph, config, question_id) for question_id in question_ids]
    try:
        yield
    except AgentWaitError:
        raise
    except Exception:
        for task in saved:
            restore_answers(graph, task)
        raise


@asynccontextmanager
async def aanswers_restored_on_failure(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, *question_ids: str
) -> AsyncGenerator[None]:
    """Async :func:`answers_restored_on_failure`."""
    saved = [await asaved_answers(graph, config, question_id) for question_id in question_ids]
    try:
        yield
    except AgentWaitError:
        raise
    except Exception:
        for task in saved:
            await arestore_answers(graph, task)
        raise
