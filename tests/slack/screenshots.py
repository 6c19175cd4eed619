"""Screenshots of a Slack question for the docs: ``python -m tests.slack.screenshots [OUT_DIR]``.

The announcer posts a sample question to the Slack fake through slack-sdk; the blocks it
recorded are rendered to an HTML preview (tests/slack/preview.py) and the system Chromium
(Playwright) saves ``slack-message.png``; a signed click on Approve, answered through the
Interactivity Request URL, then gives ``slack-approved.png``; one approval of a question with a
quorum of two gives ``slack-quorum.png``, and the sweeper's reminder and escalation in a
question's thread ``slack-reminder.png`` (default: ``docs/images``).
``nox -s screenshots`` regenerates the committed ones; tests/slack/test_screenshots.py checks
that it works.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from agent_wait.core import (
    Question,
    Quorum,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.host import sweep
from agent_wait.slack import SlackAnnounce, interactivity_app
from tests.inbox.browser import chromium
from tests.slack.fake_slack import SIGNING_SECRET, TOKEN, USERS, click, fake_slack, form, signed
from tests.slack.preview import page

DOCS_IMAGES = Path(__file__).parents[2] / "docs" / "images"

SAMPLE = Question(
    question_id="a1b2c3d4e5f60718",
    question={
        "function": "issue_refund",
        "args": {
            "order_id": "order-4471",
            "amount": 41000,
            "currency": "EUR",
            "reason": {"code": "damaged", "photos": 3},
        },
    },
    policy=WaitPolicy(
        timeout="P3D", default={"action": "reject"}, tags={"approver_group": "finance"}
    ),
    source={"function": "issue_refund"},
    answer_schema={"type": "object", "properties": {"action": {"enum": ["approve", "reject"]}}},
)


QUORUM = SAMPLE.model_copy(
    update={
        "question_id": "b2c3d4e5f6071829",
        "policy": SAMPLE.policy.model_copy(update={"quorum": Quorum(approve=2)}),
    }
)
FOLLOWED = SAMPLE.model_copy(
    update={
        "question_id": "c3d4e5f607182930",
        "policy": WaitPolicy(
            timeout="P3D",
            default={"action": "reject"},
            tags={"approver_group": "finance"},
            remind=["PT1H"],
            escalate={"after": "PT4H", "to": {"approver_group": "finance-leads"}},
        ),
    }
)
ASKED = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
# Who the previews name: the fake's users, the finance user group and the finance lead.
NAMES = {**USERS, "S0FINANCE": "finance-team", "U0LEAD": "dana"}


def take(out_dir: Path = DOCS_IMAGES) -> list[Path]:
    """Write the question's message, the same message approved, a quorum's count after one
    approval, and a question's thread with its reminder and escalation; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    names = ("slack-message", "slack-approved", "slack-quorum", "slack-reminder")
    shots = [out_dir / f"{name}.png" for name in names]
    with tempfile.TemporaryDirectory() as scratch, fake_slack() as fake, chromium() as browser:
        home = Path(scratch)
        slack = SlackAnnounce(
            token=TOKEN,
            signing_secret=SIGNING_SECRET,
            channel="#finance-approvals",
            base_url=fake.base_url,
            messages_path=home / "slack-messages.sqlite3",
            mentions={
                "approver_group:finance": "S0FINANCE",
                "approver_group:finance-leads": "U0LEAD",
            },
        ).with_lifecycle_events("wait.reminder", "wait.escalated")
        inbox = home / "inbox.sqlite3"
        view = browser.new_page(viewport={"width": 700, "height": 300})

        def ask(question: Question) -> tuple[str, str, dict[str, Any]]:
            announce = [SqliteAnnounce(inbox), slack]
            assert publish([question], "order-4471", announce, strict=True, clock=lambda: ASKED).ok
            [(channel, ts)] = [
                (m.channel, m.ts) for m in slack.messages.of("order-4471", question.question_id)
            ]
            return channel, ts, fake.message(channel, ts)

        def shoot(path: Path, channel: str, ts: str) -> None:
            blocks = fake.message(channel, ts)["blocks"]
            view.set_content(page(blocks, NAMES, replies=fake.thread(channel, ts)))
            view.screenshot(path=path, full_page=True)

        with (
            SqliteQuestionStore(inbox) as store,
            SqliteEntry(inbox) as entry,
            TestClient(interactivity_app(slack, store, entry=entry)) as client,
        ):

            def approve(message: dict[str, Any], channel: str, ts: str) -> None:
                body = form(click(message, channel, ts, "agent_wait_answer:approve"))
                done = client.post("/slack/interactivity", content=body, headers=signed(body))
                assert done.status_code == 200, done.text

            channel, ts, message = ask(SAMPLE)
            shoot(shots[0], channel, ts)
            approve(message, channel, ts)
            shoot(shots[1], channel, ts)

            channel, ts, message = ask(QUORUM)
            approve(message, channel, ts)
            shoot(shots[2], channel, ts)

            channel, ts, _ = ask(FOLLOWED)
            for hours in (1, 4):
                report = sweep(
                    store=store, entry=entry, now=ASKED + timedelta(hours=hours), announce=[slack]
                )
                assert all(d.ok for d in report.events), report.events
            shoot(shots[3], channel, ts)
        slack.close()
    return shots


if __name__ == "__main__":
    for shot in take(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS_IMAGES):
        print(shot)
