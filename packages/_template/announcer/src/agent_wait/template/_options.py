"""The options of the ``template`` announcer: what users write in configuration.

Kept apart from ``_announcer.py`` so that reading them (``agent-wait plugins --json``, the
package's ``__init__``) never imports your transport library.
"""

from __future__ import annotations

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Text


class TemplateOptions(AnnouncerOptions):
    """Options of the ``template`` announcer (see ``TemplateAnnounce``)."""

    directory: Text
    """Where the files go; created on first delivery."""
