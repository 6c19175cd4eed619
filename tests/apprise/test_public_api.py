from __future__ import annotations

import agent_wait.apprise


def test_public_api() -> None:
    assert sorted(agent_wait.apprise.__all__) == ["AppriseAnnounce", "AppriseOptions"]
    for name in agent_wait.apprise.__all__:
        assert getattr(agent_wait.apprise, name).__doc__, name
