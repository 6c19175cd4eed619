"""The options of the ``template`` announcer, which its question store is built with too.

Kept apart from ``_announcer.py`` and ``_store.py`` so that reading them (``agent-wait plugins
--json``, the package's ``__init__``) never imports your database's client library.
"""

from __future__ import annotations

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Text


class TemplateOptions(AnnouncerOptions):
    """Options of the ``template`` announcer (see ``TemplateAnnounce``) and its store."""

    database: Text
    """The database's name: the announcer and store of one name in one process share it."""
