"""In-process announcers: ``memory`` (tests and demos) and ``log``."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

from pydantic import BeforeValidator

from agent_wait.core._announce import BaseAnnounce
from agent_wait.core._models import LifecycleEvent, WaitEnvelope
from agent_wait.core._options import AnnouncerOptions, Text

_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING}


class MemoryOptions(AnnouncerOptions):
    """The ``memory`` announcer has no options."""


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


class LogOptions(AnnouncerOptions):
    """Options of the ``log`` announcer (see ``LogAnnounce``)."""

    logger: Text = "agent_wait.envelopes"
    level: Annotated[Literal["DEBUG", "INFO", "WARNING"], BeforeValidator(_upper)] = "DEBUG"


class MemoryAnnounce(BaseAnnounce):
    """Keeps every envelope in a list (``.envelopes``); for tests and demos.

    Lifecycle events it opted in to are kept in ``.events``.
    """

    name = "memory"
    options_model = MemoryOptions

    def __init__(self) -> None:
        # No lock: list.append and list.clear are atomic, and a lock was a tenth of a publish.
        self.envelopes: list[WaitEnvelope] = []
        self.events: list[LifecycleEvent] = []

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Append the envelope."""
        self.envelopes.append(envelope)

    def deliver_event(self, event: LifecycleEvent) -> None:
        """Append the lifecycle event."""
        self.events.append(event)

    @property
    def question_ids(self) -> list[str]:
        """The question ids received, in order (with republishes)."""
        return [e.question_id for e in self.envelopes]

    def clear(self) -> None:
        """Forget every envelope and event."""
        self.envelopes.clear()
        self.events.clear()


class LogAnnounce(BaseAnnounce):
    """Writes each envelope's JSON to a logger.

    The envelope carries the question, so the default level is DEBUG: question content never
    reaches INFO unless ``level`` says so explicitly.

    Args:
        logger: Logger name.
        level: ``"DEBUG"`` (default), ``"INFO"`` or ``"WARNING"``.
    """

    name = "log"
    options_model = LogOptions

    def __init__(self, logger: str = "agent_wait.envelopes", level: str = "DEBUG") -> None:
        options = LogOptions.parse(self.name, {"logger": logger, "level": level})
        self._logger = logging.getLogger(options.logger)
        self._level = _LEVELS[options.level]

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Log the envelope JSON."""
        self._logger.log(self._level, "%s", envelope.to_json().decode("utf-8"))
