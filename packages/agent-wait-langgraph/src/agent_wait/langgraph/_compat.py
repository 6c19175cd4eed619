"""Every LangGraph name outside its documented API that agent-wait uses, in one place.

Each says why it is needed. All are checked on langgraph 1.2.24: the declared floor, and the
newest release when ``nox -s canary`` (the adapter's tests on the newest framework releases)
last ran. Two kinds:

- required: answer routing cannot work without them, so a langgraph without them fails at
  import here, never with an answer given to the wrong call;
- optional (None, or a check that says False): the host's shortcuts; without them it reads the
  thread through LangGraph's public calls instead, slower but the same.

The adapter's other modules import these from here, never from ``langgraph._internal`` or a
``_name`` of langgraph: a new LangGraph release is checked by reading this file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

# Required. A task's answers live in its scratchpad (CONFIG_KEY_SCRATCHPAD) and are saved with a
# RESUME write sent through CONFIG_KEY_SEND; the task's namespace (CONFIG_KEY_CHECKPOINT_NS)
# names its interrupts. INTERRUPT is the channel a task's interrupts are written to, PUSH the
# first path entry of a task a Send created, CONFIG_KEY_STRICT_RESUME the switch that makes a
# resume naming an interrupt no longer pending raise UnknownInterruptError before it writes.
from langgraph._internal._constants import (  # pyright: ignore[reportPrivateUsage]
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    CONFIG_KEY_STRICT_RESUME,
    INTERRUPT,
    PUSH,
    RESUME,
)
from langgraph._internal._scratchpad import PregelScratchpad  # pyright: ignore[reportPrivateUsage]

# Public (langgraph.constants keeps them for backwards compatibility): the graph's checkpointer
# in a task's config, and the channel of the Send packets a checkpoint keeps.
from langgraph.constants import CONFIG_KEY_CHECKPOINTER, TASKS

# Required. A task's n-th answer fills the interrupt id interrupt_id(namespace, n), so the host
# recognises the ids of a task's earlier interrupts; validate_resume validates an answer against
# an interrupt's response schema and marks a failure as an invalid resume (is_invalid_resume).
from langgraph.types import (
    _interrupt_id as interrupt_id,  # pyright: ignore[reportPrivateUsage]
)
from langgraph.types import (
    _validate_resume as validate_resume,  # pyright: ignore[reportPrivateUsage]
)

__all__ = [
    "CONFIG_KEY_CHECKPOINTER",
    "CONFIG_KEY_CHECKPOINT_NS",
    "CONFIG_KEY_SCRATCHPAD",
    "CONFIG_KEY_SEND",
    "CONFIG_KEY_STRICT_RESUME",
    "INTERRUPT",
    "LEAN_STEPS",
    "PUSH",
    "RESUME",
    "TASKS",
    "TASK_FUNCTION_TYPES",
    "PregelScratchpad",
    "interrupt_id",
    "read_task_statuses",
    "reads_once",
    "validate_resume",
]


def _task_function_types() -> tuple[type, ...]:
    # The class of the functional API's @task functions: the host finds the tasks an
    # @entrypoint calls by it (a task is no node; only the code names it). Optional: none found.
    try:
        from langgraph.func import _TaskFunction  # pyright: ignore[reportPrivateUsage]
    except ImportError:  # pragma: no cover - another langgraph
        return ()
    return (_TaskFunction,)


TASK_FUNCTION_TYPES = _task_function_types()


# Optional: Pregel's own steps inside get_state. With them the host reads the latest checkpoint
# once and builds the snapshot from it (get_state, then checkpointer.get_tuple, reads it twice).
_ONE_READ_STEPS = (
    "_state_checkpointer",
    "_resolve_checkpointer",
    "_prepare_state_snapshot",
    "_aprepare_state_snapshot",
)


def reads_once(pregel: Any) -> bool:
    """Whether this compiled graph has the get_state steps the host calls one by one."""
    return all(callable(getattr(pregel, name, None)) for name in _ONE_READ_STEPS)


def state_checkpointer(pregel: Any, config: Any) -> Any:
    """``Pregel._state_checkpointer``: the saver ``get_state`` reads (see :func:`reads_once`)."""
    return pregel._state_checkpointer(config)


def resolve_checkpointer(pregel: Any, config: Any) -> Any:
    """``Pregel._resolve_checkpointer``: the run config's saver without ``ensure_config``'s merge."""
    return pregel._resolve_checkpointer(config)


def prepare_state_snapshot(pregel: Any, config: Any, saved: Any, saver: Any, live: bool) -> Any:
    """``Pregel._prepare_state_snapshot``: the snapshot ``get_state`` builds from a checkpoint."""
    return pregel._prepare_state_snapshot(config, saved, saver=saver, recurse=True, live=live)


async def aprepare_state_snapshot(
    pregel: Any, config: Any, saved: Any, saver: Any, live: bool
) -> Any:
    """Async :func:`prepare_state_snapshot`."""
    return await pregel._aprepare_state_snapshot(
        config, saved, saver=saver, recurse=True, live=live
    )


def migrates_checkpoints(pregel: Any) -> bool:
    """Whether the graph has ``_migrate_checkpoint``, which the host's lean read calls."""
    return callable(getattr(pregel, "_migrate_checkpoint", None))


def migrate_checkpoint(pregel: Any, checkpoint: Any) -> None:
    """``Pregel._migrate_checkpoint``: brings an older checkpoint's layout up to date in place."""
    pregel._migrate_checkpoint(checkpoint)


def _lean_steps() -> tuple[Any, Any, Any] | None:
    # Optional: the steps of _prepare_state_snapshot that tell a thread's tasks and interrupts.
    # A resume needs only those; without them the full snapshot (every channel's value) is built.
    try:
        from langgraph.pregel import _algo, _checkpoint, debug
    except ImportError:  # pragma: no cover - another langgraph
        return None
    steps = (
        getattr(_checkpoint, "channels_from_checkpoint", None),
        getattr(_algo, "prepare_next_tasks", None),
        getattr(debug, "tasks_w_writes", None),
    )
    return steps if all(callable(step) for step in steps) else None


LEAN_STEPS = _lean_steps()
"""``(channels_from_checkpoint, prepare_next_tasks, tasks_w_writes)``, or None."""


def _task_statuses() -> Callable[[Iterable[Any]], Mapping[str, Any]] | None:
    # Optional: LangGraph's reading of a step's writes into each task's status, which tells the
    # host a task's interrupts without the snapshot.
    try:
        from langgraph.pregel._task_status import read_task_statuses
    except ImportError:  # pragma: no cover - another langgraph
        return None
    return read_task_statuses


read_task_statuses = _task_statuses()
