"""agent-wait plugin: registers ``agent-wait inbox serve``.

Registered by import path: starting ``agent-wait`` imports neither starlette nor uvicorn.
"""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_commands(register: RegisterTarget) -> None:
    """Register ``inbox serve`` (:func:`agent_wait.inbox._cli.setup`)."""
    register("inbox serve", "agent_wait.inbox._cli:setup")
