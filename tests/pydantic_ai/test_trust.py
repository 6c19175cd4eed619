"""Answers a host can trust, on a real Pydantic AI agent: signed replies, re-proposed calls.

The consumer is the one the message formats describe: copy ``reply_with``, set ``answer``, send.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.core.host import AnswerTrust
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
