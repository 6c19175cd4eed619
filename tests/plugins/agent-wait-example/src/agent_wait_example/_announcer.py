"""The ``example_file`` announcer: one JSON file per question."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from agent_wait.core import AnnouncerOptions, BaseAnnounce, WaitEnvelope
from agent_wait.core.options import Text


class ExampleFileOptions(AnnouncerOptions):
    """Options of the ``example_file`` announcer."""

    directory: Text
    """Where the files go; created when missing."""


class ExampleFileAnnounce(BaseAnnounce):
    """Writes each envelope to ``<directory>/<sha256 of its dedupe key>.json``.

    A republish replaces the file (delivered again, atomically via rename), so the directory
    holds the latest envelope of every question.

    Args:
        directory: Where the files go; created when missing.
    """

    name = "example_file"
    options_model = ExampleFileOptions

    def __init__(self, directory: str) -> None:
        options = ExampleFileOptions.parse(self.name, {"directory": directory})
        self.directory = Path(options.directory).expanduser()

    def path_of(self, envelope: WaitEnvelope) -> Path:
        """The file an envelope is written to."""
        digest = hashlib.sha256(envelope.dedupe_key.encode("utf-8")).hexdigest()
        return self.directory / f"{digest}.json"

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Write the envelope's file (replacing an earlier copy)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(envelope.to_json())
            os.replace(temporary, self.path_of(envelope))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
