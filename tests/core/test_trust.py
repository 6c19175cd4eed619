"""Answers a host can trust, on the core state machine: signed replies, expiry, strict actions.

Every consumer here is written from the message formats only: it copies ``reply_with``, sets
``answer`` and sends it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import agent_wait.host as core_host
from agent_wait.core import (
    Answer,
    MemoryAnnounce,
    Outcome,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitEnvelope,
    WaitPolicy,
    publish,
)
from agent_wait.host import AnswerTrust, Handled, Waiting, answer, answer_many, resend
from tests.core.test_host import AsyncLedger, Ledger, Thread

NEW = "n" * 40
OLD = "o" * 40
T0 = datetime(2026, 9, 14, 9, 0, tzinfo=UTC)


class Proposals(Ledger):
    """A ledger whose questions carry arguments the test can change (the model proposing again)
    and a policy with a timeout."""

    def __init__(self) -> None:
        super().__init__(asks=2)
        self.args: dict[str, Any] = {"amount": 100}

    def waiting(self, thread: Thread) -> Waiting:
        return Waiting([self._q(i) for i in thread.pending], dict(thread.held))

    def questions_in(self, result: Any) -> list[Question]:
        return [self._q(i) for i in result.pending]

    def _q(self, question_id: str) -> Question:
        return Question(
            question_id=question_id,
            question={"function": "refund", "args": dict(self.args)},
            policy=WaitPolicy(
                timeout=timedelta(hours=1), default={"action": "reject"}, answer_ttl="PT15M"
            ),
            source={"function": "refund"},
        )


class Host:
    def __init__(self, trust: AnswerTrust, *, now: datetime = T0) -> None:
        self.ledger, self.inbox, self.trust, self.now = Proposals(), MemoryAnnounce(), trust, now

    def handle(self, message: Any, trust: AnswerTrust | None = None) -> Handled:
        return core_host.handle_message(
            self.ledger,
            message,
            self.inbox,
            trust=trust or self.trust,
            clock=lambda: self.now,
        )

    def last(self) -> WaitEnvelope:
        return self.inbox.envelopes[-1]


def consumer_reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    """What a consumer written from the message formats sends."""
    as_json = envelope.model_dump(mode="json")
    return {**as_json["reply_with"], "answer": answer}


APPROVE = {"action": "approve"}


def parked(trust: AnswerTrust) -> Host:
    host = Host(trust)
    assert host.handle({"thread_id": "t", "input": "go"}).outcome is Outcome.STARTED
    return host


def test_a_copying_consumer_works_unchanged_with_signing_on() -> None:
    host = parked(AnswerTrust([NEW]))
    reply_with = host.last().model_dump(mode="json")["reply_with"]
    assert sorted(reply_with) == ["answer", "expires_at", "question_id", "thread_id", "token"]
    assert reply_with["token"].startswith("v1.")
    assert NEW.encode() not in host.last().to_json()
    handled = host.handle(consumer_reply(host.last(), APPROVE))
    assert handled.outcome is Outcome.RESUMED
    assert host.ledger.threads["t"].answers == [("t-q1", APPROVE)]
    # The next question is signed too, and its token answers it.
    assert host.handle(consumer_reply(host.last(), APPROVE)).outcome is Outcome.RESUMED


def test_without_trust_reply_with_is_unchanged() -> None:
    host = parked(AnswerTrust())
    assert host.last().model_dump(mode="json")["reply_with"] == {
        "thread_id": "t",
        "question_id": "t-q1",
        "answer": None,
    }
    assert host.handle({"thread_id": "t", "question_id": "t-q1", "answer": APPROVE}).ran


def _tampered(reply: dict[str, Any], **change: Any) -> dict[str, Any]:
    return {k: v for k, v in {**reply, **change}.items() if v is not None}


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"token": None}, id="missing"),
        pytest.param({"token": 42}, id="not-a-string"),
        pytest.param({"token": "v1.abc"}, id="malformed"),
        pytest.param({"expires_at": "2099-01-01T00:00:00Z"}, id="expiry-moved"),
    ],
)
def test_a_missing_or_altered_token_is_unauthorized_and_the_question_stays_answerable(
    change: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    host = parked(AnswerTrust([NEW]))
    good = consumer_reply(host.last(), APPROVE)
    with caplog.at_level(logging.INFO, logger="agent_wait.host"):
        handled = host.handle(_tampered(good, **change))
    assert handled.outcome is Outcome.UNAUTHORIZED
    assert not handled.ran
    assert handled.report.envelopes == ()
    assert host.ledger.runs == ["start t"]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "unauthorized" in logged
    assert NEW not in logged
    assert "approve" not in logged
    assert host.handle(good).outcome is Outcome.RESUMED


def test_a_forged_mac_is_unauthorized() -> None:
    host = parked(AnswerTrust([NEW]))
    good = consumer_reply(host.last(), APPROVE)
    version, kid, print_, mac = good["token"].split(".")
    forged = f"{version}.{kid}.{print_}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
    assert host.handle({**good, "token": forged}).outcome is Outcome.UNAUTHORIZED
    # A token signed with a secret the host does not hold, under the host's own key id.
    other = parked(AnswerTrust(["x" * 40]))
    foreign = consumer_reply(other.last(), APPROVE)["token"].split(".")
    assert host.handle({**good, "token": ".".join([version, kid, *foreign[2:]])}).outcome is (
        Outcome.UNAUTHORIZED
    )
    assert host.handle(good).outcome is Outcome.RESUMED


def test_a_token_for_another_question_or_thread_is_unauthorized() -> None:
    host = parked(AnswerTrust([NEW]))
    first = consumer_reply(host.last(), APPROVE)
    assert host.handle(first).outcome is Outcome.RESUMED
    second = consumer_reply(host.last(), APPROVE)
    wrong_question = {**second, "token": first["token"], "expires_at": first["expires_at"]}
    assert host.handle(wrong_question).outcome is Outcome.UNAUTHORIZED
    assert host.handle({"thread_id": "u", "input": "go"}).outcome is Outcome.STARTED
    other_thread = consumer_reply(host.last(), APPROVE)
    assert other_thread["question_id"] == "u-q1"
    wrong_thread = {**other_thread, "thread_id": "t", "question_id": "t-q2"}
    assert host.handle(wrong_thread).outcome is Outcome.UNAUTHORIZED
    assert host.ledger.threads["t"].answers == [("t-q1", APPROVE)]
    assert host.handle(second).outcome is Outcome.RESUMED


def test_rotation_accepts_the_old_key_while_listed_second_and_refuses_it_once_retired() -> None:
    host = parked(AnswerTrust([OLD]))
    signed_with_old = consumer_reply(host.last(), APPROVE)
    rotated = AnswerTrust([NEW, OLD])
    # A redelivered start republishes under the new key: the first secret signs.
    republished = host.handle({"thread_id": "t", "input": "go"}, trust=rotated)
    assert republished.outcome is Outcome.REPUBLISHED
    signed_with_new = consumer_reply(host.last(), APPROVE)
    assert signed_with_new["token"].split(".")[1] != signed_with_old["token"].split(".")[1]
    retired = AnswerTrust([NEW])
    assert host.handle(signed_with_old, trust=retired).outcome is Outcome.UNAUTHORIZED
    assert host.handle(signed_with_old, trust=rotated).outcome is Outcome.RESUMED
    # The reply signed with the new key for the same question is now a duplicate.
    assert host.handle(signed_with_new, trust=retired).outcome is Outcome.DUPLICATE


def test_a_call_proposed_again_with_other_arguments_refuses_the_old_approval() -> None:
    host = parked(AnswerTrust([NEW]))
    approval = consumer_reply(host.last(), APPROVE)
    host.ledger.args = {"amount": 100_000}  # same question id, other arguments
    handled = host.handle(approval)
    assert handled.outcome is Outcome.STALE_APPROVAL
    assert host.ledger.runs == ["start t"]
    # The question as it is now went out again, and its own reply is accepted.
    assert handled.question_ids == ["t-q1"]
    assert host.last().question == {"function": "refund", "args": {"amount": 100_000}}
    assert host.handle(consumer_reply(host.last(), APPROVE)).outcome is Outcome.RESUMED


def test_late_answers_are_accepted_by_default() -> None:
    host = parked(AnswerTrust([NEW]))
    host.now = T0 + timedelta(hours=2)
    assert host.handle(consumer_reply(host.last(), APPROVE)).outcome is Outcome.RESUMED


def test_late_answers_refused_by_policy_leave_the_question_answerable() -> None:
    host = parked(AnswerTrust(expired="refuse"))
    reply = consumer_reply(host.last(), APPROVE)
    assert reply["expires_at"] == "2026-09-14T10:00:00Z"
    host.now = T0 + timedelta(hours=1)
    handled = host.handle(reply)
    assert handled.outcome is Outcome.EXPIRED
    assert "expired at 2026-09-14T10:00:00Z" in (handled.detail or "")
    assert host.ledger.runs == ["start t"]
    host.now = T0 + timedelta(minutes=59)
    assert host.handle(reply).outcome is Outcome.RESUMED


def test_an_answer_past_its_own_valid_until_is_refused_by_policy() -> None:
    host = parked(AnswerTrust([NEW], expired="refuse"))
    reply = {**consumer_reply(host.last(), APPROVE), "valid_until": "2026-09-14T08:59:00Z"}
    assert host.handle(reply).outcome is Outcome.EXPIRED
    assert host.handle({**reply, "valid_until": "2026-09-14T09:01:00Z"}).outcome is (
        Outcome.RESUMED
    )


def test_late_answers_become_the_question_default_by_policy() -> None:
    host = parked(AnswerTrust(expired="default", strict_actions=True))
    host.now = T0 + timedelta(hours=3)
    handled = host.handle(consumer_reply(host.last(), APPROVE))
    assert handled.outcome is Outcome.RESUMED
    assert "resumed with its default" in (handled.detail or "")
    assert host.ledger.threads["t"].answers == [("t-q1", {"action": "reject"})]


def test_an_answer_past_its_own_valid_until_becomes_the_default_by_policy() -> None:
    host = parked(AnswerTrust([NEW], expired="default"))
    reply = {**consumer_reply(host.last(), APPROVE), "valid_until": "2026-09-14T08:59:00Z"}
    handled = host.handle(reply)
    assert handled.outcome is Outcome.RESUMED
    assert "valid_until 2026-09-14T08:59:00Z has passed" in (handled.detail or "")
    assert host.ledger.threads["t"].answers == [("t-q1", {"action": "reject"})]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"action": "maybe"}, "'maybe' is not one of allowed_actions ['approve', 'reject']"),
        ({"reason": "fine"}, "names no action"),
        ("approve", "names no action"),
        ({"decisions": [{"type": "approve"}, {"type": "edit"}]}, "'edit' is not one of"),
    ],
)
def test_strict_actions_refuse_an_answer_outside_allowed_actions(answer: Any, problem: str) -> None:
    host = parked(AnswerTrust(strict_actions=True))
    handled = host.handle(consumer_reply(host.last(), answer))
    assert handled.outcome is Outcome.INVALID_ANSWER
    assert problem in (handled.detail or "")
    assert host.ledger.runs == ["start t"]
    assert host.handle(consumer_reply(host.last(), {"action": "reject"})).ran


class SchemaProposals(Proposals):
    """Questions that declare an answer schema (as a plugin host's foreign questions may)."""

    def _q(self, question_id: str) -> Question:
        schema = {
            "type": "object",
            "properties": {
                "action": {"enum": ["approve", "reject"]},
                "amount": {"type": "integer"},
            },
            "required": ["action"],
        }
        return super()._q(question_id).model_copy(update={"answer_schema": schema})


def test_strict_checking_refuses_an_answer_outside_the_declared_answer_schema() -> None:
    host = Host(AnswerTrust(strict_actions=True))
    host.ledger = SchemaProposals()
    assert host.handle({"thread_id": "t", "input": "go"}).outcome is Outcome.STARTED
    wrong = consumer_reply(host.last(), {"action": "approve", "amount": "a lot"})
    handled = host.handle(wrong)
    assert handled.outcome is Outcome.INVALID_ANSWER
    assert "answer.amount: 'a lot' is not of type 'integer'" in (handled.detail or "")
    assert host.ledger.runs == ["start t"]
    # The question stays answerable, and without strict checking the schema is the asker's advice.
    assert host.handle(consumer_reply(host.last(), {"action": "approve", "amount": 5})).ran
    assert host.handle(
        consumer_reply(host.last(), {"action": "approve", "amount": "x"}), AnswerTrust()
    ).ran


def test_strict_actions_are_off_by_default() -> None:
    host = parked(AnswerTrust())
    assert host.handle(consumer_reply(host.last(), {"action": "maybe"})).ran


def test_the_environment_turns_signing_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", f" {NEW} , {OLD} ")
    monkeypatch.setenv("AGENT_WAIT_ANSWER_EXPIRED", "refuse")
    ledger, inbox = Proposals(), MemoryAnnounce()
    core_host.handle_message(ledger, {"thread_id": "t", "input": "go"}, inbox)
    reply = consumer_reply(inbox.envelopes[-1], APPROVE)
    assert reply["token"].split(".")[1] == consumer_reply_kid(NEW)
    missing = {k: v for k, v in reply.items() if k != "token"}
    assert core_host.handle_message(ledger, missing, inbox).outcome is Outcome.UNAUTHORIZED
    assert core_host.handle_message(ledger, reply, inbox).outcome is Outcome.RESUMED


def test_publish_follows_every_change_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The trust options are cached between publishes: each change must still be seen.
    question = Question(question_id="q1", question={"kind": "approve"})

    def token() -> str | None:
        envelope = publish([question], "t", MemoryAnnounce()).envelopes[0]
        return (envelope.reply_with.model_extra or {}).get("token")

    monkeypatch.delenv("AGENT_WAIT_ANSWER_SECRETS", raising=False)
    assert token() is None
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", NEW)
    first = token()
    assert first is not None
    assert first.split(".")[1] == consumer_reply_kid(NEW)
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", OLD)
    second = token()
    assert second is not None
    assert second.split(".")[1] == consumer_reply_kid(OLD)
    monkeypatch.delenv("AGENT_WAIT_ANSWER_SECRETS")
    assert token() is None


def consumer_reply_kid(secret: str) -> str:
    host = parked(AnswerTrust([secret]))
    return consumer_reply(host.last(), None)["token"].split(".")[1]


def test_async_runner_enforces_the_same() -> None:
    ledger, inbox, trust = Proposals(), MemoryAnnounce(), AnswerTrust([NEW])

    async def run() -> list[Outcome]:
        host = AsyncLedger(ledger)
        outcomes = []
        for message in (
            {"thread_id": "t", "input": "go"},
            {"thread_id": "t", "question_id": "t-q1", "answer": APPROVE},
            lambda: consumer_reply(inbox.envelopes[-1], APPROVE),
        ):
            body = message() if callable(message) else message
            handled = await core_host.ahandle_message(host, body, inbox, trust=trust)
            outcomes.append(handled.outcome)
        return outcomes

    assert asyncio.run(run()) == [Outcome.STARTED, Outcome.UNAUTHORIZED, Outcome.RESUMED]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"secrets": ["short"]}, "secrets[0]: must be 32 characters or more, got 5"),
        ({"secrets": NEW}, "secrets: expected a list of secrets, got one string"),
        ({"secrets": [NEW, NEW]}, "secrets: the same secret is listed twice"),
        ({"expired": "later"}, "expired: expected one of ['accept', 'refuse', 'default']"),
    ],
)
def test_bad_options_are_named_without_the_secret(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises((ValueError, TypeError)) as raised:
        AnswerTrust(**kwargs)
    assert error in str(raised.value)
    assert NEW not in str(raised.value)


def test_bad_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"AGENT_WAIT_ANSWER_SECRETS: secrets\[0\]: must be 32"):
        AnswerTrust.from_env({"AGENT_WAIT_ANSWER_SECRETS": "tooshort"})
    with pytest.raises(ValueError, match="AGENT_WAIT_ANSWER_STRICT_ACTIONS: expected true"):
        AnswerTrust.from_env({"AGENT_WAIT_ANSWER_STRICT_ACTIONS": "yes please"})


def test_answer_keeps_the_token_as_an_extra_field() -> None:
    answer = Answer.model_validate(
        {"thread_id": "t", "question_id": "q", "answer": 1, "token": "x"}
    )
    assert answer.model_extra == {"token": "x"}


def test_agent_wait_answer_carries_the_token_and_its_answer_ttl_as_valid_until(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ledger, trust = Proposals(), AnswerTrust([NEW], expired="refuse")

    def handle(message: Any, now: datetime) -> Handled:
        return core_host.handle_message(
            ledger, message, SqliteAnnounce(inbox), trust=trust, clock=lambda: now
        )

    assert handle({"thread_id": "t", "input": "go"}, T0).outcome is Outcome.STARTED
    answered_at = T0 + timedelta(minutes=5)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        result = answer("t-q1", "approve", by="alice", store=store, entry=entry, at=answered_at)
        assert result.message["valid_until"] == "2026-09-14T09:20:00Z"
        assert result.message["token"].startswith("v1.")
        [received] = entry.receive(1)
        # Fifteen minutes after it was given, the answer is too old for this host.
        too_old = handle(received.message, T0 + timedelta(minutes=21))
        assert too_old.outcome is Outcome.EXPIRED
        assert "valid_until 2026-09-14T09:20:00Z has passed" in (too_old.detail or "")
        assert entry.ack(received)
        # A resend carries the same valid_until: the recorded answer does not get younger; and
        # the same answered_by and identity_source, which the store keeps beside it.
        assert "identity_source" in result.message
        assert resend("t-q1", store=store, entry=entry) == result.message
        [again] = entry.receive(1)
        assert handle(again.message, T0 + timedelta(minutes=19)).outcome is Outcome.RESUMED
    assert ledger.threads["t"].answers == [("t-q1", APPROVE)]


def test_a_message_answering_several_questions_is_checked_answer_by_answer(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ledger, trust = Proposals(), AnswerTrust([NEW])
    ledger.holds_answers = True  # both questions are asked at once and resumed together

    def handle(message: Any) -> Handled:
        return core_host.handle_message(
            ledger, message, SqliteAnnounce(inbox), trust=trust, clock=lambda: T0
        )

    assert handle({"thread_id": "t", "input": "go"}).question_ids == ["t-q1", "t-q2"]
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        both = {"t-q1": APPROVE, "t-q2": {"action": "reject"}}
        sent = answer_many(both, by="alice", store=store, entry=entry, at=T0).message
    [second] = sent["more_answers"]
    assert second["token"] != sent["token"]
    unsigned = {**sent, "more_answers": [{k: v for k, v in second.items() if k != "token"}]}
    swapped = {**sent, "more_answers": [{**second, "token": sent["token"]}]}
    for bad in (unsigned, swapped):
        assert handle(bad).outcome is Outcome.UNAUTHORIZED
    assert ledger.runs == ["start t"]
    assert handle(sent).outcome is Outcome.RESUMED
    assert ledger.threads["t"].answers == list(both.items())


def test_an_answer_without_its_deadline_is_accepted_with_a_warning_when_unsigned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Unsigned, a deadline in the answer could be forged anyway; the host says it could not check.
    host = parked(AnswerTrust(expired="refuse"))
    host.now = T0 + timedelta(hours=2)
    bare = {"thread_id": "t", "question_id": "t-q1", "answer": APPROVE}
    with caplog.at_level(logging.WARNING, logger="agent_wait.host"):
        assert host.handle(bare).outcome is Outcome.RESUMED
    assert "carries no expires_at" in caplog.text


def test_a_signed_answer_cannot_drop_its_deadline() -> None:
    host = parked(AnswerTrust([NEW], expired="refuse"))
    host.now = T0 + timedelta(hours=2)
    reply = consumer_reply(host.last(), APPROVE)
    undated = {k: v for k, v in reply.items() if k != "expires_at"}
    assert host.handle(undated).outcome is Outcome.UNAUTHORIZED
    assert host.handle(reply).outcome is Outcome.EXPIRED


def test_signed_envelopes_and_their_replies_match_the_committed_schemas() -> None:
    from tests.core.test_schema import validator

    host = parked(AnswerTrust([NEW]))
    envelope = host.last().model_dump(mode="json")
    assert list(validator("envelope").iter_errors(envelope)) == []
    reply = consumer_reply(host.last(), APPROVE)
    assert list(validator("answer").iter_errors(reply)) == []
    assert list(validator("answer").iter_errors({**reply, "token": "not a token"}))


def test_secrets_env_names_the_variable_holding_the_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REFUND_ANSWER_SECRETS", f"{NEW},{OLD}")
    assert AnswerTrust(secrets_env="REFUND_ANSWER_SECRETS").secrets == (NEW, OLD)
    monkeypatch.delenv("REFUND_ANSWER_SECRETS")
    with pytest.raises(ValueError, match="secrets_env: the environment variable REFUND_ANSWER"):
        AnswerTrust(secrets_env="REFUND_ANSWER_SECRETS")
    with pytest.raises(ValueError, match="give secrets or secrets_env, not both"):
        AnswerTrust([NEW], secrets_env="REFUND_ANSWER_SECRETS")


def test_the_repr_shows_no_secret() -> None:
    trust = AnswerTrust([NEW], expired="refuse")
    assert NEW not in repr(trust)
    assert "expired='refuse'" in repr(trust)
