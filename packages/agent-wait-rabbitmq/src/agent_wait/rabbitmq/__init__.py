"""RabbitMQ announcer for agent-wait.

Each question is published to an exchange as a persistent message with publisher confirms,
``message_id`` = its dedupe key and the tags as headers::

    from agent_wait.core import announcer, publish

    announce = announcer(
        "rabbitmq", url="amqp://guest:guest@localhost:5672/", exchange="approvals",
        routing_key="questions.{tags[approver_group]}", declare=True,
    )
    report = publish(questions, thread_id="order-4471", announce=announce)

Or by name in ``agent-wait.toml``::

    [[announce]]
    use = "rabbitmq"
    url = "amqp://guest:guest@localhost:5672/"
    exchange = "approvals"

Options, message properties and failure reporting are described on :class:`RabbitMqAnnounce`
and in docs/announcers/rabbitmq.md.

The ``rabbitmq`` entry point (:class:`RabbitMqEntry`, ``entry("rabbitmq", ...)``) is where hosts
receive start messages and answers: a quorum queue with a single active consumer and a
dead-letter exchange, or ``shards`` such queues that the hosts share (see docs/entry-points.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.rabbitmq._announcer import RabbitMqAnnounce
    from agent_wait.rabbitmq._entry import RabbitMqEntry
    from agent_wait.rabbitmq._options import RabbitMqEntryOptions, RabbitMqOptions

__all__ = ["RabbitMqAnnounce", "RabbitMqEntry", "RabbitMqEntryOptions", "RabbitMqOptions"]

# Lazy, so importing the package (the entry point does) never imports pika or aio-pika.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RabbitMqEntryOptions": "._options",
        "RabbitMqOptions": "._options",
        "RabbitMqAnnounce": "._announcer",
        "RabbitMqEntry": "._entry",
    },
)
