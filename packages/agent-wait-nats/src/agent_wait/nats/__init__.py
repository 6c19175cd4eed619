"""NATS JetStream announcer for agent-wait.

Each question is published to a JetStream subject with ``Nats-Msg-Id`` set to its dedupe key,
so the stream's duplicate window drops republishes::

    from agent_wait.core import announcer, publish

    announce = announcer(
        "nats", url="nats://localhost:4222", subject="agent-wait.questions.{tags[approver_group]}"
    )
    report = publish(questions, thread_id="order-4471", announce=announce)

Or by name in ``agent-wait.toml``::

    [[announce]]
    use = "nats"
    url = "nats://localhost:4222"
    stream = "AGENT_WAIT"
    create_stream = true

The ``nats`` entry point (:class:`NatsEntry`, ``entry("nats", ...)``) is where hosts receive
start messages and answers: a JetStream work queue read by a durable pull consumer (see
docs/entry-points.md).

Options, headers and the dedupe behaviour are described on :class:`NatsAnnounce` and in
docs/announcers/nats.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.nats._announcer import NatsAnnounce
    from agent_wait.nats._entry import NatsEntry
    from agent_wait.nats._options import NatsEntryOptions, NatsOptions

__all__ = ["NatsAnnounce", "NatsEntry", "NatsEntryOptions", "NatsOptions"]

# Lazy, so importing the package (the entry point does) never imports nats-py.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "NatsEntryOptions": "._options",
        "NatsOptions": "._options",
        "NatsAnnounce": "._announcer",
        "NatsEntry": "._entry",
    },
)
