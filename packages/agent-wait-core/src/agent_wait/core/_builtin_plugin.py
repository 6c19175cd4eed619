"""Registers the announcers that ship with agent-wait-core (stdlib only)."""

from __future__ import annotations

from agent_wait.core.hookspecs import RegisterTarget, hookimpl


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``memory``, ``log``, ``jsonl`` and ``sqlite``."""
    register("memory", "agent_wait.core._memory:MemoryAnnounce")
    register("log", "agent_wait.core._memory:LogAnnounce")
    register("jsonl", "agent_wait.core._jsonl:JsonlAnnounce")
    register("sqlite", "agent_wait.core._sqlite:SqliteAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register the embedded ``sqlite`` entry point."""
    register("sqlite", "agent_wait.core._sqlite_entry:SqliteEntry")


@hookimpl
def register_execution_ledgers(register: RegisterTarget) -> None:
    """Register the ``sqlite`` ledger: its own table in the sqlite inbox's file."""
    register("sqlite", "agent_wait.core._ledger:sqlite_ledger")
