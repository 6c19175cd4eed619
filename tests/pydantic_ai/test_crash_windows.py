"""A worker that dies inside or after an approved @wait tool: the body still runs at most once.

Pydantic AI saves nothing of a run until it ends, and handle_message stores the history only
then: a worker killed anywhere in a resume leaves the thread parked on the question it was
answering, so the redelivered answer resumes the whole run again, tool included. The
execution ledger is what keeps the approved body to one run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import MemoryAnnounce, Outcome, SqliteLedger, WaitPolicy
from agent_wait.pydantic_ai import (
    InMemoryHistory,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
    wait,
)

THREAD = "order-4471"
START_MESSAGE = {"thread_id": THREAD, "input": "refund order-4471"}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


@dataclass
class Refunds:
    """An agent whose model calls ``issue_refund`` once, then reports what the tool returned.

    ``kill_in`` names where the worker dies the next time it gets there: ``prompt`` (the model's
    first turn), ``body`` (the refund happened, the body did not return), ``report`` (the
    model's turn after the tool returned).
    """

    agent: Agent[None, Any] = field(init=False)
    effects: list[str] = field(default_factory=list[str])
    kill_in: set[str] = field(default_factory=set[str])

    def die_if_asked(self, where: str) -> None:
        if where in self.kill_in:
            self.kill_in.discard(where)
            raise WorkerKilled(where)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            self.die_if_asked("prompt")
            args = {"order_id": "order-4471", "amount": 41000}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="call-1")])
        self.die_if_asked("report")
        returned = [p.content for p in last.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(json.dumps(returned))])


def refunds(ledger: SqliteLedger, *, asynchronous: bool = False, once: bool = True) -> Refunds:
    made = Refunds()
    agent = Agent(FunctionModel(made.respond), output_type=[str, DeferredToolRequests])
    policy = WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"})

    def refund(order_id: str, amount: int) -> str:
        made.effects.append(f"refund {order_id} {amount}")  # the effect happens first...
        made.die_if_asked("body")  # ...then the worker dies before the body returns
        return f"refunded {amount}"

    if asynchronous:

        @agent.tool
        @wait(policy, once=once, ledger=ledger)
        async def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
            return refund(order_id, amount)

    else:

        @agent.tool
        @wait(policy, once=once, ledger=ledger)
        def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
            return refund(order_id, amount)

    made.agent = agent
    return made


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "executions.sqlite3") as made:
        yield made


def reply(question_id: str, answer: Any) -> dict[str, Any]:
    return {"thread_id": THREAD, "question_id": question_id, "answer": answer}


APPROVE = {"action": "approve"}


def test_a_body_that_returned_before_the_crash_is_not_run_again(ledger: SqliteLedger) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("report")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert app.effects == ["refund order-4471 41000"]

    # Nothing of the killed run was saved: the answer's redelivery resumes the whole run.
    again = handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result is not None
    assert json.loads(again.result.output) == ["refunded 41000"]  # the recorded result
    assert app.effects == ["refund order-4471 41000"]


def test_a_start_message_redelivered_after_a_crash_runs_from_the_unchanged_history(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    app.kill_in.add("prompt")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, START_MESSAGE, history=history)
    # Nothing was saved (no half-run to continue): the redelivery runs the prompt once.
    assert history.load(THREAD) == []

    again = handle_message(app.agent, START_MESSAGE, history=history)
    assert again.outcome is Outcome.STARTED, again.detail
    assert again.question_ids == ["call-1"]
    [prompt] = [
        part
        for message in history.load(THREAD)
        for part in message.parts
        if part.part_kind == "user-prompt"
    ]
    assert prompt.content == "refund order-4471"


def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger,
) -> None:
    app, history, announce = refunds(ledger), InMemoryHistory(), MemoryAnnounce()
    [question_id] = handle_message(app.agent, START_MESSAGE, announce, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert app.effects == ["refund order-4471 41000"]

    # The redelivery runs nothing: whether the refund happened is a person's to say.
    again = handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 41000"]
    [doubt] = again.report.envelopes
    # The same tool call is deferred again, under a question id of its own.
    assert doubt.question_id != question_id
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["text"].startswith(
        "did `issue_refund(order_id='order-4471', amount=41000)` happen?"
    )
    assert doubt.question["args"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
        "attempt": 0,
    }
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.tags == {"approver_group": "finance"}
    assert doubt.context is not None
    assert doubt.context.tool_call_id == "call-1"
    # Another copy of the approval asks nothing new and runs nothing.
    duplicate = handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert duplicate.outcome is Outcome.DUPLICATE, duplicate.detail
    # Neither yes nor no is refused before anything is saved; the question stays answerable.
    refused = handle_message(
        app.agent, reply(doubt.question_id, APPROVE), announce, history=history
    )
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail
    assert "'yes'" in (refused.detail or "")

    done = handle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), announce, history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 41000"]
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]
    late = handle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), announce, history=history
    )
    assert late.outcome is Outcome.DUPLICATE, late.detail
    assert len(app.effects) == 2


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    [doubt] = handle_message(
        app.agent, reply(question_id, APPROVE), history=history
    ).report.envelopes

    answered = {"action": "yes", "result": "refunded 41000 (confirmed by hand)"}
    done = handle_message(app.agent, reply(doubt.question_id, answered), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 41000 (confirmed by hand)"]
    assert app.effects == ["refund order-4471 41000"]


def test_a_crash_in_the_run_after_no_asks_again_and_never_runs_twice_unasked(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    [first] = handle_message(
        app.agent, reply(question_id, APPROVE), history=history
    ).report.envelopes
    app.kill_in.add("body")  # the run that "no" allows dies inside the body too
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(first.question_id, {"action": "no"}), history=history)
    assert len(app.effects) == 2

    again = handle_message(app.agent, reply(first.question_id, {"action": "no"}), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [second] = again.report.envelopes
    assert second.question["args"]["attempt"] == 1
    assert second.question_id not in (first.question_id, question_id)
    assert len(app.effects) == 2
    done = handle_message(app.agent, reply(second.question_id, {"action": "yes"}), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert len(app.effects) == 2


def test_once_false_keeps_the_framework_semantics(ledger: SqliteLedger) -> None:
    app, history = refunds(ledger, once=False), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    again = handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert len(app.effects) == 2
    assert ledger.records() == []


def test_a_streamed_resume_killed_inside_the_body_asks_on_redelivery(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        list(stream_message(app.agent, reply(question_id, APPROVE), history=history))

    run = stream_message(app.agent, reply(question_id, APPROVE), history=history)
    list(run)
    assert run.handled.outcome is Outcome.RESUMED, run.handled.detail
    [doubt] = run.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert app.effects == ["refund order-4471 41000"]


async def test_async_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger, asynchronous=True), InMemoryHistory()
    started = await ahandle_message(app.agent, START_MESSAGE, history=history)
    [question_id] = started.question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        await ahandle_message(app.agent, reply(question_id, APPROVE), history=history)

    again = await ahandle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question_id != question_id
    assert app.effects == ["refund order-4471 41000"]

    done = await ahandle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]


def test_a_crash_inside_one_of_two_approved_bodies_asks_about_that_one_only(
    ledger: SqliteLedger,
) -> None:
    effects: list[str] = []
    kill_in = {"a"}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            return ModelResponse(
                parts=[
                    ToolCallPart("refund", {"order_id": "b"}, tool_call_id="call-b"),
                    ToolCallPart("refund", {"order_id": "a"}, tool_call_id="call-a"),
                ]
            )
        returned = [p.content for p in last.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(json.dumps(sorted(returned)))])

    agent = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])

    # One at a time, in call order: "b" returns before the worker dies inside "a".
    @agent.tool(sequential=True)
    @wait(ledger=ledger)
    def refund(ctx: RunContext[None], order_id: str) -> str:
        effects.append(order_id)
        if order_id in kill_in:
            kill_in.discard(order_id)
            raise WorkerKilled(order_id)
        return f"refunded {order_id}"

    history = InMemoryHistory()
    first, second = handle_message(agent, START_MESSAGE, history=history).question_ids
    held = handle_message(agent, reply(first, APPROVE), history=history)
    assert held.outcome is Outcome.HELD, held.detail
    with pytest.raises(WorkerKilled):
        handle_message(agent, reply(second, APPROVE), history=history)
    assert effects == ["b", "a"]

    again = handle_message(agent, reply(second, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["args"]["args"] == {"order_id": "a"}
    assert effects == ["b", "a"]  # "b" returned its recorded result

    done = handle_message(agent, reply(doubt.question_id, {"action": "no"}), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded a", "refunded b"]
    assert effects == ["b", "a", "a"]


async def test_async_a_streamed_resume_killed_inside_the_body_asks_on_redelivery(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger, asynchronous=True), InMemoryHistory()
    started = await ahandle_message(app.agent, START_MESSAGE, history=history)
    [question_id] = started.question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        async for _ in astream_message(app.agent, reply(question_id, APPROVE), history=history):
            pass

    run = astream_message(app.agent, reply(question_id, APPROVE), history=history)
    async for _ in run:
        pass
    assert run.handled.outcome is Outcome.RESUMED, run.handled.detail
    [doubt] = run.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert app.effects == ["refund order-4471 41000"]
