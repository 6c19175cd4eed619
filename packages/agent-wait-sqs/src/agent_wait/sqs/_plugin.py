"""Registers the ``sqs`` announcer; boto3 and aiobotocore are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``sqs``: :class:`agent_wait.sqs.SqsAnnounce`."""
    register("sqs", "agent_wait.sqs._announcer:SqsAnnounce")
