"""The options of the ``rabbitmq`` announcer (importing it imports neither pika nor aio-pika)."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from agent_wait.core import AnnouncerOptions, ConfigError
from agent_wait.core.options import Flag, Seconds, SensitiveUrl
from agent_wait.rabbitmq._routing import OPTION, RoutingKeyTemplate

DEFAULT_URL = "amqp://guest:guest@localhost:5672/"
DEFAULT_EXCHANGE = "agent-wait"
DEFAULT_ROUTING_KEY = "agent-wait.questions"
SCHEMES = ("amqp://", "amqps://")


class RabbitMqOptions(AnnouncerOptions):
    """Options of the ``rabbitmq`` announcer (see ``RabbitMqAnnounce``)."""

    url: SensitiveUrl = DEFAULT_URL
    """``amqp://user:password@host:5672/vhost`` (or ``amqps://``)."""
    exchange: str = DEFAULT_EXCHANGE
    """The exchange; ``""`` is the default exchange, where the routing key is a queue name."""
    routing_key: str = DEFAULT_ROUTING_KEY
    """Routing-key template, e.g. ``questions.{tags[approver_group]}``."""
    declare: Flag = False
    """Declare the exchange (durable) instead of checking passively that it exists."""
    exchange_type: Literal["direct", "topic", "fanout", "headers"] = "topic"
    """The exchange type, used with ``declare``."""
    mandatory: Flag = True
    """Report a message that no queue is bound for as a failure."""
    timeout: Seconds = 10.0
    """Seconds to wait to connect and for each confirm."""

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not value.startswith(SCHEMES):
            raise ValueError("expected an amqp:// or amqps:// URL")
        return value

    @field_validator("exchange")
    @classmethod
    def _exchange(cls, value: str) -> str:
        if len(value.encode("utf-8")) > 255:
            raise ValueError("expected a name of at most 255 bytes")
        return value

    @field_validator("routing_key")
    @classmethod
    def _routing_key(cls, value: str) -> str:
        try:
            RoutingKeyTemplate(value)
        except ConfigError as error:
            raise ValueError(str(error).removeprefix(f"{OPTION}: ")) from None
        return value

    @model_validator(mode="after")
    def _declarable(self) -> RabbitMqOptions:
        if self.declare and self.exchange == "":
            raise ValueError("option 'declare': the default exchange '' cannot be declared")
        return self
