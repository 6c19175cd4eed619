"""Registers the ``eventbridge`` announcer; boto3 and aiobotocore are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``eventbridge``: :class:`agent_wait.eventbridge.EventBridgeAnnounce`."""
    register("eventbridge", "agent_wait.eventbridge._announcer:EventBridgeAnnounce")
