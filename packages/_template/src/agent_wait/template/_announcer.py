"""TemplateAnnounce: one JSON file per question in a directory.

The directory stands in for your transport: replace ``deliver`` with a call to your client
library (import it here, not in ``_plugin.py``, and raise an ImportError naming what to install
when it is missing).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from agent_wait.core import BaseAnnounce, ConfigError, WaitEnvelope


class TemplateAnnounce(BaseAnnounce):
    """Writes each envelope to ``<directory>/<sha256 of its dedupe key>.json``.

    A republished question replaces its file, so the directory holds one envelope per question.

    Args:
        directory: Where the files go; created on first delivery.

    Raises:
        ConfigError: ``directory`` is not a non-empty string.
    """

    name = "template"

    def __init__(self, directory: str) -> None:
        # Options are what users write in configuration: check them here, naming option and value.
        if not isinstance(directory, str) or not directory.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"directory: expected a directory path, got {directory!r}")
        self.directory = Path(directory).expanduser()

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Write the envelope (the contract's JSON, byte for byte); raise when that fails."""
        self.directory.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(envelope.dedupe_key.encode("utf-8")).hexdigest()
        fd, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(envelope.to_json())
            os.replace(temporary, self.directory / f"{digest}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
