"""Signed webhook announcer for agent-wait (Standard Webhooks).

Send every question to an HTTP endpoint::

    from agent_wait.core import publish
    from agent_wait.webhook import WebhookAnnounce

    hook = WebhookAnnounce("https://approvals.example.com/hooks/agent-wait", secret_env="HOOK_SECRET")
    report = publish(questions, thread_id="order-4471", announce=hook)

or by name from configuration (``agent-wait.toml``)::

    [[announce]]
    use = "webhook"
    url = "https://approvals.example.com/hooks/agent-wait"
    secret_env = "HOOK_SECRET"

and verify on the receiving side, with any Standard Webhooks library or with::

    from agent_wait.webhook import verify

    envelope = verify(body, headers, secret)

A host can also receive its start and answer messages over HTTP: the ``webhook`` entry point
(:class:`WebhookEntry`) holds each POST until the host handled its message.

Importing this package does not import httpx (a receiver needs only :func:`verify`);
:class:`WebhookAnnounce` loads it on first use. See docs/announcers/webhook.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.webhook._entry import WebhookEntry
from agent_wait.webhook._errors import WebhookDeliveryError, WebhookVerificationError
from agent_wait.webhook._options import WebhookEntryOptions, WebhookOptions
from agent_wait.webhook._signing import verify

if TYPE_CHECKING:
    from agent_wait.webhook._announcer import WebhookAnnounce

__all__ = [
    "WebhookAnnounce",
    "WebhookDeliveryError",
    "WebhookEntry",
    "WebhookEntryOptions",
    "WebhookOptions",
    "WebhookVerificationError",
    "verify",
]

# Lazy, so the plugin module and receivers using verify() do not import httpx.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "WebhookAnnounce": "._announcer",
    },
)
