"""The ``jsonl`` announcer: one envelope JSON per line, appended to a file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import field_validator

from agent_wait.core._announce import BaseAnnounce, DeliveryOutcome
from agent_wait.core._models import WaitEnvelope
from agent_wait.core._options import AnnouncerOptions


class JsonlOptions(AnnouncerOptions):
    """Options of the ``jsonl`` announcer (see ``JsonlAnnounce``)."""

    path: Path

    @field_validator("path", mode="before")
    @classmethod
    def _not_blank(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected a file path")
        return value


class JsonlAnnounce(BaseAnnounce):
    """Appends each envelope as one line of JSON to a file (JSON Lines).

    Every write is a single ``os.write`` on a file descriptor opened with ``O_APPEND``, so a
    line is never interleaved with another writer's, whether the writers are threads or
    processes. ``deliver_many`` writes all its lines in one write. The file is opened per
    delivery, so log rotation (moving the file away) is safe. The parent directory is created
    when missing. A file it creates is readable by its owner only (``0600``, a created directory
    ``0700``); an existing file keeps its mode. Each line ends in a newline; JSON text never
    contains a raw one.

    Args:
        path: The file to append to (``~`` is expanded). Relative paths are relative to the
            process's working directory.

    Example:
        ``announcer("jsonl", path="/var/log/agent-wait/questions.jsonl")``
    """

    name = "jsonl"
    options_model = JsonlOptions

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = JsonlOptions.parse(self.name, {"path": path}).path.expanduser()

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Append the envelope's line."""
        self._append(envelope.to_json() + b"\n")

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Append every envelope's line in one write: all land, or none does."""
        outcomes: list[DeliveryOutcome] = []
        lines: list[bytes] = []
        for envelope in envelopes:
            try:
                lines.append(envelope.to_json() + b"\n")
            except Exception as error:  # noqa: BLE001 - an unserialisable envelope fails alone
                outcomes.append(error)
            else:
                outcomes.append(None)
        if lines:
            try:
                self._append(b"".join(lines))
            except OSError as error:
                return [outcome if outcome is not None else error for outcome in outcomes]
        return outcomes

    def _append(self, data: bytes) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        # A file we create is the owner's only (0600, in a 0700 directory): questions carry
        # whatever the agent asked about. An existing file keeps its owner's mode.
        try:
            fd = os.open(self.path, flags, 0o600)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, flags, 0o600)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            # A short write (disk full, file size limit) leaves a torn last line: report it.
            raise OSError(f"{self.path}: wrote {written} of {len(data)} bytes")

    def __repr__(self) -> str:
        return f"<JsonlAnnounce {self.name!r} path={str(self.path)!r}>"
