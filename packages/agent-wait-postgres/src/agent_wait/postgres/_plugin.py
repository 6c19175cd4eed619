"""Registers the ``postgres`` announcer and entry point; psycopg is imported only when one is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``postgres``: :class:`agent_wait.postgres.PostgresAnnounce`."""
    register("postgres", "agent_wait.postgres._announcer:PostgresAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register the ``postgres`` entry point: :class:`agent_wait.postgres.PostgresEntry`."""
    register("postgres", "agent_wait.postgres._entry:PostgresEntry")
