"""In-process announcers: ``memory`` (tests and demos) and ``log``."""

from __future__ import annotations

import logging

from agent_wait.core._announce import BaseAnnounce
from agent_wait.core._models import WaitEnvelope

_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING}


class MemoryAnnounce(BaseAnnounce):
    """Keeps every envelope in a list (``.envelopes``); for tests and demos."""

    name = "memory"

    def __init__(self) -> None:
        # No lock: list.append and list.clear are atomic, and a lock was a tenth of a publish.
        self.envelopes: list[WaitEnvelope] = []

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Append the envelope."""
        self.envelopes.append(envelope)

    @property
    def question_ids(self) -> list[str]:
        """The question ids received, in order (with republishes)."""
        return [e.question_id for e in self.envelopes]

    def clear(self) -> None:
        """Forget every envelope."""
        self.envelopes.clear()


class LogAnnounce(BaseAnnounce):
    """Writes each envelope's JSON to a logger.

    The envelope carries the question, so the default level is DEBUG: question content never
    reaches INFO unless ``level`` says so explicitly.

    Args:
        logger: Logger name.
        level: ``"DEBUG"`` (default), ``"INFO"`` or ``"WARNING"``.
    """

    name = "log"

    def __init__(self, logger: str = "agent_wait.envelopes", level: str = "DEBUG") -> None:
        if level.upper() not in _LEVELS:
            raise ValueError(f"level: expected one of {sorted(_LEVELS)}, got {level!r}")
        self._logger = logging.getLogger(logger)
        self._level = _LEVELS[level.upper()]

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Log the envelope JSON."""
        self._logger.log(self._level, "%s", envelope.to_json().decode("utf-8"))
