"""The README example and the configuration on the docs pages work as written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import Question, WaitPolicy, announcer, build_envelope, publish
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from agent_wait.slack import SlackAnnounce
from tests.slack.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack

ROOT = Path(__file__).resolve().parents[2]


def _blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))


@pytest.mark.parametrize("page", ["announcers/slack.md", "channels.md"])
def test_the_documented_configuration_builds_the_announcer(page: str) -> None:
    entries = [
        entry
        for block in _blocks(ROOT / "docs" / page, "toml")
        for entry in tomllib.loads(block)["announce"]
        if entry["use"] == "slack"
    ]
    assert entries
    for entry in entries:
        built = announcer(entry["use"], **{k: v for k, v in entry.items() if k != "use"})
        assert isinstance(built, SlackAnnounce)
        assert built.signing_secret == SIGNING_SECRET
        # Every page's entry keeps the message true as the question closes elsewhere.
        assert {"wait.answered", "wait.expired", "wait.answer_refused"} <= built.lifecycle_events
        built.close()


def test_the_documented_follow_ups_mention_the_finance_group_in_the_thread(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    [entry] = [
        entry
        for block in _blocks(ROOT / "docs" / "announcers" / "slack.md", "toml")
        for entry in tomllib.loads(block)["announce"]
        if isinstance(entry.get("lifecycle_events"), list)
    ]
    options = {k: v for k, v in entry.items() if k != "use"}
    built = announcer("slack", **options, base_url=slack_api.base_url)
    assert isinstance(built, SlackAnnounce)
    question = Question(
        question_id="q1",
        question={"function": "pay", "args": {"eur": 900}},
        policy=WaitPolicy(tags={"approver_group": "finance"}, remind=["PT1H"]),
    )
    assert publish([question], "t1", built, strict=True).ok
    envelope = build_envelope(question, "t1")
    event = lifecycle_event(
        "wait.reminder", "t1", "q1", outcome="reminded", reminder=1, envelope=envelope
    )
    assert all(d.ok for d in publish_events([event], [built]))
    [(channel, by_ts)] = slack_api.messages.items()
    [ts] = by_ts
    assert channel == "C0FINANCEAPPROVALS"
    [reply] = slack_api.thread(channel, ts)
    assert reply.startswith("<!subteam^S0FINANCE> :bell: *Reminder:*")
    built.close()


def test_the_readme_example_posts_to_the_finance_channel(slack_api: FakeSlack) -> None:
    readme = ROOT / "packages" / "agent-wait-slack" / "README.md"
    [code] = _blocks(readme, "python")
    namespace: dict[str, Any] = {}
    # Only the Web API's root changes: the local fake instead of slack.com.
    code = code.replace(
        "SlackAnnounce(\n", f"SlackAnnounce(\n    base_url={slack_api.base_url!r},\n"
    )
    exec(compile(code, str(readme), "exec"), namespace)

    assert namespace["report"].ok
    assert [c.arguments["channel"] for c in slack_api.of("chat.postMessage")] == [
        "#finance-approvals"
    ]
    namespace["slack"].close()
