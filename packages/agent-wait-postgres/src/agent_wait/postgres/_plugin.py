"""Registers the ``postgres`` announcer; psycopg is imported only when the announcer is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``postgres``: :class:`agent_wait.postgres.PostgresAnnounce`."""
    register("postgres", "agent_wait.postgres._announcer:PostgresAnnounce")
