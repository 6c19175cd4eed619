"""An agent-wait entry-point plugin: ``TemplateEntry``, configurable as ``[entry] use = "template"``.

The entry point names ``agent_wait.template._plugin``; Python imports this package first, so
nothing here imports the entry point (or its broker library) eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.template._options import TemplateEntryOptions

if TYPE_CHECKING:
    from agent_wait.template._entry import TemplateEntry

__all__ = ["TemplateEntry", "TemplateEntryOptions"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TemplateEntry": "._entry",
    },
)
