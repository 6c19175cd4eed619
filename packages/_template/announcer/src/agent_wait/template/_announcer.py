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

from agent_wait.core import BaseAnnounce, WaitEnvelope
from agent_wait.template._options import TemplateOptions


class TemplateAnnounce(BaseAnnounce):
    """Writes each envelope to ``<directory>/<sha256 of its dedupe key>.json``.

    A republished question replaces its file, so the directory holds one envelope per question.

    Args:
        directory: Where the files go; created on first delivery.

    Raises:
        ConfigError: ``directory`` is not a non-empty string.
    """

    name = "template"
    options_model = TemplateOptions

    def __init__(self, directory: str) -> None:
        # One field of the options model per argument: the model checks them all, and errors
        # name the announcer, the option and the value.
        options = TemplateOptions.parse(self.name, {"directory": directory})
        self.directory = Path(options.directory).expanduser()

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
