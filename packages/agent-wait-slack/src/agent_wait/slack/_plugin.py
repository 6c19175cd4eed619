"""The module the ``agent_wait`` entry point names: hooks only, no slack-sdk or starlette import."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``slack`` by import path: slack-sdk is imported only when it is used."""
    register("slack", "agent_wait.slack._announcer:SlackAnnounce")


@hookimpl
def register_commands(register: RegisterTarget) -> None:
    """Register ``agent-wait slack serve``, Slack's Interactivity Request URL."""
    register("slack", "agent_wait.slack._cli:setup")


@hookimpl
def register_inbox_routes(register: RegisterTarget) -> None:
    """Serve ``/slack/interactivity`` inside ``agent-wait inbox serve`` too."""
    register("slack", "agent_wait.slack._interactivity:inbox_routes")
