"""Every Strands name outside its documented API that agent-wait uses, in one place.

Strands keeps a run's interrupts, a session's agent record and its sync-over-async bridge in
private names, with no public accessor. Each name here says why it is needed; all are checked on
strands-agents 1.62.0: the declared floor, and the newest release when ``nox -s canary`` (the
adapter's tests on the newest framework releases) last ran. The adapter's other modules reach
them only through here: a new Strands release is checked by reading this file.
"""

from __future__ import annotations

import os
from typing import Any

# The sync ``agent(...)`` runs ``invoke_async`` on a private event loop in a worker thread with
# this; the adapter's sync streaming runs ``stream_async`` on the same bridge, so both behave
# alike (context variables, the loop's lifetime).
from strands._async import run_async  # pyright: ignore[reportPrivateUsage]

# A run's interrupts and their responses, as the session's agent record saves them; the host
# reads a parked thread's pending interrupts from the record without building an Agent.
from strands.interrupt import (
    _InterruptState as InterruptState,  # pyright: ignore[reportPrivateUsage]
)

__all__ = [
    "InterruptState",
    "agent_file",
    "interrupt_state",
    "read_file",
    "reads_agent_files",
    "record_internal_state",
    "run_async",
    "session_manager",
]


def session_manager(agent: Any) -> Any:
    """An Agent's ``_session_manager`` (None without one): what saves and restores its session."""
    return getattr(agent, "_session_manager", None)


def interrupt_state(runner: Any) -> Any:
    """The runner's ``_interrupt_state`` (an Agent, a Swarm and a Graph keep one), or None.

    Strands' own session code reads it the same way.
    """
    return getattr(runner, "_interrupt_state", None)


def record_internal_state(record: Any) -> Any:
    """A ``SessionAgent``'s ``_internal_state``: where Strands saves the interrupt state."""
    return record._internal_state


def reads_agent_files(repository: Any) -> bool:
    """Whether a FileSessionManager has the helpers :func:`agent_file` and :func:`read_file` use.

    ``read_agent`` builds the whole ``SessionAgent`` with ``from_dict``, which looks the
    dataclass's signature up once per key: most of a read. Reading the record's file with the
    repository's own helpers (path checks, symlink refusal) gives the two parts the host needs.
    """
    return callable(getattr(repository, "_get_agent_path", None)) and callable(
        getattr(repository, "_read_file", None)
    )


def agent_file(repository: Any, session_id: str, agent_id: str) -> str:
    """The path of an agent record's ``agent.json`` in a FileSessionManager's directory."""
    return os.path.join(repository._get_agent_path(session_id, agent_id), "agent.json")


def read_file(repository: Any, path: str) -> object:
    """A FileSessionManager's JSON file, read as it reads its own."""
    return repository._read_file(path)
