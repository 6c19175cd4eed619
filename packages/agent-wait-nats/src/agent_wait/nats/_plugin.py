"""Registers the ``nats`` announcer; nats-py is imported only when the announcer is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``nats``: :class:`agent_wait.nats.NatsAnnounce`."""
    register("nats", "agent_wait.nats._announcer:NatsAnnounce")
