"""The module the ``agent_wait`` entry point names: hooks only, no Apprise import."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``apprise`` by import path: Apprise is imported only when it is used."""
    register("apprise", "agent_wait.apprise._announcer:AppriseAnnounce")
