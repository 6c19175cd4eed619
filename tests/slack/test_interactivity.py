"""The Interactivity Request URL: signed clicks and modal submissions answer through core's path."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_wait.core import (
    ConfigError,
    Question,
    Quorum,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    publish,
)
from agent_wait.host import answer
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from agent_wait.slack import SlackAnnounce, interactivity_app, interactivity_routes
from tests.slack.conftest import REFUND, make_slack, sent
from tests.slack.fake_slack import FakeSlack, click, form, signed, submission
from tests.slack.test_delivery import BATCH, buttons, texts

URL = "/slack/interactivity"


@pytest.fixture
def client(
    slack: SlackAnnounce, store: SqliteQuestionStore, entry: SqliteEntry
) -> Iterator[TestClient]:
    with TestClient(interactivity_app(slack, store, entry=entry)) as client:
        yield client


def asked(
    slack: SlackAnnounce, inbox: Any, question: Question = REFUND, thread: str = "order-4471"
):
    assert publish([question], thread, [SqliteAnnounce(inbox), slack], strict=True).ok


def post(client: TestClient, payload: dict[str, Any], **signing: Any) -> Any:
    body = form(payload)
    return client.post(URL, content=body, headers=signed(body, **signing))


def test_a_signed_click_approves_as_the_slack_user_and_updates_the_message(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()

    done = post(client, click(message, channel, ts, "agent_wait_answer:approve"))
    assert done.status_code == 200, done.text

    [closed] = store.find("q-refund", "order-4471")
    assert (closed.status, closed.answered_by, closed.answer) == (
        "answered",
        "@alice",
        {"action": "approve"},
    )
    [reply] = sent(entry)
    assert reply["answer"] == {"action": "approve"}
    assert reply["answered_by"] == "@alice"
    shown = slack_api.message(channel, ts)
    assert ":white_check_mark: *Approved* by <@U0ALICE> at <!date^" in texts(shown["blocks"])
    assert buttons(shown["blocks"]) == []
    assert slack_api.of("chat.postEphemeral") == []


@pytest.mark.parametrize(
    "signing",
    [
        pytest.param({"secret": "not-the-signing-secret"}, id="wrong-secret"),
        # Offsets, not times: a time taken at collection is minutes stale in a long run.
        pytest.param({"offset": -6 * 60}, id="six-minutes-old"),
        pytest.param({"offset": 6 * 60}, id="six-minutes-ahead"),
    ],
)
def test_a_bad_or_old_signature_is_refused_and_answers_nothing(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    client: TestClient,
    signing: dict[str, Any],
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()

    if "offset" in signing:
        signing = {"at": int(time.time()) + signing["offset"]}
    refused = post(client, click(message, channel, ts, "agent_wait_answer:approve"), **signing)
    assert (refused.status_code, refused.text) == (401, "invalid signature")
    assert store.find("q-refund", "order-4471")[0].is_open
    assert slack_api.of("chat.update") == []


def test_unsigned_and_tampered_requests_are_refused(
    slack_api: FakeSlack, slack: SlackAnnounce, inbox: Any, client: TestClient
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    body = form(click(message, channel, ts, "agent_wait_answer:approve"))
    assert client.post(URL, content=body).status_code == 401
    headers = signed(body)
    assert (
        client.post(URL, content=body.replace("approve", "reject"), headers=headers).status_code
        == 401
    )
    headers["X-Slack-Request-Timestamp"] = "yesterday"
    assert client.post(URL, content=body, headers=headers).status_code == 401
    # A signed body without a payload is refused for what it is.
    assert post_raw(client, "text=hello").status_code == 400


def post_raw(client: TestClient, body: str) -> Any:
    return client.post(URL, content=body, headers=signed(body))


def test_of_two_approvers_one_wins_and_the_other_is_told_who_and_when(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    assert post(client, click(message, channel, ts, "agent_wait_answer:approve")).status_code == 200
    late = post(client, click(message, channel, ts, "agent_wait_answer:reject", user="U0BOB"))
    assert late.status_code == 200

    [closed] = store.find("q-refund", "order-4471")
    [told] = slack_api.of("chat.postEphemeral")
    assert told.arguments["user"] == "U0BOB"
    assert told.arguments["channel"] == channel
    assert told.arguments["text"] == (
        f"Not sent: this question is already answered by @alice at {closed.answered_at}."
    )
    assert len(sent(entry)) == 1
    # The winner's line stays on the message.
    assert "*Approved* by <@U0ALICE>" in texts(slack_api.message(channel, ts)["blocks"])


def test_a_question_answered_elsewhere_says_so_on_the_message_when_clicked(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    answer("q-refund", "reject", by="carol", store=store, entry=entry)

    post(client, click(message, channel, ts, "agent_wait_answer:approve"))
    [told] = slack_api.of("chat.postEphemeral")
    assert "already answered by carol at" in told.arguments["text"]
    shown = texts(slack_api.message(channel, ts)["blocks"])
    assert ":lock: *Answered* by carol at <!date^" in shown


def modal(slack_api: FakeSlack) -> dict[str, Any]:
    [opened] = slack_api.of("views.open")
    assert opened.arguments["trigger_id"] == "1234.5678.abcdef"
    return opened.arguments["view"]


def inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def test_edit_opens_a_modal_from_the_answer_schema_and_its_submission_answers(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    assert post(client, click(message, channel, ts, "agent_wait_edit")).status_code == 200

    view = modal(slack_api)
    assert view["callback_id"] == "agent_wait_edit"
    fields = inputs(view)
    assert list(fields) == ["f:action", "f:args.order_id", "f:args.amount", "f:reason"]
    assert fields["f:action"]["element"]["type"] == "static_select"
    assert [o["value"] for o in fields["f:action"]["element"]["options"]] == [
        '"approve"',
        '"reject"',
    ]
    assert fields["f:args.amount"]["element"] == {
        "type": "number_input",
        "action_id": "v",
        "is_decimal_allowed": False,
        "initial_value": "41000",
    }
    assert fields["f:args.order_id"]["element"]["initial_value"] == "order-4471"
    assert fields["f:reason"]["optional"] is True

    def values(amount: str) -> dict[str, Any]:
        return {
            "f:action": {"v": {"type": "static_select", "selected_option": {"value": '"approve"'}}},
            "f:args.order_id": {"v": {"type": "plain_text_input", "value": "order-4471"}},
            "f:args.amount": {"v": {"type": "number_input", "value": amount}},
            "f:reason": {"v": {"type": "plain_text_input", "value": "partial refund"}},
        }

    wrong = post(client, submission(view, values("950.5")))
    assert wrong.json() == {
        "response_action": "errors",
        "errors": {"f:args.amount": "expected a whole number, got '950.5'"},
    }
    assert store.find("q-refund", "order-4471")[0].is_open

    done = post(client, submission(view, values("950")))
    assert (done.status_code, done.text) == (200, "")
    [reply] = sent(entry)
    assert reply["answer"] == {
        "action": "approve",
        "reason": "partial refund",
        "args": {"order_id": "order-4471", "amount": 950},
    }
    assert reply["answered_by"] == "@alice"
    assert "*Approved with changes* by <@U0ALICE>" in texts(
        slack_api.message(channel, ts)["blocks"]
    )


def test_a_submission_the_schema_refuses_is_shown_beside_its_field(
    slack_api: FakeSlack, slack: SlackAnnounce, inbox: Any, client: TestClient
) -> None:
    strict = Question(
        question_id="q-limit",
        question={"function": "issue_refund", "args": {"amount": 10}},
        answer_schema={
            "type": "object",
            "properties": {
                "action": {"enum": ["approve", "reject"]},
                "args": {
                    "type": "object",
                    "properties": {"amount": {"type": "integer", "maximum": 100}},
                },
            },
            "required": ["action"],
        },
    )
    asked(slack, inbox, strict, "order-9")
    channel, ts, message = slack_api.only_message()
    post(client, click(message, channel, ts, "agent_wait_edit"))
    view = modal(slack_api)
    refused = post(
        client,
        submission(
            view,
            {
                "f:action": {"v": {"selected_option": {"value": '"approve"'}}},
                "f:args.amount": {"v": {"type": "number_input", "value": "500"}},
            },
        ),
    )
    errors = refused.json()["errors"]
    assert list(errors) == ["f:args.amount"]
    assert "500 is greater than the maximum of 100" in errors["f:args.amount"]


def test_a_batch_takes_one_decision_per_action_from_its_modal_or_all_at_once(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    asked(slack, inbox, BATCH, "office-1")
    channel, ts, message = slack_api.only_message()
    post(client, click(message, channel, ts, "agent_wait_decide"))
    view = modal(slack_api)
    assert view["callback_id"] == "agent_wait_decide"
    fields = inputs(view)
    assert list(fields) == ["d:0", "a:0", "m:0", "d:1", "m:1"]
    assert [o["value"] for o in fields["d:1"]["element"]["options"]] == ['"approve"', '"reject"']

    missing = post(
        client, submission(view, {"d:0": {"v": {"selected_option": {"value": '"approve"'}}}})
    )
    assert missing.json()["errors"] == {"d:1": "choose a decision"}

    chosen = {
        "d:0": {"v": {"selected_option": {"value": '"edit"'}}},
        "a:0": {"v": {"type": "plain_text_input", "value": '{"to": "ceo@example.com"}'}},
        "d:1": {"v": {"selected_option": {"value": '"reject"'}}},
        "m:1": {"v": {"type": "plain_text_input", "value": "keep the spreadsheet"}},
    }
    done = post(client, submission(view, chosen))
    assert (done.status_code, done.text) == (200, "")
    [reply] = sent(entry)
    assert reply["answer"] == {
        "action": "reject",
        "decisions": [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "ceo@example.com"}},
            },
            {"type": "reject", "message": "keep the spreadsheet"},
        ],
    }
    assert "*Decided (edit, reject)* by <@U0ALICE>" in texts(
        slack_api.message(channel, ts)["blocks"]
    )

    # Approve all: one approve decision for each action.
    asked(slack, inbox, BATCH.model_copy(update={"question_id": "q-batch-2"}), "office-2")
    [(ts2, second)] = [(t, m) for t, m in slack_api.messages[channel].items() if t != ts]
    post(client, click(second, channel, ts2, "agent_wait_all:approve"))
    [reply] = sent(entry)
    assert reply["answer"] == {"action": "approve", "decisions": [{"type": "approve"}] * 2}


def test_interactivity_needs_the_signing_secret(
    slack_api: FakeSlack, tmp_path: Any, store: SqliteQuestionStore
) -> None:
    slack = make_slack(slack_api, tmp_path, signing_secret=None)
    with pytest.raises(ConfigError, match="option 'signing_secret' is needed"):
        interactivity_routes(slack, store)
    slack.close()


def test_a_click_for_a_question_no_longer_in_the_store_is_told(
    slack_api: FakeSlack, slack: SlackAnnounce, inbox: Any, client: TestClient
) -> None:
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    payload = click(message, channel, ts, "agent_wait_answer:approve")
    payload["actions"][0]["value"] = json.dumps({"q": "q-gone", "t": "order-4471"})
    assert post(client, payload).status_code == 200
    [told] = slack_api.of("chat.postEphemeral")
    assert told.arguments["text"] == "This question is no longer with the agent."


class _FastHost(SqliteEntry):
    """An entry point whose host takes the answer and reports it before ``send`` returns."""

    slack: SlackAnnounce

    def send(self, message: dict[str, Any]) -> None:
        super().send(message)
        event = lifecycle_event(
            "wait.answered",
            message["thread_id"],
            message["question_id"],
            outcome="resumed",
            by=message.get("answered_by"),
        )
        assert all(d.ok for d in publish_events([event], [self.slack]))


def test_a_host_reporting_the_answer_before_the_click_returns_leaves_the_slack_line(
    slack_api: FakeSlack, slack: SlackAnnounce, inbox: Any, store: SqliteQuestionStore
) -> None:
    slack.with_lifecycle_events("wait.answered")
    asked(slack, inbox)
    channel, ts, message = slack_api.only_message()
    with _FastHost(inbox) as fast:
        fast.slack = slack
        with TestClient(interactivity_app(slack, store, entry=fast)) as client:
            post(client, click(message, channel, ts, "agent_wait_answer:approve"))
    # The event found the line the click claimed, and changed nothing; the click's update did.
    [update] = slack_api.of("chat.update")
    assert "*Approved* by <@U0ALICE>" in texts(update.arguments["blocks"])


def test_a_slack_user_who_is_not_an_approver_is_told_and_nothing_is_recorded(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    only_alice = REFUND.model_copy(
        update={"policy": REFUND.policy.model_copy(update={"approvers": ("@alice",)})}
    )
    asked(slack, inbox, only_alice)
    channel, ts, message = slack_api.only_message()
    refused = post(client, click(message, channel, ts, "agent_wait_answer:approve", user="U0BOB"))
    assert refused.status_code == 200
    [told] = slack_api.of("chat.postEphemeral")
    assert told.arguments["user"] == "U0BOB"
    assert "@bob (slack) may not answer it: its approvers are @alice" in told.arguments["text"]
    [still] = store.find("q-refund", "order-4471")
    assert still.is_open
    assert sent(entry) == []
    assert post(client, click(message, channel, ts, "agent_wait_answer:approve")).status_code == 200
    [reply] = sent(entry)
    assert (reply["answered_by"], reply["identity_source"]) == ("@alice", "slack")


def test_a_quorum_shows_each_vote_in_place_until_the_deciding_one(
    slack_api: FakeSlack,
    slack: SlackAnnounce,
    inbox: Any,
    store: SqliteQuestionStore,
    entry: SqliteEntry,
    client: TestClient,
) -> None:
    two = REFUND.model_copy(
        update={"policy": REFUND.policy.model_copy(update={"quorum": Quorum(approve=2)})}
    )
    asked(slack, inbox, two)
    channel, ts, message = slack_api.only_message()

    assert post(client, click(message, channel, ts, "agent_wait_answer:approve")).status_code == 200
    [still] = store.find("q-refund", "order-4471")
    assert (still.status, [v["by"] for v in still.votes]) == ("open", ["@alice"])
    assert sent(entry) == []
    shown = slack_api.message(channel, ts)
    assert (
        ":ballot_box_with_ballot: *1 of 2 approvals, waiting for finance*: approved by @alice"
        in texts(shown["blocks"])
    )
    assert [b[0] for b in buttons(shown["blocks"])] == ["Approve", "Reject", "Edit..."]

    # Alice again: her vote counts once; she is told, and the message keeps the count.
    assert post(client, click(message, channel, ts, "agent_wait_answer:approve")).status_code == 200
    [told] = slack_api.of("chat.postEphemeral")
    assert told.arguments["user"] == "U0ALICE"
    assert "@alice already voted (1 of 2 approvals" in told.arguments["text"]
    assert "*1 of 2 approvals" in texts(slack_api.message(channel, ts)["blocks"])

    done = post(client, click(message, channel, ts, "agent_wait_answer:approve", user="U0BOB"))
    assert done.status_code == 200
    [closed] = store.find("q-refund", "order-4471")
    assert (closed.status, closed.answered_by) == ("answered", "@bob")
    [reply] = sent(entry)
    assert reply["answer"] == {"action": "approve"}
    final = texts(slack_api.message(channel, ts)["blocks"])
    assert ":white_check_mark: *Approved* by <@U0BOB> at <!date^" in final
    assert "*2 of 2 approvals, approved by @bob*" in final
    assert "1 of 2" not in final
    assert buttons(slack_api.message(channel, ts)["blocks"]) == []
