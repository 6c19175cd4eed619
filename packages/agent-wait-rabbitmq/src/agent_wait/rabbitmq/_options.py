"""The options of the ``rabbitmq`` announcer and entry point (importing it imports neither pika nor aio-pika)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from agent_wait.core import AnnouncerOptions, ConfigError, EntryOptions
from agent_wait.core.options import Flag, PositiveCount, Seconds, SecondsOrZero, SensitiveUrl
from agent_wait.rabbitmq._routing import OPTION, RoutingKeyTemplate

DEFAULT_URL = "amqp://guest:guest@localhost:5672/"
DEFAULT_EXCHANGE = "agent-wait"
DEFAULT_ROUTING_KEY = "agent-wait.questions"
DEFAULT_QUEUE = "agent-wait.entry"
SCHEMES = ("amqp://", "amqps://")


def _scheme(value: str) -> str:
    if not value.startswith(SCHEMES):
        raise ValueError("expected an amqp:// or amqps:// URL")
    return value


AmqpUrl = Annotated[SensitiveUrl, AfterValidator(_scheme)]
"""``amqp://user:password@host:5672/vhost`` (or ``amqps://``); shown redacted."""


class RabbitMqOptions(AnnouncerOptions):
    """Options of the ``rabbitmq`` announcer (see ``RabbitMqAnnounce``)."""

    url: AmqpUrl = DEFAULT_URL
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


class RabbitMqEntryOptions(EntryOptions):
    """Options of the ``rabbitmq`` entry point (see ``RabbitMqEntry``)."""

    url: AmqpUrl = DEFAULT_URL
    """``amqp://user:password@host:5672/vhost`` (or ``amqps://``)."""
    queue: Annotated[str, Field(min_length=1, max_length=200)] = DEFAULT_QUEUE
    """The queue; ``<queue>.dead`` is the dead-letter exchange and queue."""
    shards: PositiveCount = 1
    """Queues a thread's messages are spread over by a hash of its id; 1 is the one queue."""
    declare: Flag = True
    """Declare the queue, the exchange and the dead-letter queue when missing."""
    prefetch: PositiveCount = 100
    """Unacknowledged messages the broker sends this host ahead."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again."""
    timeout: Seconds = 5.0
    """Seconds to wait to connect and for each confirm."""
