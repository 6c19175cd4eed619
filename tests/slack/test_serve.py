"""The Interactivity Request URL served on its own (``agent-wait slack serve``) and inside the
inbox (``agent-wait inbox serve`` mounts ``/slack/interactivity`` through ``register_inbox_routes``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from agent_wait.core import SqliteAnnounce, SqliteQuestionStore, publish
from tests.serving import until
from tests.slack.conftest import REFUND, make_slack
from tests.slack.fake_slack import FakeSlack, click, form, post, signed
from tests.slack.serving import AGENT_WAIT, Served, deployment_env
from tests.slack.test_delivery import texts

pytestmark = pytest.mark.integration


def ask(slack_api: FakeSlack, home: Path) -> None:
    """Publish the refund question as the agent's process would, into the same ``home``."""
    slack = make_slack(slack_api, home, messages_path=home / "slack-messages.sqlite3")
    inbox = SqliteAnnounce(home / "inbox.sqlite3")
    assert publish([REFUND], "order-4471", [inbox, slack], strict=True).ok
    slack.close()


@pytest.mark.parametrize("command", ["slack", "inbox"])
def test_a_signed_click_answers_through_the_served_url(
    slack_api: FakeSlack, tmp_path: Path, command: str
) -> None:
    if command == "inbox":
        pytest.importorskip("agent_wait.inbox", reason="needs agent-wait-inbox installed")
    env = deployment_env(slack_api, tmp_path)
    env["AGENT_WAIT_INBOX_TOKEN"] = "an inbox login secret"
    ask(slack_api, tmp_path)
    channel, ts, message = slack_api.only_message()
    served = Served(command, env)
    try:
        url = f"{served.url}/slack/interactivity"
        forged = form(click(message, channel, ts, "agent_wait_answer:approve"))
        refused = httpx.post(url, content=forged, headers=signed(forged, secret="guessed"))
        assert refused.status_code == 401
        done = post(url, click(message, channel, ts, "agent_wait_answer:reject", user="U0BOB"))
        assert done.status_code == 200, done.text
        # Slack gets its reply at once; the answer follows it.
        with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
            [closed] = until(
                lambda: [q for q in store.find("q-refund", "order-4471") if q.status == "answered"],
                "the answer",
            )
        until(lambda: slack_api.of("chat.update"), "the message's update")
    finally:
        stderr = served.stop()
    assert (closed.status, closed.answered_by, closed.answer) == (
        "answered",
        "@bob",
        {"action": "reject"},
    )
    assert ":x: *Rejected* by <@U0BOB>" in texts(slack_api.message(channel, ts)["blocks"])
    assert "refused" in stderr
    assert "xoxb-" not in stderr


def test_slack_serve_without_a_configured_slack_announcer_says_what_to_add(tmp_path: Path) -> None:
    done = subprocess.run(
        [AGENT_WAIT, "slack", "serve"],
        env={
            **os.environ,
            "AGENT_WAIT_HOME": str(tmp_path),
            "AGENT_WAIT_ANNOUNCE": '[{"use": "sqlite"}]',
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no 'slack' announcer is configured" in done.stderr


def test_the_inbox_serves_without_slack_when_it_is_not_configured(tmp_path: Path) -> None:
    pytest.importorskip("agent_wait.inbox", reason="needs agent-wait-inbox installed")
    env = {
        **os.environ,
        "AGENT_WAIT_HOME": str(tmp_path),
        "AGENT_WAIT_ANNOUNCE": '[{"use": "sqlite"}]',
        "AGENT_WAIT_INBOX_TOKEN": "an inbox login secret",
    }
    served = Served("inbox", env)
    try:
        assert httpx.post(f"{served.url}/slack/interactivity", content="").status_code == 404
    finally:
        stderr = served.stop()
    assert "the slack routes are not served: slack: no 'slack' announcer is configured" in stderr
