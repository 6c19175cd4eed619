from __future__ import annotations

import agent_wait.email


def test_public_api() -> None:
    assert sorted(agent_wait.email.__all__) == [
        "EmailAnnounce",
        "EmailOptions",
        "LinkSigner",
        "LinkToken",
        "TokenRefused",
        "links_app",
    ]
    for name in agent_wait.email.__all__:
        assert getattr(agent_wait.email, name).__doc__, name
