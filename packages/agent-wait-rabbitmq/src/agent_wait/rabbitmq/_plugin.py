"""Registers the ``rabbitmq`` announcer; pika and aio-pika are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``rabbitmq``: :class:`agent_wait.rabbitmq.RabbitMqAnnounce`."""
    register("rabbitmq", "agent_wait.rabbitmq._announcer:RabbitMqAnnounce")
