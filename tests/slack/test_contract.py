"""agent-wait's announcer conformance kit, run against SlackAnnounce and the Slack fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_wait.core import BaseAnnounce, announcer
from agent_wait.testing import AnnouncerContract
from tests.aws_moto import free_port
from tests.slack.fake_slack import TOKEN, FakeSlack


def _slack(base_url: str, home: Path) -> BaseAnnounce:
    return announcer(
        "slack",
        token=TOKEN,
        channel="C0APPROVALS",
        base_url=base_url,
        messages_path=str(home / "slack-messages.sqlite3"),
        timeout=10,
    )


class TestSlackAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _server(self, slack_api: FakeSlack, tmp_path: Path) -> None:
        self.slack_api = slack_api
        self.home = tmp_path

    def make_announcer(self) -> BaseAnnounce:
        # By name, as users configure it: this also proves the entry point is installed.
        return _slack(self.slack_api.base_url, self.home)

    def make_failing_announcer(self) -> BaseAnnounce:
        return _slack(f"http://127.0.0.1:{free_port()}/api/", self.home)
