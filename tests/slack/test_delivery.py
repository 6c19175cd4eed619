"""Posting questions: the blocks slack-sdk's real WebClient sends, routing, failures, lifecycle updates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import ConfigError, Question, WaitPolicy, apublish, build_envelope, publish
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from agent_wait.slack import SlackAnnounce
from tests.slack.conftest import REFUND, make_slack
from tests.slack.fake_slack import TOKEN, FakeSlack


def buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(label, action_id, style) of every button of a message."""
    return [
        (e["text"]["text"], e["action_id"], e.get("style"))
        for b in blocks
        if b["type"] == "actions"
        for e in b["elements"]
    ]


def texts(blocks: list[dict[str, Any]]) -> str:
    """Every text of a message's blocks, one per line."""
    found: list[str] = []
    for block in blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        found.extend(f["text"] for f in block.get("fields", []))
        found.extend(e["text"] for e in block.get("elements", []) if block["type"] == "context")
    return "\n".join(found)


def test_a_question_is_posted_as_blocks_with_its_arguments_deadline_default_and_buttons(
    slack_api: FakeSlack, slack: SlackAnnounce
) -> None:
    report = publish([REFUND], "order-4471", slack, strict=True)

    [call] = slack_api.of("chat.postMessage")
    arguments = call.arguments
    assert arguments["channel"] == "#approvals"
    assert arguments["text"] == "Approval needed: issue_refund (thread order-4471)"
    blocks = arguments["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "Approval needed: issue_refund", "emoji": True},
    }
    assert blocks[1]["fields"] == [
        {"type": "mrkdwn", "text": "*order_id*\norder-4471"},
        {"type": "mrkdwn", "text": "*amount*\n41000"},
    ]
    about = blocks[2]["elements"][0]["text"]
    expires = report.envelopes[0].expires_at
    assert expires is not None
    assert "*Deadline:* <!date^" in about
    assert f"|{expires[:10]} {expires[11:16]} UTC>" in about
    assert "*If nobody answers:* reject" in about
    assert "*Thread:* `order-4471`" in about
    assert buttons(blocks) == [
        ("Approve", "agent_wait_answer:approve", "primary"),
        ("Reject", "agent_wait_answer:reject", "danger"),
        ("Edit...", "agent_wait_edit", None),
    ]
    # Slack answered with the channel's ID: that is where updates go.
    [delivery] = report.deliveries
    assert delivery.message_id == "C0APPROVALS/1765000000.000001"


def test_routes_by_tag_post_to_channels_and_users_once_each(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    slack = make_slack(
        slack_api,
        tmp_path,
        routes={
            "approver_group:finance": ["#finance-approvals", "U0ALICE", "#approvals"],
            "approver_group:legal": "#legal",
        },
    )
    assert publish([REFUND], "order-4471", slack).ok
    assert [c.arguments["channel"] for c in slack_api.of("chat.postMessage")] == [
        "#approvals",
        "#finance-approvals",
        "U0ALICE",
    ]
    assert sorted(slack_api.messages) == ["C0APPROVALS", "C0FINANCEAPPROVALS", "D0ALICE"]

    # A redelivered publish of the same question posts nothing more.
    assert publish([REFUND], "order-4471", slack).ok
    assert len(slack_api.of("chat.postMessage")) == 3
    slack.close()


async def test_no_destination_is_a_reported_failure(slack_api: FakeSlack, tmp_path: Path) -> None:
    slack = make_slack(slack_api, tmp_path, channel=None, routes={"approver_group:legal": "#law"})
    report = await apublish([REFUND], "order-4471", slack)

    [failure] = report.failures
    assert "no Slack destination for this question" in str(failure.error)
    assert "approver_group:finance" in str(failure.error)
    assert failure.exception is not None
    assert not getattr(failure.exception, "retryable", True)
    assert slack_api.of("chat.postMessage") == []
    slack.close()


def test_a_destination_slack_refuses_fails_the_delivery_naming_its_error(
    slack_api: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    slack = make_slack(slack_api, tmp_path, routes={"approver_group:finance": "C0MISSING"})
    caplog.set_level(logging.DEBUG)
    report = publish([REFUND], "order-4471", slack)

    [failure] = report.failures
    message = str(failure.error)
    assert "1 of 2 Slack destinations not reached (channel_not_found)" in message
    assert not getattr(failure.exception, "retryable", True)
    assert TOKEN not in message
    assert TOKEN not in caplog.text
    # The destination that took it has its message; a retry posts only the missing one.
    assert list(slack_api.messages) == ["C0APPROVALS"]
    slack_api.refuse["chat.postMessage"] = "ratelimited"
    [again] = publish([REFUND], "order-4471", slack).failures
    assert "(ratelimited)" in str(again.error)
    assert getattr(again.exception, "retryable", False)
    assert "1 of 2 Slack destinations" in str(again.error)
    assert [c.arguments["channel"] for c in slack_api.of("chat.postMessage")] == [
        "#approvals",
        "C0MISSING",
        "C0MISSING",
    ]
    slack.close()


def test_a_wrong_token_is_refused_by_slack_and_never_shown(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    slack = make_slack(slack_api, tmp_path, token="xoxb-2-not-the-token")
    [failure] = publish([REFUND], "order-4471", slack).failures
    assert "(invalid_auth)" in str(failure.error)
    assert "xoxb-2-not-the-token" not in str(failure.error)
    slack.close()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (
            {"token": "not-a-token"},
            "option 'token': expected a bot token starting with xoxb- (not shown) (got '***')",
        ),
        ({"channel": "approvals room"}, "option 'channel'"),
        ({"routes": {"finance": "#finance"}}, "expected '<tag>:<value>'"),
        ({"routes": {"approver_group:finance": ["finance"]}}, "is not a Slack channel or user"),
        ({"channel": None}, "give 'channel', 'routes', or both"),
        ({"base_url": "slack.com/api"}, "option 'base_url'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    slack_api: FakeSlack, tmp_path: Path, options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match="announcer 'slack'") as raised:
        make_slack(slack_api, tmp_path, **options)
    assert problem in str(raised.value)
    assert "not-a-token" not in str(raised.value)


def test_the_token_and_secret_come_from_the_environment(
    slack_api: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SLACK_TOKEN", TOKEN)
    monkeypatch.setenv("TEST_SLACK_SECRET", "shh-a-signing-secret")
    slack = SlackAnnounce(
        token_env="TEST_SLACK_TOKEN",
        signing_secret_env="TEST_SLACK_SECRET",
        channel="C0APPROVALS",
        base_url=slack_api.base_url,
        messages_path=tmp_path / "m.sqlite3",
    )
    assert slack.signing_secret == "shh-a-signing-secret"
    assert TOKEN not in repr(slack)
    assert slack.check_connection()
    assert publish([REFUND], "order-4471", slack).ok
    slack.close()
    monkeypatch.delenv("TEST_SLACK_TOKEN")
    with pytest.raises(ConfigError, match="TEST_SLACK_TOKEN"):
        SlackAnnounce(token_env="TEST_SLACK_TOKEN", channel="C0APPROVALS")


BATCH = Question(
    question_id="q-batch",
    question={
        "actions": [
            {
                "name": "send_email",
                "args": {"to": "cfo@example.com"},
                "description": "Tool execution requires approval",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            },
            {
                "name": "delete_file",
                "args": {"path": "/q3.xlsx"},
                "description": "Delete it?",
                "allowed_decisions": ["approve", "reject"],
            },
        ]
    },
    policy=WaitPolicy(allowed_actions=["approve", "edit", "reject", "respond"]),
)


def test_a_middleware_batch_shows_each_action_and_takes_one_decision_per_action(
    slack_api: FakeSlack, slack: SlackAnnounce
) -> None:
    assert publish([BATCH], "office-1", slack).ok
    [call] = slack_api.of("chat.postMessage")
    blocks = call.arguments["blocks"]
    shown = texts(blocks)
    assert "Approval needed: send_email, delete_file" in shown
    assert "*1. send_email*\nTool execution requires approval" in shown
    assert "*to*\ncfo@example.com" in shown
    assert "*2. delete_file*\nDelete it?" in shown
    assert buttons(blocks) == [
        ("Approve all", "agent_wait_all:approve", "primary"),
        ("Reject all", "agent_wait_all:reject", "danger"),
        ("Decide each...", "agent_wait_decide", None),
    ]


def test_mrkdwn_in_arguments_is_shown_as_text(slack_api: FakeSlack, slack: SlackAnnounce) -> None:
    sneaky = Question(
        question_id="q-sneaky",
        question={"function": "pay", "args": {"to": "<!channel> & <https://evil.example|bank>"}},
    )
    assert publish([sneaky], "t-sneaky", slack).ok
    [call] = slack_api.of("chat.postMessage")
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|bank&gt;" in texts(
        call.arguments["blocks"]
    )


def _posted(slack_api: FakeSlack, slack: SlackAnnounce) -> tuple[str, str]:
    slack.with_lifecycle_events("wait.answered", "wait.expired", "wait.answer_refused")
    assert publish([REFUND], "order-4471", slack).ok
    channel, ts, _ = slack_api.only_message()
    return channel, ts


def test_an_expiry_updates_the_message_in_place(slack_api: FakeSlack, slack: SlackAnnounce) -> None:
    channel, ts = _posted(slack_api, slack)
    event = lifecycle_event(
        "wait.expired", "order-4471", "q-refund", outcome="default_sent", by="sweeper"
    )
    [delivery] = publish_events([event], [slack])
    assert delivery.ok, delivery.error

    [update] = slack_api.of("chat.update")
    assert (update.arguments["channel"], update.arguments["ts"]) == (channel, ts)
    shown = slack_api.message(channel, ts)
    assert ":hourglass: *Expired:* default reject applied at <!date^" in texts(shown["blocks"])
    assert buttons(shown["blocks"]) == []


def test_a_refused_answer_puts_the_buttons_back_with_the_reason(
    slack_api: FakeSlack, slack: SlackAnnounce
) -> None:
    channel, ts = _posted(slack_api, slack)
    event = lifecycle_event(
        "wait.answer_refused",
        "order-4471",
        "q-refund",
        outcome="invalid_answer",
        by="@alice",
        reason="answer.args.amount: -5 is less than the minimum of 0",
    )
    assert all(d.ok for d in publish_events([event], [slack]))
    shown = slack_api.message(channel, ts)
    assert (
        ":warning: *The agent refused this answer:* answer.args.amount: -5 is less than the "
        "minimum of 0. Answer again."
    ) in texts(shown["blocks"])
    assert [b[1] for b in buttons(shown["blocks"])] == [
        "agent_wait_answer:approve",
        "agent_wait_answer:reject",
        "agent_wait_edit",
    ]


def test_an_answer_given_elsewhere_is_shown_and_a_failed_update_is_reported(
    slack_api: FakeSlack, slack: SlackAnnounce
) -> None:
    channel, ts = _posted(slack_api, slack)
    event = lifecycle_event("wait.answered", "order-4471", "q-refund", outcome="resumed", by="bob")
    slack_api.refuse["chat.update"] = "message_not_found"
    [failed] = publish_events([event], [slack])
    assert not failed.ok
    assert "1 of 1 Slack messages not updated (message_not_found)" in str(failed.error)
    del slack_api.refuse["chat.update"]
    assert all(d.ok for d in publish_events([event], [slack]))
    assert ":white_check_mark: *Answered* by bob at" in texts(
        slack_api.message(channel, ts)["blocks"]
    )
    # A question this announcer never posted has nothing to update.
    other = lifecycle_event("wait.answered", "order-9", "q-other", outcome="resumed", by="bob")
    assert all(d.ok for d in publish_events([other], [slack]))
    assert len(slack_api.of("chat.update")) == 2


def test_a_question_without_arguments_shows_the_question(
    slack_api: FakeSlack, slack: SlackAnnounce
) -> None:
    envelope = build_envelope(Question(question_id="q-yes", question="Wire 41000 EUR?"), "wire-1")
    slack.deliver(envelope)
    [call] = slack_api.of("chat.postMessage")
    assert "Wire 41000 EUR?" in texts(call.arguments["blocks"])
    assert buttons(call.arguments["blocks"]) == [
        ("Approve", "agent_wait_answer:approve", "primary"),
        ("Reject", "agent_wait_answer:reject", "danger"),
    ]
    # A bare interrupt that states no actions is answered in the modal, with any JSON or text.
    bare = build_envelope(Question(question_id="q-bare", question="Wire it?"), "wire-2")
    bare = bare.model_copy(update={"allowed_actions": []})
    slack.deliver(bare)
    last = slack_api.of("chat.postMessage")[-1]
    assert buttons(last.arguments["blocks"]) == [("Answer...", "agent_wait_edit", None)]
