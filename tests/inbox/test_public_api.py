from __future__ import annotations

import agent_wait.inbox


def test_public_api() -> None:
    assert sorted(agent_wait.inbox.__all__) == [
        "IdentityProvider",
        "InboxAuth",
        "OidcSignIn",
        "inbox_app",
    ]
    for name in agent_wait.inbox.__all__:
        assert getattr(agent_wait.inbox, name).__doc__, name
