"""The public API of agent_wait.pydantic_ai, pinned."""

from __future__ import annotations

import agent_wait.pydantic_ai as package


def test_public_api() -> None:
    assert sorted(package.__all__) == [
        "HistoryStore",
        "InMemoryHistory",
        "IndexedHistoryStore",
        "PauseHeartbeatEvent",
        "SqliteHistory",
        "ahandle_message",
        "apublish_interrupts",
        "aserve",
        "astream_message",
        "deferred_results",
        "handle_message",
        "hitl",
        "park",
        "pause_tool",
        "publish_interrupts",
        "questions_in",
        "serve",
        "stream_message",
        "wait",
    ]


def test_every_public_object_is_documented() -> None:
    for name in package.__all__:
        assert (getattr(package, name).__doc__ or "").strip(), name
