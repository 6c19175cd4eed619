"""Apprise announcer for agent-wait: ``AppriseAnnounce``, configurable as ``use = "apprise"``.

The entry point names ``agent_wait.apprise._plugin``; Python imports this package first, so
nothing here imports Apprise eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.apprise._announcer import AppriseAnnounce
    from agent_wait.apprise._options import AppriseOptions

__all__ = ["AppriseAnnounce", "AppriseOptions"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AppriseOptions": "._options",
        "AppriseAnnounce": "._announcer",
    },
)
