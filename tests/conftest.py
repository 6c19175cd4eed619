"""Fixtures shared by every package's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_agent_wait_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests away from the user's config and embedded inbox."""
    for name in ("AGENT_WAIT_ANNOUNCE", "AGENT_WAIT_CONFIG", "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "agent-wait-home"))
    monkeypatch.chdir(tmp_path)
