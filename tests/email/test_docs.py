"""The README example and the configuration on the announcer's page work as written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import announcer
from agent_wait.email import EmailAnnounce
from tests.email.conftest import SECRET

ROOT = Path(__file__).resolve().parents[2]


def _block(path: Path, language: str) -> str:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)[0]


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", "smtp-password")
    monkeypatch.setenv("AGENT_WAIT_EMAIL_SECRET", SECRET)


def test_the_readme_example_routes_to_finance_and_reports_an_unreachable_server() -> None:
    readme = ROOT / "packages" / "agent-wait-email" / "README.md"
    namespace: dict[str, Any] = {}
    # Only the SMTP host is changed: a closed port on loopback instead of smtp.example.com.
    code = _block(readme, "python").replace('"smtp.example.com"', '"127.0.0.1", port=9')
    exec(compile(code, str(readme), "exec"), namespace)

    report = namespace["report"]
    (failure,) = report.failures
    assert "1 of 1 recipients not reached" in str(failure.error)
    assert namespace["mail"].recipients(report.envelopes[0]) == ["cfo@example.com"]


def test_the_documented_configuration_builds_the_announcer() -> None:
    page = ROOT / "docs" / "announcers" / "email.md"
    (entry,) = tomllib.loads(_block(page, "toml"))["announce"]
    built = announcer(entry["use"], **{k: v for k, v in entry.items() if k != "use"})

    assert isinstance(built, EmailAnnounce)
    assert built.destination == "smtp.example.com:587"
