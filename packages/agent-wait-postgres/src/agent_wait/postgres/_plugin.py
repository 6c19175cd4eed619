"""Registers the ``postgres`` announcer, entry point, store and ledger; psycopg is imported when used."""

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


@hookimpl
def register_question_stores(register: RegisterTarget) -> None:
    """Register the ``postgres`` store: :class:`agent_wait.postgres.PostgresQuestionStore`."""
    register("postgres", "agent_wait.postgres._store:store_from_options")


@hookimpl
def register_execution_ledgers(register: RegisterTarget) -> None:
    """Register the ``postgres`` ledger: :class:`agent_wait.postgres.PostgresLedger`."""
    register("postgres", "agent_wait.postgres._ledger:ledger_from_options")
