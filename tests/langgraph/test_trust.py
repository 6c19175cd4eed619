"""Answers a host can trust, on a real LangGraph graph: signed replies, expiry, strict actions.

The consumer is the one the message formats describe: copy ``reply_with``, set ``answer``, send.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.host import AnswerTrust
from agent_wait.langgraph import handle_message, stream_message
from tests.langgraph.conftest import NOW, answer
from tests.langgraph.test_host import START_MESSAGE, Counts, refund_graph

NEW, OLD = "n" * 40, "o" * 40
APPROVE = {"action": "approve"}
CONFIG = {"configurable": {"thread_id": START_MESSAGE["thread_id"]}}


def parked(
    trust: AnswerTrust, policy: WaitPolicy | None = None
) -> tuple[Any, Counts, MemoryAnnounce]:
    counts, inbox = Counts(), MemoryAnnounce()
    graph = refund_graph(counts, policy)
    started = handle_message(graph, START_MESSAGE, inbox, trust=trust, clock=lambda: NOW)
    assert started.outcome is Outcome.STARTED
    return graph, counts, inbox


def test_a_copying_consumer_resumes_with_signing_on() -> None:
    trust = AnswerTrust([NEW])
    graph, counts, inbox = parked(trust)
    assert "token" in inbox.envelopes[0].model_dump(mode="json")["reply_with"]
    handled = handle_message(graph, answer(inbox.envelopes[0], APPROVE), inbox, trust=trust)
    assert handled.outcome is Outcome.RESUMED
    assert counts.body == 1
    assert handled.result["result"] == "refunded 41000 on order-4471"


def test_bad_tokens_run_nothing_and_the_question_stays_answerable() -> None:
    trust = AnswerTrust([NEW])
    graph, counts, inbox = parked(trust)
    good = answer(inbox.envelopes[0], APPROVE)
    kid = good["token"].split(".")[1]
    other_graph, _, other_inbox = parked(AnswerTrust([OLD]))
    retired = answer(other_inbox.envelopes[0], APPROVE)
    for bad in (
        {k: v for k, v in good.items() if k != "token"},
        {**good, "token": good["token"][:-2] + ("AA" if good["token"][-2:] != "AA" else "BB")},
        {**good, "token": retired["token"]},  # another key: retired, or never this host's
        {**good, "question_id": "0" * 32},
        {**good, "thread_id": "order-9999"},
    ):
        assert handle_message(graph, bad, inbox, trust=trust).outcome is Outcome.UNAUTHORIZED
    assert counts.body == 0
    assert graph.get_state(CONFIG).interrupts[0].id == good["question_id"]
    assert kid not in retired["token"]
    # Rotation: the old key, listed second, still verifies what it signed.
    rotated = AnswerTrust([NEW, OLD])
    assert handle_message(other_graph, retired, other_inbox, trust=rotated).ran
    assert handle_message(graph, good, inbox, trust=rotated).ran
    assert counts.body == 1


def test_a_changed_checkpoint_refuses_the_old_approval() -> None:
    # LangGraph derives the interrupt id from the task, so a changed checkpoint asks under a new
    # id: the old approval names a question the thread no longer waits on.
    trust = AnswerTrust([NEW])
    graph, counts, inbox = parked(trust)
    approval = answer(inbox.envelopes[0], APPROVE)
    graph.update_state(CONFIG, {"amount": 999_999}, as_node="__start__")
    asked_again = handle_message(graph, START_MESSAGE, inbox, trust=trust)
    assert asked_again.question_ids != [approval["question_id"]]
    handled = handle_message(graph, approval, inbox, trust=trust)
    assert handled.outcome is Outcome.DUPLICATE
    assert counts.body == 0
    assert handle_message(graph, answer(inbox.envelopes[-1], APPROVE), inbox, trust=trust).ran
    assert counts.body == 1


def test_expiry_and_strict_actions() -> None:
    policy = WaitPolicy(timeout=timedelta(hours=1), default={"action": "reject"})
    refuse = AnswerTrust(expired="refuse", strict_actions=True)
    graph, counts, inbox = parked(refuse, policy)
    reply = answer(inbox.envelopes[0], APPROVE)
    assert reply["expires_at"] == "2026-09-11T10:00:00Z"
    late = NOW + timedelta(hours=2)
    assert handle_message(graph, reply, inbox, trust=refuse, clock=lambda: late).outcome is (
        Outcome.EXPIRED
    )
    maybe = answer(inbox.envelopes[0], {"action": "maybe"})
    assert handle_message(graph, maybe, inbox, trust=refuse, clock=lambda: NOW).outcome is (
        Outcome.INVALID_ANSWER
    )
    assert counts.body == 0
    default = AnswerTrust(expired="default")
    handled = handle_message(graph, reply, inbox, trust=default, clock=lambda: late)
    assert handled.outcome is Outcome.RESUMED
    # The default rejects: the @wait body did not run, the model sees the rejection.
    assert counts.body == 0
    assert handled.result["result"] == {"action": "reject"}


def test_the_streaming_host_enforces_the_same() -> None:
    trust = AnswerTrust([NEW], strict_actions=True)
    counts, inbox = Counts(), MemoryAnnounce()
    graph = refund_graph(counts)
    started = stream_message(graph, START_MESSAGE, inbox, stream_mode="updates", trust=trust)
    assert [next(iter(c)) for c in started] == ["__interrupt__"]
    good = answer(inbox.envelopes[0], APPROVE)
    unsigned = {k: v for k, v in good.items() if k != "token"}
    maybe = answer(inbox.envelopes[0], {"action": "maybe"})
    for bad, outcome in ((unsigned, Outcome.UNAUTHORIZED), (maybe, Outcome.INVALID_ANSWER)):
        refused = stream_message(graph, bad, inbox, stream_mode="values", trust=trust)
        assert list(refused) == []
        assert refused.handled.outcome is outcome
    assert counts.body == 0
    resumed = stream_message(graph, good, inbox, stream_mode="values", trust=trust)
    assert list(resumed)[-1]["result"] == "refunded 41000 on order-4471"
    assert resumed.handled.outcome is Outcome.RESUMED
    assert counts.body == 1
