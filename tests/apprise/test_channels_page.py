"""The apprise configuration on docs/channels.md builds the announcer it describes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agent_wait.core import announcer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "channels.md"


def test_the_configured_announcer_on_the_page_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPRISE_URLS", "json://127.0.0.1:9/hook ntfy://approvals")
    blocks = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    built = [
        announcer(entry["use"], **{k: v for k, v in entry.items() if k != "use"})
        for block in blocks
        for entry in tomllib.loads(block)["announce"]
        if entry["use"] == "apprise"
    ]
    assert [a.name for a in built] == ["apprise"]
