"""The public API of agent_wait.google_adk, pinned."""

from __future__ import annotations

import agent_wait.google_adk as package


def test_public_api() -> None:
    assert sorted(package.__all__) == [
        "AtMostOnce",
        "GoogleAdkServeOptions",
        "ahandle_message",
        "apublish_interrupts",
        "aserve",
        "astream_message",
        "handle_message",
        "hitl",
        "publish_interrupts",
        "questions_in",
        "serve",
        "stream_message",
        "wait",
    ]


def test_every_public_object_is_documented() -> None:
    for name in package.__all__:
        assert (getattr(package, name).__doc__ or "").strip(), name
