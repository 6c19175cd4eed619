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
from agent_wait.langgraph._compat import INTERRUPT, RESUME
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel
from langgraph.types import Interrupt


@dataclass(frozen=True)
class SavedAnswers:
    """The answers a task had taken before a resume, and where they are saved."""

    checkpoint: RunnableConfig
    task_id: str
    answers: list[Any]


def checkpointer(graph: Pregel[Any, Any, Any, Any]) -> BaseCheckpointSaver[Any] | None:
    """The graph's checkpointer, when it is one (``handle_message`` checks it has one)."""
    saver: object = getattr(cast("object", graph), "checkpointer", None)
    return (
        cast("BaseCheckpointSaver[Any]", saver) if isinstance(saver, BaseCheckpointSaver) else None
    )


def interrupts_written(saved: CheckpointTuple | None) -> list[tuple[str, Interrupt]]:
    """The interrupts a checkpoint's tasks raised, with their task ids, from its pending writes.

    A task that finished after its answer keeps its interrupt write here, while the state
    snapshot shows no interrupt for it any more.
    """
    found: list[tuple[str, Interrupt]] = []
    for task, channel, value in (saved.pending_writes or []) if saved is not None else []:
        if channel == INTERRUPT:
            items: Iterable[object] = (
                cast("Sequence[object]", value) if isinstance(value, list | tuple) else [value]
            )
            for item in items:
                if isinstance(item, Interrupt):
                    found.append((task, cast("Interrupt", item)))
    return found


def answering_tasks(saved: CheckpointTuple | None) -> set[str]:
    """The tasks of a checkpoint's step that hold answers: each moved past a question of it."""
    writes = (saved.pending_writes or []) if saved is not None else []
    return {task for task, channel, value in writes if channel == RESUME and value}


def _saved(saved: CheckpointTuple | None, question_id: str) -> SavedAnswers | None:
    if saved is None:
        return None
    writes = saved.pending_writes or []
    task_id = next(
        (task for task, item in interrupts_written(saved) if item.id == question_id), None
    )
    if task_id is None:
        return None
    none: list[Any] = []
    answers: object = next(
        (value for task, channel, value in writes if task == task_id and channel == RESUME), none
    )
    listed = cast("list[Any]", answers) if isinstance(answers, list) else [answers]
    return SavedAnswers(saved.config, task_id, list(listed))


def restore_answers(graph: Pregel[Any, Any, Any, Any], saved: SavedAnswers | None) -> None:
    """Put the task's answers back as they were before the failed resume."""
    saver = checkpointer(graph)
    if saver is not None and saved is not None:
        # Special channels are upserted: this replaces the failed answer's write.
        saver.put_writes(saved.checkpoint, [(RESUME, saved.answers)], saved.task_id)


async def arestore_answers(graph: Pregel[Any, Any, Any, Any], saved: SavedAnswers | None) -> None:
    """Async :func:`restore_answers`."""
    saver = checkpointer(graph)
    if saver is not None and saved is not None:
        await saver.aput_writes(saved.checkpoint, [(RESUME, saved.answers)], saved.task_id)


@contextmanager
def answers_restored_on_failure(
    graph: Pregel[Any, Any, Any, Any], latest: CheckpointTuple | None, *question_ids: str
) -> Generator[None]:
    """Around a resume: if the run raises, the tasks' saved answers are put back, then it re-raises.

    ``latest`` is the thread's latest checkpoint, read before the resume; the tasks are those
    asking ``question_ids``. agent-wait's own errors (a refused or misrouted answer) are raised
    before anything is saved and pass through untouched.
    """
    try:
        yield
    except AgentWaitError:
        raise
    except Exception:
        # ``latest`` is the read from before the run: what was saved then is put back.
        for question_id in question_ids:
            restore_answers(graph, _saved(latest, question_id))
        raise


@asynccontextmanager
async def aanswers_restored_on_failure(
    graph: Pregel[Any, Any, Any, Any], latest: CheckpointTuple | None, *question_ids: str
) -> AsyncGenerator[None]:
    """Async :func:`answers_restored_on_failure`."""
    try:
        yield
    except AgentWaitError:
        raise
    except Exception:
        for question_id in question_ids:
            await arestore_answers(graph, _saved(latest, question_id))
        raise
