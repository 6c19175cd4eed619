"""The email configuration on docs/channels.md builds the announcer it describes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agent_wait.core import announcer
from tests.email.conftest import SECRET

PAGE = Path(__file__).resolve().parents[2] / "docs" / "channels.md"


def test_the_configured_announcer_on_the_page_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", "smtp-password")
    monkeypatch.setenv("AGENT_WAIT_EMAIL_SECRET", SECRET)
    blocks = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    built = [
        announcer(entry["use"], **{k: v for k, v in entry.items() if k != "use"})
        for block in blocks
        for entry in tomllib.loads(block)["announce"]
        if entry["use"] == "email"
    ]
    assert [a.name for a in built] == ["email"]
