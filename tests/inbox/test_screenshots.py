"""The docs' screenshot script keeps working: real PNGs of every page at both sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inbox.browser import chromium_path
from tests.inbox.screenshots import PAGES, VIEWPORTS, take

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="screenshots need the system Chromium: apt-get install -y chromium",
    ),
]


def test_screenshots_of_every_page_at_both_sizes(tmp_path: Path) -> None:
    shots = take(tmp_path)
    assert [s.name for s in shots] == [
        f"inbox-{page}-{size}.png" for size in VIEWPORTS for page in PAGES
    ]
    for shot in shots:
        assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert shot.stat().st_size > 10_000


def test_the_docs_show_every_screenshot() -> None:
    docs = Path(__file__).parents[2] / "docs"
    page = (docs / "inbox.md").read_text(encoding="utf-8")
    for size in VIEWPORTS:
        for name in PAGES:
            assert f"images/inbox-{name}-{size}.png" in page
            assert (docs / "images" / f"inbox-{name}-{size}.png").is_file()
