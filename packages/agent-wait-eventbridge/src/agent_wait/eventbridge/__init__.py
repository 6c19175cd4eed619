"""Amazon EventBridge announcer for agent-wait: one event per question.

Use it directly::

    from agent_wait.eventbridge import EventBridgeAnnounce

    announce = EventBridgeAnnounce("approvals")  # source="agent-wait"
    report = publish(questions, thread_id="order-4471", announce=announce)

or by name from configuration (``agent-wait.toml``)::

    [[announce]]
    use = "eventbridge"
    bus_name = "approvals"

A rule matching ``{"source": ["agent-wait"], "detail-type": ["wait.created"]}`` receives
every question; ``detail`` is the envelope. Options, limits and IAM permissions:
docs/announcers/eventbridge.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.eventbridge._announcer import EventBridgeAnnounce
    from agent_wait.eventbridge._options import EventBridgeOptions

__all__ = ["EventBridgeAnnounce", "EventBridgeOptions"]

# Lazy, so importing the package (the entry point does) never imports boto3.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EventBridgeOptions": "._options",
        "EventBridgeAnnounce": "._announcer",
    },
)
