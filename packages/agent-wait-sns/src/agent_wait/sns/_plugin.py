"""Registers the ``sns`` announcer; boto3 and aiobotocore are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``sns``: :class:`agent_wait.sns.SnsAnnounce`."""
    register("sns", "agent_wait.sns._announcer:SnsAnnounce")
