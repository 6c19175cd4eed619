"""Registers the ``nats`` announcer and entry point; nats-py is imported only when one is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``nats``: :class:`agent_wait.nats.NatsAnnounce`."""
    register("nats", "agent_wait.nats._announcer:NatsAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register ``nats``: :class:`agent_wait.nats.NatsEntry`."""
    register("nats", "agent_wait.nats._entry:NatsEntry")
