"""Registers the ``redis`` announcer and entry point; redis-py is imported only when one is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``redis``: :class:`agent_wait.redis.RedisAnnounce`."""
    register("redis", "agent_wait.redis._announcer:RedisAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register the ``redis`` entry point: :class:`agent_wait.redis.RedisEntry`."""
    register("redis", "agent_wait.redis._entry:RedisEntry")
