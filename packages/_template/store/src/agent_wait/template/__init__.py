"""An agent-wait question-store plugin: ``TemplateAnnounce`` writes questions, ``TemplateQuestionStore`` reads and closes them.

Configured as ``use = "template"`` (the announcer) and found by the same name as a store
(``agent-wait inbox serve --store template``). The entry point names
``agent_wait.template._plugin``; Python imports this package first, so nothing here imports the
announcer, the store (or the database library) eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.template._options import TemplateOptions

if TYPE_CHECKING:
    from agent_wait.template._announcer import TemplateAnnounce
    from agent_wait.template._store import TemplateQuestionStore

__all__ = ["TemplateAnnounce", "TemplateOptions", "TemplateQuestionStore"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TemplateAnnounce": "._announcer",
        "TemplateQuestionStore": "._store",
    },
)
