"""An agent-wait announcer plugin: ``TemplateAnnounce``, configurable as ``use = "template"``.

The entry point names ``agent_wait.template._plugin``; Python imports this package first, so
nothing here imports the announcer (or its transport library) eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.template._options import TemplateOptions

if TYPE_CHECKING:
    from agent_wait.template._announcer import TemplateAnnounce

__all__ = ["TemplateAnnounce", "TemplateOptions"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TemplateAnnounce": "._announcer",
    },
)
