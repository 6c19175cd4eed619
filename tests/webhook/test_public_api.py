from __future__ import annotations

import agent_wait.webhook


def test_public_api() -> None:
    assert sorted(agent_wait.webhook.__all__) == [
        "WebhookAnnounce",
        "WebhookDeliveryError",
        "WebhookEntry",
        "WebhookEntryOptions",
        "WebhookOptions",
        "WebhookVerificationError",
        "verify",
    ]
    for name in agent_wait.webhook.__all__:
        assert getattr(agent_wait.webhook, name).__doc__, name
