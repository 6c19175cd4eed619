"""Registers the ``sqs`` announcer and entry point; boto3 and aiobotocore are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``sqs``: :class:`agent_wait.sqs.SqsAnnounce`."""
    register("sqs", "agent_wait.sqs._announcer:SqsAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register ``sqs``: :class:`agent_wait.sqs.SqsEntry`."""
    register("sqs", "agent_wait.sqs._entry:SqsEntry")
