"""Screenshots of the email channel for the docs: ``python -m tests.email.screenshots [OUT_DIR]``.

A sample question mailed to a real SMTP server (aiosmtpd on loopback), its HTML part opened in
the system Chromium (``email-message.png``), its approve link opened on ``agent-wait email
serve`` (``email-confirm.png``: the confirmation page, which answers nothing), and the reminder
the sweeper mails an hour later (``email-reminder.png``). ``nox -s screenshots`` regenerates the
committed ones; tests/email/test_screenshots.py checks that it works.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path

import httpx
from aiosmtpd.controller import Controller

from agent_wait.core import (
    Question,
    SqliteAnnounce,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.email import EmailAnnounce
from agent_wait.host import sweep
from tests.email.conftest import SECRET, Mailbox, _Handler, free_port  # pyright: ignore[reportPrivateUsage]
from tests.inbox.browser import chromium

DOCS_IMAGES = Path(__file__).parents[2] / "docs" / "images"
AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))
REFUND = Question(
    question_id="a1b2c3d4e5f60718",
    question={
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000, "currency": "EUR"},
    },
    policy=WaitPolicy(
        timeout="P1D",
        default={"action": "reject", "reason": "no response within P1D"},
        tags={"approver_group": "finance"},
        remind=["PT1H"],
    ),
)


def html_of(message: EmailMessage) -> str:
    part = message.get_body(("html",))
    assert part is not None
    return part.get_content()


def take(out_dir: Path = DOCS_IMAGES) -> list[Path]:
    """Write the message, confirmation page and reminder screenshots; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    box = Mailbox(port=free_port())
    smtp = Controller(_Handler(box), hostname="127.0.0.1", port=box.port)
    smtp.start()
    with tempfile.TemporaryDirectory() as scratch:
        port = free_port()
        links = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [AGENT_WAIT, "email", "serve", "--port", str(port)],
            env={**os.environ, "AGENT_WAIT_HOME": scratch, "AGENT_WAIT_EMAIL_SECRET": SECRET},
        )
        try:
            inbox = Path(scratch) / "inbox.sqlite3"
            mail = EmailAnnounce(
                "127.0.0.1",
                port=box.port,
                security="none",
                sender="agent@example.com",
                routes={"approver_group:finance": ["cfo@example.com"]},
                links_url=links,
                secret=SECRET,
            ).with_lifecycle_events("wait.reminder")
            asked = datetime.now(UTC)
            publish([REFUND], "order-4471", [SqliteAnnounce(inbox), mail], clock=lambda: asked)
            with SqliteQuestionStore(inbox) as store:
                sweep(store=store, now=asked + timedelta(hours=1), announce=[mail])
            message, reminder = box.wait_for(2)
            text = message.get_body(("plain",))
            assert text is not None
            approve = re.findall(
                r"^approve: (\S+)$", text.get_content().replace("\r\n", "\n"), re.M
            )[0]
            _ready(server, links)
            shots = [
                out_dir / "email-message.png",
                out_dir / "email-confirm.png",
                out_dir / "email-reminder.png",
            ]
            with chromium() as browser:
                page = browser.new_page(viewport={"width": 900, "height": 480})
                page.set_content(html_of(message))
                page.screenshot(path=shots[0], full_page=True)
                page.goto(approve)
                page.screenshot(path=shots[1], full_page=True)
                page.set_content(html_of(reminder))
                page.screenshot(path=shots[2], full_page=True)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
            smtp.stop()
    return shots


def _ready(server: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert server.poll() is None, "agent-wait email serve exited"
        assert time.monotonic() < deadline, "agent-wait email serve did not start"
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)


if __name__ == "__main__":
    for shot in take(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS_IMAGES):
        print(shot)
