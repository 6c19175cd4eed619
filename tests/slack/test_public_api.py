from __future__ import annotations

import agent_wait.slack


def test_public_api() -> None:
    assert sorted(agent_wait.slack.__all__) == [
        "SlackAnnounce",
        "SlackOptions",
        "SlackUser",
        "interactivity_app",
        "interactivity_routes",
        "question_blocks",
    ]
    for name in agent_wait.slack.__all__:
        assert getattr(agent_wait.slack, name).__doc__, name
