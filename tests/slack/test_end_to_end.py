"""A deployment in separate processes: a LangGraph worker, ``agent-wait slack serve``, and Slack.

The run parks on ``issue_refund``; the Slack fake receives the question's blocks; a signed click
on **Approve**, posted to the served Interactivity Request URL as Slack posts it, answers through
core's path; the worker resumes and runs the body once; the message now says who approved.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import SqliteEntry, SqliteQuestionStore, format_utc
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.core._store import parse_now
from tests.channel_worker import Process, sweeps_racing
from tests.serving import until
from tests.slack.fake_slack import FakeSlack, click, post
from tests.slack.serving import Served, deployment_env
from tests.slack.test_delivery import buttons, texts

WORKER = Path(__file__).with_name("worker_app.py")
WITHIN = 120.0


def posted(slack_api: FakeSlack, channel: str) -> tuple[str, dict[str, Any]] | None:
    with slack_api.lock:
        found = list(slack_api.messages.get(channel, {}).items())
    return found[0] if found else None


def updated(slack_api: FakeSlack, channel: str) -> dict[str, Any] | None:
    """The channel's one message once an update took its buttons away."""
    with slack_api.lock:
        [shown] = slack_api.messages[channel].values()
    return shown if not buttons(shown["blocks"]) else None


def buttons_value(blocks: list[dict[str, Any]]) -> str:
    [actions] = [b for b in blocks if b["type"] == "actions"]
    return actions["elements"][0]["value"]


@pytest.mark.integration
def test_a_parked_langgraph_run_is_approved_from_slack_and_resumes(
    slack_api: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    env = deployment_env(slack_api, tmp_path, routes={"approver_group:finance": "#finance"})
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    runs = tmp_path / "runs.txt"
    runs.touch()
    interactivity = Served("slack", env)
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), str(runs)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with SqliteEntry() as entry:
            entry.send(
                {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
            )

        # The question reaches both destinations: the default channel and the finance route.
        ts, message = until(lambda: posted(slack_api, "C0FINANCE"), "the finance message", WITHIN)
        assert until(lambda: posted(slack_api, "C0APPROVALS"), "the default channel's message")
        blocks = message["blocks"]
        assert blocks[0]["text"]["text"] == "Approval needed: issue_refund"
        assert blocks[1]["fields"] == [
            {"type": "mrkdwn", "text": "*order_id*\norder-4471"},
            {"type": "mrkdwn", "text": "*amount*\n41000"},
        ]
        assert "*If nobody answers:* reject" in texts(blocks)
        assert [b[0] for b in buttons(blocks)] == ["Approve", "Reject", "Edit..."]
        assert runs.read_text() == ""

        done = post(
            f"{interactivity.url}/slack/interactivity",
            click(message, "C0FINANCE", ts, "agent_wait_answer:approve"),
        )
        assert done.status_code == 200, done.text

        until(lambda: runs.read_text() == "refund order-4471 41000\n", "the approved body", WITHIN)
        question_id = json.loads(buttons_value(blocks))["q"]
        with SqliteQuestionStore(default_inbox_path()) as store:
            # The worker may resume before the store records the send as confirmed.
            [closed] = until(
                lambda: [q for q in store.find(question_id) if q.status == "answered"],
                "the answer settled",
            )
        assert closed.answered_by == "@alice"
        # Both messages say who approved, without buttons; the worker's wait.answered keeps it.
        for channel in ("C0FINANCE", "C0APPROVALS"):
            shown = until(lambda c=channel: updated(slack_api, c), f"the {channel} update")
            assert "*Approved* by <@U0ALICE> at <!date^" in texts(shown["blocks"])
            assert buttons(shown["blocks"]) == []
        # The worker's wait.answered found the messages already saying it: no other update.
        assert len(slack_api.of("chat.update")) == 2
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=WITHIN)
        served_err = interactivity.stop()
    assert worker.returncode == 0, err
    assert out.strip() == "acknowledged=2 dead=0"
    assert "(attempt 1): resumed" in err
    assert runs.read_text() == "refund order-4471 41000\n"
    for text in (err, served_err):
        assert "xoxb-" not in text


@pytest.mark.integration
def test_racing_sweepers_reply_with_the_reminder_and_the_escalation_once_through_an_outage(
    slack_api: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    env = deployment_env(
        slack_api,
        tmp_path,
        channel=None,
        routes={
            "approver_group:finance": "#finance",
            "approver_group:finance-leads": "#finance-leads",
        },
        mentions={"approver_group:finance": "S0FINANCE", "approver_group:finance-leads": "U0LEAD"},
        lifecycle_events=["wait.reminder", "wait.escalated", "wait.last_warning"],
    )
    for name in ("AGENT_WAIT_HOME", "AGENT_WAIT_ANNOUNCE", *(n for n in env if "DEPLOY_" in n)):
        monkeypatch.setenv(name, env[name])  # the sweepers' environment is this process's
    worker = Process([sys.executable, "-m", "tests.channel_worker"], env)
    try:
        assert worker.line() == "serving"
        with SqliteEntry() as entry:
            entry.send({"thread_id": "refund-18", "input": {"order": "A-18", "amount": 900}})
        ts, _ = until(lambda: posted(slack_api, "C0FINANCE"), "the finance message", WITHIN)
        with SqliteQuestionStore(default_inbox_path()) as store:
            [parked] = until(store.open_questions, "the parked question")
        follow_up = parked.envelope.follow_up
        assert follow_up is not None
        assert follow_up.escalate_at is not None

        # Slack is down when the reminder is due: the sweeper says why, and exits 1. (One
        # sweeper: a second one starting after the failure was recorded would try it again.)
        slack_api.outage["chat.postMessage"] = 1
        [failed] = sweeps_racing(follow_up.remind_at[0], racers=1)
        assert failed.returncode == 1, failed.stderr
        assert "not delivered to slack (attempt 1: DeliveryFailed" in failed.stderr
        assert "HTTP 500" in failed.stderr
        assert slack_api.thread("C0FINANCE", ts) == []

        # Back up: the next sweeps, two at once, deliver it once, then escalate once.
        later = parse_now(follow_up.remind_at[0]) + timedelta(minutes=1)
        for moment in (format_utc(later), follow_up.escalate_at):
            for done in sweeps_racing(moment):
                assert done.returncode == 0, done.stderr
    finally:
        worker.stop()
    reminder, escalated = slack_api.thread("C0FINANCE", ts)
    assert reminder.startswith("<!subteam^S0FINANCE> :bell: *Reminder:*")
    assert escalated.startswith("<@U0LEAD> :arrow_up: *Escalated:*")
    [(leads_ts, leads)] = slack_api.messages["C0FINANCELEADS"].items()
    assert [b[0] for b in buttons(leads["blocks"])] == ["Approve", "Reject", "Edit..."]
    [to_leads] = slack_api.thread("C0FINANCELEADS", leads_ts)
    assert to_leads.startswith("<@U0LEAD> :arrow_up: *Escalated:*")
    with SqliteQuestionStore(default_inbox_path()) as store:
        [question] = store.find(parked.envelope.question_id)
    assert question.is_open
    assert question.escalated_to == {"approver_group": "finance-leads"}
    assert "xoxb-" not in worker.stderr
