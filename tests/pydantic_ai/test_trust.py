"""Answers a host can trust, on a real Pydantic AI agent: signed replies, re-proposed calls.

The consumer is the one the message formats describe: copy ``reply_with``, set ``answer``, send.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.host import AnswerTrust
from agent_wait.pydantic_ai import InMemoryHistory, ahandle_message, handle_message, wait

NEW, OLD = "n" * 40, "o" * 40
THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}
APPROVE = {"action": "approve"}


class Proposer:
    """A real agent whose offline model proposes ``issue_refund`` under one fixed call id (as
    some providers do), with whatever ``amount`` the test sets."""

    def __init__(self) -> None:
        self.amount = 41000
        self.refunds: list[int] = []
        self.agent = Agent(FunctionModel(self._respond), output_type=[str, DeferredToolRequests])
        refunds = self.refunds

        @self.agent.tool
        @wait()
        def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
            refunds.append(amount)
            return f"refunded {amount} on {order_id}"

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            args = {"order_id": "order-4471", "amount": self.amount}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="call_0")])
        return ModelResponse(parts=[TextPart("done")])


def reply(envelope: WaitEnvelope, value: Any) -> dict[str, Any]:
    return {**envelope.model_dump(mode="json")["reply_with"], "answer": value}


def test_a_copying_consumer_resumes_and_bad_tokens_run_nothing() -> None:
    proposer, history, inbox = Proposer(), InMemoryHistory(), MemoryAnnounce()
    trust = AnswerTrust([NEW, OLD])

    def handle(message: Any, trust: AnswerTrust = trust) -> Outcome:
        return handle_message(proposer.agent, message, inbox, history=history, trust=trust).outcome

    assert handle(START) is Outcome.STARTED
    good = reply(inbox.envelopes[-1], APPROVE)
    assert good["question_id"] == "call_0"
    assert handle({k: v for k, v in good.items() if k != "token"}) is Outcome.UNAUTHORIZED
    assert handle({**good, "thread_id": "order-9999"}) is Outcome.UNAUTHORIZED
    assert handle(good, AnswerTrust([OLD])) is Outcome.UNAUTHORIZED  # its key retired
    assert proposer.refunds == []
    assert handle(good) is Outcome.RESUMED
    assert proposer.refunds == [41000]


def test_a_call_proposed_again_with_other_arguments_refuses_the_old_approval() -> None:
    proposer, inbox = Proposer(), MemoryAnnounce()
    trust = AnswerTrust([NEW])
    lost = InMemoryHistory()
    assert handle_message(proposer.agent, START, inbox, history=lost, trust=trust).ran
    approval = reply(inbox.envelopes[-1], APPROVE)
    # The stored history is lost (restored from an older backup): the redelivered start runs
    # the model again, which proposes the same call id with another amount.
    history = InMemoryHistory()
    proposer.amount = 9_999_999
    assert handle_message(proposer.agent, START, inbox, history=history, trust=trust).ran
    handled = handle_message(proposer.agent, approval, inbox, history=history, trust=trust)
    assert handled.outcome is Outcome.STALE_APPROVAL
    assert proposer.refunds == []
    # The question as it is now went out again; approving that one runs the new call.
    assert inbox.envelopes[-1].question == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 9_999_999},
    }
    fresh = reply(inbox.envelopes[-1], APPROVE)
    resumed = handle_message(proposer.agent, fresh, inbox, history=history, trust=trust)
    assert resumed.outcome is Outcome.RESUMED
    assert proposer.refunds == [9_999_999]


async def test_the_async_host_enforces_the_same() -> None:
    proposer, history, inbox = Proposer(), InMemoryHistory(), MemoryAnnounce()
    trust = AnswerTrust([NEW], strict_actions=True)
    assert (await ahandle_message(proposer.agent, START, inbox, history=history, trust=trust)).ran
    good = reply(inbox.envelopes[-1], APPROVE)
    forged = {**good, "token": good["token"][:-1] + ("A" if good["token"][-1] != "A" else "B")}
    maybe = reply(inbox.envelopes[-1], {"action": "maybe"})
    for bad, outcome in ((forged, Outcome.UNAUTHORIZED), (maybe, Outcome.INVALID_ANSWER)):
        handled = await ahandle_message(proposer.agent, bad, inbox, history=history, trust=trust)
        assert handled.outcome is outcome
    assert proposer.refunds == []
    handled = await ahandle_message(proposer.agent, good, inbox, history=history, trust=trust)
    assert handled.outcome is Outcome.RESUMED
    assert proposer.refunds == [41000]


class TwoCalls(Proposer):
    """The victim's run: the same refund under ``call_0``, and a harmless note under ``call_1``
    that the person holding its token may answer."""

    def __init__(self) -> None:
        super().__init__()
        notes = self.notes = list[str]()

        @self.agent.tool
        @wait()
        def add_note(ctx: RunContext[Any], text: str) -> str:
            notes.append(text)
            return "noted"

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = super()._respond(messages, info)
        if isinstance(first.parts[0], ToolCallPart):
            note = ToolCallPart("add_note", {"text": "call back"}, tool_call_id="call_1")
            return ModelResponse(parts=[*first.parts, note])
        return first


def test_a_more_answers_item_naming_another_thread_is_refused_before_its_token_is_checked() -> None:
    trust = AnswerTrust([NEW])
    victim, victim_history, victim_inbox = TwoCalls(), InMemoryHistory(), MemoryAnnounce()
    attacker, attacker_history, attacker_inbox = Proposer(), InMemoryHistory(), MemoryAnnounce()
    assert handle_message(
        victim.agent, START, victim_inbox, history=victim_history, trust=trust
    ).ran
    other = {"thread_id": "mine", "input": "refund order-4471"}
    assert handle_message(
        attacker.agent, other, attacker_inbox, history=attacker_history, trust=trust
    ).ran
    by_id = {e.question_id: e for e in victim_inbox.envelopes}
    [own] = attacker_inbox.envelopes
    assert (own.question_id, own.question) == ("call_0", by_id["call_0"].question)
    # The note's token is the victim thread's; the refund's comes from the attacker's thread,
    # which asked the same call under the same id.
    forged = {
        **reply(by_id["call_1"], APPROVE),
        "more_answers": [{**reply(own, APPROVE), "thread_id": "mine"}],
    }
    with pytest.raises(
        ValidationError,
        match=r"more_answers\[0\]\.thread_id: 'mine' is not the message's thread_id "
        r"'order-4471'",
    ):
        handle_message(victim.agent, forged, victim_inbox, history=victim_history, trust=trust)
    assert (victim.refunds, victim.notes) == ([], [])
    # Both questions still take the victim thread's own answers, in one message.
    both = {
        **reply(by_id["call_0"], APPROVE),
        "more_answers": [
            {k: v for k, v in reply(by_id["call_1"], APPROVE).items() if k != "thread_id"}
        ],
    }
    handled = handle_message(victim.agent, both, victim_inbox, history=victim_history, trust=trust)
    assert handled.outcome is Outcome.RESUMED
    assert (victim.refunds, victim.notes) == ([41000], ["call back"])
