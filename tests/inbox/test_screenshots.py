"""The docs' screenshot script keeps working (real PNGs of the list, a question and a thread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inbox.browser import chromium_path
from tests.inbox.screenshots import take

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="screenshots need the system Chromium: apt-get install -y chromium",
    ),
]


def test_screenshots_of_the_list_a_question_and_a_thread(tmp_path: Path) -> None:
    shots = take(tmp_path)
    assert [s.name for s in shots] == ["inbox-list.png", "inbox-detail.png", "inbox-thread.png"]
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert shot.stat().st_size > 10_000
