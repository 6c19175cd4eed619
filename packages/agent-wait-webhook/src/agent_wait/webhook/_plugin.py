"""agent-wait plugin: registers the ``webhook`` announcer and entry point.

Registered by import path, so loading plugins does not import httpx; it is imported when a
``webhook`` announcer is first built.
"""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``webhook`` (:class:`agent_wait.webhook.WebhookAnnounce`)."""
    register("webhook", "agent_wait.webhook._announcer:WebhookAnnounce")


@hookimpl
def register_entry_points(register: RegisterTarget) -> None:
    """Register ``webhook`` (:class:`agent_wait.webhook.WebhookEntry`)."""
    register("webhook", "agent_wait.webhook._entry:WebhookEntry")
