"""The options of the ``template`` entry point: what users write in the ``[entry]`` table.

Kept apart from ``_entry.py`` so that reading them (``agent-wait plugins --json``, the package's
``__init__``) never imports your broker's client library.
"""

from __future__ import annotations

from agent_wait.core import EntryOptions
from agent_wait.core.options import PositiveCount, Seconds, SecondsOrZero, Text


class TemplateEntryOptions(EntryOptions):
    """Options of the ``template`` entry point (see ``TemplateEntry``)."""

    queue: Text
    """The queue's name: every entry point of one name in one process shares its messages."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again."""
