"""Screenshots of the inbox for the docs: ``python -m tests.inbox.screenshots [OUT_DIR]``.

Sample questions in a fresh inbox file, ``agent-wait inbox serve`` on it (the login secret
set), and the system Chromium (Playwright) saving every page at a phone's 390x844 and a desk's
1280x800: ``inbox-<page>-<phone|desk>.png`` (default: ``docs/images``). ``nox -s screenshots``
regenerates the committed ones; tests/inbox/test_screenshots.py checks that it works.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_wait.core import (
    CallContext,
    ContextMessage,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    publish,
    started_by,
)
from agent_wait.core._policy import UNSTATED
from agent_wait.host import answer
from tests.inbox.browser import chromium, log_in
from tests.inbox.conftest import SECRET, Server, ask

DOCS_IMAGES = Path(__file__).parents[2] / "docs" / "images"
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desk": {"width": 1280, "height": 800}}
REFUND = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
CARD = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
CLOSED = "8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a"
VOUCHER = "0f9e8d7c6b5a43210f1e2d3c4b5a6978"
CONVERSATION = [
    ContextMessage(role="user", text="My vase arrived in pieces. Can I get something back?"),
    ContextMessage(
        role="assistant",
        text="I am sorry. I can offer a 25 EUR voucher now, while the refund is reviewed.",
    ),
    ContextMessage(role="user", text="Yes please, send the voucher."),
]
VOUCHER_CONTEXT = CallContext(
    tool="send_voucher",
    tool_call_id="call_3_0",
    framework="pydantic_ai",
    agent="support",
    messages=CONVERSATION,
)
CARD_SCHEMA = {
    "type": "object",
    "properties": {
        "card": {"enum": ["visa", "amex"], "description": "The card to charge"},
        "amount": {"type": "integer", "minimum": 1, "description": "In cents"},
        "note": {"type": "string"},
    },
    "required": ["card", "amount"],
}


def sample_inbox(path: Path) -> None:
    """Questions an approver typically sees: one overdue, two in one thread, one answered.

    The voucher says who asked: the agent, its framework, who started the run and the
    conversation's last messages, as a host that shares them publishes it.
    """
    now = datetime.now(UTC)
    ask(
        path,
        REFUND,
        args={
            "order_id": "order-4471",
            "amount": 41000,
            "currency": "EUR",
            "reason": {"code": "damaged", "photos": 3},
            "customer_note": "The parcel arrived crushed; the vase inside is in pieces. " * 6,
        },
        timeout="P3D",
        default={"action": "reject", "reason": "no response within P3D"},
        tags={"approver_group": "finance"},
    )
    with started_by("carol@example.com"):  # a run its host said carol started
        ask(
            path,
            VOUCHER,
            function="send_voucher",
            args={"order_id": "order-4471", "value": 2500, "currency": "EUR"},
            context=VOUCHER_CONTEXT,
            timeout="P3D",
            tags={"approver_group": "finance"},
        )
    ask(
        path,
        "9a1c0b7e22f4d3109a1c0b7e22f4d310",
        thread_id="order-4502",
        function="delete_customer",
        args={"customer_id": "c-2231", "keep_invoices": True},
        timeout="P1D",
        tags={"approver_group": "privacy"},
    )
    ask(
        path,
        "7f3e5d2c1b0a99887f3e5d2c1b0a9988",
        thread_id="order-4390",
        args={"order_id": "order-4390", "amount": 125000},
        asked=now - timedelta(days=4),
        timeout="P3D",
        tags={"approver_group": "finance"},
    )
    ask(
        path,
        "5e6f7a8b9c0d1e2f5e6f7a8b9c0d1e2f",
        thread_id="deploy-88",
        function="deploy",
        args={"service": "billing", "version": "2.14.0", "canary": 0.1},
        timeout="PT4H",
        tags={"approver_group": "sre"},
    )
    ask_card(path, CARD, "order-4510")
    ask(
        path,
        CLOSED,
        thread_id="order-4388",
        args={"order_id": "order-4388", "amount": 900},
        timeout="P1D",
        tags={"approver_group": "finance"},
    )
    with SqliteQuestionStore(path) as store, SqliteEntry(path) as entry:
        answer(CLOSED, "approve", by="bob", store=store, entry=entry)


def ask_card(path: Path, question_id: str, thread_id: str) -> None:
    """A bare interrupt stating the answer's shape (no actions, no deadline), from a tool call."""
    publish(
        [
            Question(
                question_id=question_id,
                question="Charge which card, and how much?",
                policy=UNSTATED,
                answer_schema=CARD_SCHEMA,
                context=CallContext(node="billing_agent", tool="charge_card"),
            )
        ],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
    )


@contextmanager
def sample_server(scratch: Path) -> Iterator[Server]:
    """``agent-wait inbox serve`` over the sample inbox in ``scratch`` (secret: ``SECRET``)."""
    sample_inbox(scratch / "inbox.sqlite3")
    server = Server(env={"AGENT_WAIT_HOME": str(scratch), "AGENT_WAIT_INBOX_TOKEN": SECRET})
    try:
        yield server
    finally:
        server.stop()


PAGES = {
    "login": "/login",
    "list": "/",
    "history": "/history",
    "question": f"/questions/{REFUND}?thread=order-4471",
    "asker": f"/questions/{VOUCHER}?thread=order-4471",
    "form": f"/questions/{CARD}?thread=order-4510",
    "thread": "/threads/order-4471",
}
"""Every page, by the name its screenshots take."""


def take(out_dir: Path = DOCS_IMAGES) -> list[Path]:
    """Write every page at both sizes to ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with (
        tempfile.TemporaryDirectory() as scratch,
        sample_server(Path(scratch)) as server,
        chromium() as browser,
    ):
        for size, viewport in VIEWPORTS.items():
            context = browser.new_context(viewport=viewport)  # pyright: ignore[reportArgumentType]
            page = context.new_page()
            for name, path in PAGES.items():
                if name == "list":
                    log_in(page, server.url, "alice", SECRET)
                page.goto(f"{server.url}{path}")
                if name == "asker":  # the conversation unfolded, as a reader opens it
                    page.locator("details#conversation summary").click()
                shot = out_dir / f"inbox-{name}-{size}.png"
                page.screenshot(path=shot, full_page=True)
                shots.append(shot)
            context.close()
    return shots


if __name__ == "__main__":
    for shot in take(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS_IMAGES):
        print(shot)
