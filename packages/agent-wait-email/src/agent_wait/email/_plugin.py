"""The module the ``agent_wait`` entry point names: hooks only, no aiosmtplib or starlette import."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``email`` by import path: aiosmtplib is imported only when it is used."""
    register("email", "agent_wait.email._announcer:EmailAnnounce")


@hookimpl
def register_commands(register: RegisterTarget) -> None:
    """Register ``agent-wait email serve``, the one-click links' confirmation pages."""
    register("email", "agent_wait.email._cli:setup")
