"""Registers the ``rabbitmq`` announcer and entry point; pika and aio-pika load only when built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``rabbitmq``: :class:`agent_wait.rabbitmq.RabbitMqAnnounce`."""
    register("rabbitmq", "agent_wait.rabbitmq._announcer:RabbitMqAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register ``rabbitmq``: :class:`agent_wait.rabbitmq.RabbitMqEntry`."""
    register("rabbitmq", "agent_wait.rabbitmq._entry:RabbitMqEntry")
