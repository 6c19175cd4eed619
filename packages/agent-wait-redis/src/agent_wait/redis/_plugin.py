"""Registers the ``redis`` announcer; redis-py is imported only when the announcer is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``redis``: :class:`agent_wait.redis.RedisAnnounce`."""
    register("redis", "agent_wait.redis._announcer:RedisAnnounce")
