"""The docs' email screenshot script keeps working (real PNGs of the mail, the page, a reminder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.email.screenshots import take
from tests.inbox.browser import chromium_path

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="screenshots need the system Chromium: apt-get install -y chromium",
    ),
]


def test_screenshots_of_the_mail_its_confirmation_page_and_a_reminder(tmp_path: Path) -> None:
    shots = take(tmp_path)
    assert [s.name for s in shots] == [
        "email-message.png",
        "email-confirm.png",
        "email-reminder.png",
    ]
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert shot.stat().st_size > 10_000
