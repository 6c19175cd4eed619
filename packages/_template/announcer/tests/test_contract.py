"""agent-wait's announcer conformance kit, run against TemplateAnnounce."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, announcer
from agent_wait.testing import AnnouncerContract


class TestTemplateAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "questions"
        self.blocked = tmp_path / "a-file"
        self.blocked.write_text("not a directory")

    def make_announcer(self) -> BaseAnnounce:
        # By name, as users configure it: this also proves the entry point is installed.
        return announcer("template", directory=str(self.directory))

    def make_failing_announcer(self) -> BaseAnnounce:
        # A path under a regular file cannot be created: every delivery fails.
        return announcer("template", directory=str(self.blocked / "questions"))

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(path.read_bytes()) for path in sorted(self.directory.glob("*.json"))]
