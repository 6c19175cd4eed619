"""Slack announcer for agent-wait: ``SlackAnnounce``, configurable as ``use = "slack"``.

Each question is posted as a Block Kit message with a button per allowed action and an
**Edit...** modal built from its ``answer_schema``. Slack sends the clicks to
:func:`interactivity_app` (``agent-wait slack serve``, or ``/slack/interactivity`` inside
``agent-wait inbox serve``), which answers through :func:`agent_wait.host.answer` as the
clicking Slack user and updates the message in place.

The entry point names ``agent_wait.slack._plugin``; Python imports this package first, so
nothing here imports slack-sdk or starlette eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.slack._blocks import question_blocks
from agent_wait.slack._options import SlackOptions

if TYPE_CHECKING:
    from agent_wait.slack._announcer import SlackAnnounce
    from agent_wait.slack._interactivity import (
        SlackUser,
        interactivity_app,
        interactivity_routes,
    )

__all__ = [
    "SlackAnnounce",
    "SlackOptions",
    "SlackUser",
    "interactivity_app",
    "interactivity_routes",
    "question_blocks",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SlackAnnounce": "._announcer",
        "SlackUser": "._interactivity",
        "interactivity_app": "._interactivity",
        "interactivity_routes": "._interactivity",
    },
)
