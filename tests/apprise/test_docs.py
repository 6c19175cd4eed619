"""The README example and the configuration on the announcer's page work as written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_wait.apprise import AppriseAnnounce
from agent_wait.core import Question, announcer, publish
from tests.apprise.conftest import Notifications

ROOT = Path(__file__).resolve().parents[2]


def _block(path: Path, language: str) -> str:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)[0]


def test_the_readme_example_notifies(
    notifications: Notifications, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPRISE_URLS", notifications.url("/readme"))
    readme = ROOT / "packages" / "agent-wait-apprise" / "README.md"
    namespace: dict[str, Any] = {}
    exec(compile(_block(readme, "python"), str(readme), "exec"), namespace)

    (received,) = notifications.at("/readme")
    assert received["title"] == "Approval needed: issue_refund"
    assert "Answer: https://inbox.example.com/questions/q1?thread=order-4471" in received["message"]


def test_the_documented_configuration_builds_an_announcer_taking_events(
    notifications: Notifications, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPRISE_URLS", notifications.url("/configured"))
    (entry,) = tomllib.loads(_block(ROOT / "docs" / "announcers" / "apprise.md", "toml"))[
        "announce"
    ]
    options = {k: v for k, v in entry.items() if k != "use"}
    built = announcer(entry["use"], **options)

    assert isinstance(built, AppriseAnnounce)
    assert built.lifecycle_events == {"wait.answered", "wait.expired"}
    question = Question(question_id="q-doc", question="Ship it?")
    assert publish([question], thread_id="t-doc", announce=built).ok
    (received,) = notifications.at("/configured")
    assert received["title"] == "An agent is waiting for an answer"
    assert received["message"].startswith("Question: Ship it?\n")
