"""The docs' Slack screenshots keep working: real PNGs of the message, before and after Approve,
a quorum's count and a thread of follow-ups."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inbox.browser import chromium_path
from tests.slack.screenshots import take

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="screenshots need the system Chromium: apt-get install -y chromium",
    ),
]


def test_screenshots_of_a_question_its_approval_a_quorum_and_a_reminder(tmp_path: Path) -> None:
    shots = take(tmp_path)
    assert [s.name for s in shots] == [
        "slack-message.png",
        "slack-approved.png",
        "slack-quorum.png",
        "slack-reminder.png",
    ]
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert shot.stat().st_size > 10_000
