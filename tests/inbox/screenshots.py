"""Screenshots of the inbox for the docs: ``python -m tests.inbox.screenshots [OUT_DIR]``.

Sample questions in a fresh inbox file, ``agent-wait inbox serve --no-auth`` on it, and the
system Chromium (Playwright) saving ``inbox-list.png``, ``inbox-detail.png`` and
``inbox-thread.png`` (default: ``docs/images``). ``nox -s screenshots`` regenerates the committed ones;
tests/inbox/test_screenshots.py checks that it works.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.inbox.browser import chromium
from tests.inbox.conftest import Server, ask

DOCS_IMAGES = Path(__file__).parents[2] / "docs" / "images"


def sample_inbox(path: Path) -> None:
    """A few questions an approver typically sees, one of them overdue, two in one thread."""
    now = datetime.now(UTC)
    ask(
        path,
        "a1b2c3d4e5f60718",
        args={
            "order_id": "order-4471",
            "amount": 41000,
            "currency": "EUR",
            "reason": {"code": "damaged", "photos": 3},
        },
        timeout="P3D",
        default={"action": "reject", "reason": "no response within P3D"},
        tags={"approver_group": "finance"},
    )
    ask(
        path,
        "0f9e8d7c6b5a4321",
        function="send_voucher",
        args={"order_id": "order-4471", "value": 2500, "currency": "EUR"},
        timeout="P3D",
        tags={"approver_group": "finance"},
    )
    ask(
        path,
        "9a1c0b7e22f4d310",
        thread_id="order-4502",
        function="delete_customer",
        args={"customer_id": "c-2231", "keep_invoices": True},
        timeout="P1D",
        tags={"approver_group": "privacy"},
    )
    ask(
        path,
        "7f3e5d2c1b0a9988",
        thread_id="order-4390",
        args={"order_id": "order-4390", "amount": 1200},
        asked=now - timedelta(days=4),
        timeout="P3D",
        tags={"approver_group": "finance"},
    )
    ask(
        path,
        "5e6f7a8b9c0d1e2f",
        thread_id="deploy-88",
        function="deploy",
        args={"service": "billing", "version": "2.14.0", "canary": 0.1},
        timeout="PT4H",
        tags={"approver_group": "sre"},
    )


def take(out_dir: Path = DOCS_IMAGES) -> list[Path]:
    """Write the list, detail and thread screenshots to ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "inbox.sqlite3"
        sample_inbox(path)
        server = Server(
            "--no-auth",
            "--store",
            str(path),
            env={"AGENT_WAIT_HOME": scratch, "LOGNAME": "alice", "USER": "alice"},
        )
        try:
            with chromium() as browser:
                page = browser.new_page(viewport={"width": 1100, "height": 520})
                shots = [
                    out_dir / "inbox-list.png",
                    out_dir / "inbox-detail.png",
                    out_dir / "inbox-thread.png",
                ]
                page.goto(f"{server.url}/")
                page.screenshot(path=shots[0], full_page=True)
                page.goto(f"{server.url}/questions/a1b2c3d4e5f60718?thread=order-4471")
                page.screenshot(path=shots[1], full_page=True)
                page.goto(f"{server.url}/threads/order-4471")
                page.screenshot(path=shots[2], full_page=True)
        finally:
            server.stop()
    return shots


if __name__ == "__main__":
    for shot in take(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS_IMAGES):
        print(shot)
