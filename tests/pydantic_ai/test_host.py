"""``handle_message``: the whole host, on real agents and real history stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    UserError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    MemoryAnnounce,
    Outcome,
    WaitEnvelope,
    WaitPolicy,
    derive_question_id,
)
from agent_wait.pydantic_ai import (
    HistoryStore,
    InMemoryHistory,
    SqliteHistory,
    ahandle_message,
    handle_message,
    wait,
)
from tests.pydantic_ai.scripted import Script, seen_by_model

THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}
REFUND = ("issue_refund", {"order_id": "order-4471", "amount": 41000})


def answer(question_id: str, value: Any, thread_id: str = THREAD) -> dict[str, Any]:
    return {"thread_id": thread_id, "question_id": question_id, "answer": value}


class Refunds:
    """A real agent with a ``@wait`` refund tool; ``runs`` counts executions of the body."""

    def __init__(self, script: Script | FunctionModel, **wait_options: Any) -> None:
        self.script = script
        self.model = script.model if isinstance(script, Script) else script
        self.runs: list[dict[str, Any]] = []
        self.agent = self.build(**wait_options)

    def build(self, **wait_options: Any) -> Agent[Any, Any]:
        """A fresh Agent instance on the same model, as a new process would build it."""
        agent = Agent(self.model, output_type=[str, DeferredToolRequests])
        runs = self.runs

        @agent.tool
        @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}), **wait_options)
        def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
            runs.append({"order_id": order_id, "amount": amount})
            return f"refunded {amount} on {order_id}"

        return agent


class Broken(BaseAnnounce):
    """A transport that is down."""

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("broker unreachable")


@pytest.fixture(params=["memory", "sqlite"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryStore:
    if request.param == "memory":
        return InMemoryHistory()
    return SqliteHistory(tmp_path / "history.sqlite3")


def test_the_host_loop_with_redelivery_duplicate_stale_late_and_unknown_answers(
    script: Callable[..., Script], inbox: MemoryAnnounce, history: HistoryStore
) -> None:
    refunds = Refunds(script(REFUND))
    agent = refunds.agent

    started = handle_message(agent, START, inbox, history=history)
    assert started.outcome is Outcome.STARTED
    assert started.ran
    assert started.parked
    assert started.question_ids == ["issue_refund-1-0"]
    assert isinstance(started.result.output, DeferredToolRequests)
    assert refunds.runs == []

    # The start message is redelivered: nothing runs, the same question goes out again.
    again = handle_message(agent, START, inbox, history=history)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.result is None
    assert again.question_ids == ["issue_refund-1-0"]
    assert refunds.script.turns == 1
    first, second = inbox.envelopes
    assert first.dedupe_key == second.dedupe_key
    assert first.event_id != second.event_id

    resumed = handle_message(
        agent, answer("issue_refund-1-0", {"action": "approve"}), inbox, history=history
    )
    assert resumed.outcome is Outcome.RESUMED
    assert not resumed.parked
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]
    assert seen_by_model(resumed.result.output)["issue_refund-1-0"]["outcome"] == "success"

    # Duplicate, then a different answer: the first decision stands, nothing runs twice.
    for late in ({"action": "approve"}, {"action": "reject"}):
        handled = handle_message(agent, answer("issue_refund-1-0", late), inbox, history=history)
        assert handled.outcome is Outcome.DUPLICATE
        assert not handled.ran
        assert handled.report.envelopes == ()
        assert "no longer pending" in (handled.detail or "")
    assert len(refunds.runs) == 1

    unknown = handle_message(
        agent, answer("made-up", {"action": "approve"}), inbox, history=history
    )
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert "never asked" in (unknown.detail or "")

    # A second request on the thread parks on a new question; the old answer is now stale.
    handle_message(agent, {"thread_id": THREAD, "input": "again"}, inbox, history=history)
    stale = handle_message(
        agent, answer("issue_refund-1-0", {"action": "approve"}), inbox, history=history
    )
    assert stale.outcome is Outcome.DUPLICATE
    # What is still pending is published again (harmless; consumers deduplicate).
    assert stale.question_ids == ["issue_refund-2-0"]
    assert len(refunds.runs) == 1
    rejected = handle_message(
        agent, answer("issue_refund-2-0", {"action": "reject"}), inbox, history=history
    )
    assert rejected.outcome is Outcome.RESUMED
    assert len(refunds.runs) == 1
    assert seen_by_model(rejected.result.output)["issue_refund-2-0"]["outcome"] == "denied"
    assert [e.question_id for e in inbox.envelopes] == [
        "issue_refund-1-0",
        "issue_refund-1-0",
        "issue_refund-2-0",
        "issue_refund-2-0",
    ]


def test_an_answer_for_another_thread_is_unknown(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    refunds = Refunds(script(REFUND))
    history = InMemoryHistory()
    handle_message(refunds.agent, START, inbox, history=history)
    handled = handle_message(
        refunds.agent,
        answer("issue_refund-1-0", {"action": "approve"}, thread_id="order-1"),
        inbox,
        history=history,
    )
    assert handled.outcome is Outcome.UNKNOWN_QUESTION
    assert refunds.runs == []


def test_invalid_args_are_refused_before_anything_is_stored(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    refunds = Refunds(script(REFUND))
    history = InMemoryHistory()
    handle_message(refunds.agent, START, inbox, history=history)
    before = history.load(THREAD)

    bad = answer("issue_refund-1-0", {"action": "approve", "args": {"amonut": 5}})
    handled = handle_message(refunds.agent, bad, inbox, history=history)
    assert handled.outcome is Outcome.INVALID_ANSWER
    assert "amonut" in (handled.detail or "")
    not_json = handle_message(
        refunds.agent, answer("issue_refund-1-0", object()), inbox, history=history
    )
    assert not_json.outcome is Outcome.INVALID_ANSWER
    assert history.load(THREAD) == before

    edited = answer("issue_refund-1-0", {"action": "approve", "args": {"amount": 5}})
    assert handle_message(refunds.agent, edited, inbox, history=history).outcome is Outcome.RESUMED
    assert refunds.runs == [{"order_id": "order-4471", "amount": 5}]


def test_partial_answers_are_held_until_every_pending_call_is_answered(
    script: Callable[..., Script], inbox: MemoryAnnounce, history: HistoryStore
) -> None:
    refunds = Refunds(
        script(
            ("issue_refund", {"order_id": "a", "amount": 1}),
            ("issue_refund", {"order_id": "b", "amount": 2}),
        )
    )
    started = handle_message(refunds.agent, START, inbox, history=history)
    assert started.question_ids == ["issue_refund-1-0", "issue_refund-1-1"]

    held = handle_message(
        refunds.agent, answer("issue_refund-1-1", {"action": "approve"}), inbox, history=history
    )
    assert held.outcome is Outcome.HELD
    assert not held.ran
    assert held.result is None
    assert "['issue_refund-1-0']" in (held.detail or "")
    assert refunds.runs == []

    # The held answer is in the store: a duplicate is refused, the first one stands.
    duplicate = handle_message(
        refunds.agent, answer("issue_refund-1-1", {"action": "reject"}), inbox, history=history
    )
    assert duplicate.outcome is Outcome.DUPLICATE
    assert "already answered" in (duplicate.detail or "")
    assert duplicate.question_ids == ["issue_refund-1-0"]
    # A redelivered start republishes only what still waits for an answer.
    assert handle_message(refunds.agent, START, inbox, history=history).question_ids == [
        "issue_refund-1-0"
    ]

    resumed = handle_message(
        refunds.agent, answer("issue_refund-1-0", {"action": "reject"}), inbox, history=history
    )
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == [{"order_id": "b", "amount": 2}]
    seen = seen_by_model(resumed.result.output)
    assert seen["issue_refund-1-0"]["outcome"] == "denied"
    assert seen["issue_refund-1-1"]["content"] == "refunded 2 on b"


def test_held_float_answers_reach_the_decision_parameter_verbatim(
    script: Callable[..., Script], inbox: MemoryAnnounce, history: HistoryStore
) -> None:
    received: list[tuple[str, Any]] = []
    agent = Agent(
        script(("notify", {"order_id": "a"}), ("notify", {"order_id": "b"})).model,
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool
    @wait
    def notify(ctx: RunContext[Any], order_id: str, decision: Any = None) -> str:
        received.append((order_id, decision))
        return "notified"

    first, second = handle_message(agent, START, inbox, history=history).question_ids
    value = {"amount": 1.0, "zero": -0.0, "big": 1e16, "list": [1.0, 2.0]}
    # The first answer is held in the stored history until the second arrives.
    assert handle_message(agent, answer(second, value), inbox, history=history).outcome is (
        Outcome.HELD
    )
    assert handle_message(agent, answer(first, value), inbox, history=history).ran
    # repr tells 1.0 from 1 and -0.0 from 0.0, which == does not. The two calls run in any order.
    assert sorted((o, repr(d)) for o, d in received) == [("a", repr(value)), ("b", repr(value))]


def test_pydantic_ai_runs_a_duplicate_resume_twice_unless_the_history_was_stored_first(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    """The host's store-before-acknowledge rule, shown on the framework itself."""
    refunds = Refunds(script(REFUND))
    parked = refunds.agent.run_sync("refund")
    before = parked.all_messages()
    results = DeferredToolResults(
        approvals={"issue_refund-1-0": ToolApproved()},
        metadata={"issue_refund-1-0": {"action": "approve"}},
    )
    after = refunds.agent.run_sync(message_history=before, deferred_tool_results=results)
    # Resuming again from the history as it was before the resume calls the tool again: only
    # its execution record (the @wait default, once=True) keeps the body to one run...
    again = refunds.agent.run_sync(message_history=before, deferred_tool_results=results)
    assert len(refunds.runs) == 1
    assert seen_by_model(again.output) == seen_by_model(after.output)
    # ...while the history stored after the resume holds the tool's return, and is refused.
    with pytest.raises(UserError, match="unprocessed tool calls"):
        refunds.agent.run_sync(message_history=after.all_messages(), deferred_tool_results=results)
    assert len(refunds.runs) == 1

    # handle_message stores the history before it publishes or returns, so the duplicate is a no-op.
    runs = Refunds(script(REFUND))
    history = InMemoryHistory()
    handle_message(runs.agent, START, inbox, history=history)
    approve = answer("issue_refund-1-0", {"action": "approve"})
    assert handle_message(runs.agent, approve, inbox, history=history).outcome is Outcome.RESUMED
    assert handle_message(runs.agent, approve, inbox, history=history).outcome is Outcome.DUPLICATE
    assert len(runs.runs) == 1


def test_history_is_stored_before_anything_is_published(script: Callable[..., Script]) -> None:
    history = InMemoryHistory()
    seen: list[bool] = []

    class Checking(BaseAnnounce):
        def deliver(self, envelope: WaitEnvelope) -> None:
            # At publish time the store already holds the run that asked this question.
            stored = history.load(envelope.thread_id)
            seen.append(
                any(
                    call.tool_call_id == envelope.question_id
                    for message in stored
                    if isinstance(message, ModelResponse)
                    for call in message.tool_calls
                )
            )

    refunds = Refunds(script(REFUND))
    handle_message(refunds.agent, START, Checking(), history=history)
    assert seen == [True]


def test_strict_publish_failure_keeps_the_history_and_redelivery_republishes(
    inbox: MemoryAnnounce,
) -> None:
    def two_steps(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # Refund "a"; once that returned, refund "b" in the same run; then finish.
        returned = sum(
            isinstance(part, ToolReturnPart) for message in messages for part in message.parts
        )
        if returned < 2:
            order = "ab"[returned]
            args = {"order_id": order, "amount": 1}
            return ModelResponse(
                parts=[ToolCallPart("issue_refund", args, tool_call_id=f"step-{order}")]
            )
        return ModelResponse(parts=[TextPart("done")])

    refunds = Refunds(FunctionModel(two_steps))
    agent = refunds.agent
    history = InMemoryHistory()

    with pytest.raises(AnnounceFailed, match="broker unreachable"):
        handle_message(agent, START, [inbox, Broken()], history=history, strict=True)
    # The host did not acknowledge; the redelivered start runs nothing and publishes again.
    redelivered = handle_message(agent, START, inbox, history=history, strict=True)
    assert redelivered.outcome is Outcome.REPUBLISHED
    assert redelivered.question_ids == ["step-a"]

    # The resume runs "a" and parks on "b", but publishing "b" fails: the history is stored.
    approve_a = answer("step-a", {"action": "approve"})
    with pytest.raises(AnnounceFailed):
        handle_message(agent, approve_a, Broken(), history=history, strict=True)
    assert refunds.runs == [{"order_id": "a", "amount": 1}]
    # The redelivered answer is a duplicate: nothing runs again, and "b" finally goes out.
    redelivered = handle_message(agent, approve_a, inbox, history=history, strict=True)
    assert redelivered.outcome is Outcome.DUPLICATE
    assert redelivered.question_ids == ["step-b"]
    assert refunds.runs == [{"order_id": "a", "amount": 1}]


def test_a_fresh_agent_and_store_resume_the_thread(
    script: Callable[..., Script], inbox: MemoryAnnounce, tmp_path: Path
) -> None:
    """As a second process would: new Agent instance, new store object on the same file."""
    refunds = Refunds(script(REFUND))
    path = tmp_path / "threads" / "history.sqlite3"
    with SqliteHistory(path) as store:
        handle_message(refunds.agent, START, inbox, history=store)
    with SqliteHistory(path) as store:
        resumed = handle_message(
            refunds.build(), answer("issue_refund-1-0", {"action": "approve"}), inbox, history=store
        )
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]


def test_requires_approval_and_call_deferred_through_the_host(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    from pydantic_ai import CallDeferred

    model = script(("delete_file", {"path": "/tmp/x"}), ("run_job", {"job": "nightly"}))
    agent = Agent(model.model, output_type=[str, DeferredToolRequests])
    deleted: list[str] = []

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        deleted.append(path)
        return f"deleted {path}"

    @agent.tool_plain
    def run_job(job: str) -> str:
        raise CallDeferred(metadata={"queue": "batch"})

    history = InMemoryHistory()
    started = handle_message(agent, {"thread_id": "t", "input": "go"}, inbox, history=history)
    assert started.question_ids == ["delete_file-1-0", "run_job-1-1"]
    assert inbox.envelopes[1].question["metadata"] == {"queue": "batch"}
    held = handle_message(agent, answer("run_job-1-1", {"rows": 7}, "t"), inbox, history=history)
    assert held.outcome is Outcome.HELD
    resumed = handle_message(
        agent, answer("delete_file-1-0", {"action": "approve"}, "t"), inbox, history=history
    )
    assert resumed.outcome is Outcome.RESUMED
    assert deleted == ["/tmp/x"]
    assert seen_by_model(resumed.result.output)["run_job-1-1"]["content"] == {"rows": 7}


def test_async_mode_through_the_host_publishes_the_same_derived_id_on_redelivery(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    refunds = Refunds(script(REFUND), mode="async", announce=inbox)
    history = InMemoryHistory()
    deps = {"thread_id": THREAD}
    expected = derive_question_id(THREAD, "issue_refund", REFUND[1])

    first = handle_message(refunds.agent, START, None, history=history, deps=deps)
    # Not parked: the tool published by itself and the run finished.
    assert first.outcome is Outcome.STARTED
    assert not first.parked
    assert (
        seen_by_model(first.result.output)["issue_refund-1-0"]["content"]["question_id"] == expected
    )
    second = handle_message(refunds.agent, START, None, history=history, deps=deps)
    assert second.outcome is Outcome.STARTED
    assert inbox.question_ids == [expected, expected]
    assert refunds.runs == []
    # The decision of an async question is the agent's to react to; the host does not route it.
    decision = handle_message(
        refunds.agent, answer(expected, {"action": "approve"}), None, history=history
    )
    assert decision.outcome is Outcome.UNKNOWN_QUESTION
    assert refunds.runs == []


def test_structured_start_input_reaches_the_model_as_json(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    refunds = Refunds(script(REFUND))
    start = {"thread_id": THREAD, "input": {"order_id": "order-4471", "amount": 41000}}
    started = handle_message(refunds.agent, start, inbox, history=InMemoryHistory())
    prompt = started.result.all_messages()[0].parts[-1]
    assert isinstance(prompt, UserPromptPart)
    assert prompt.content == '{"amount":41000,"order_id":"order-4471"}'


def test_bad_calls_fail_clearly(script: Callable[..., Script], inbox: MemoryAnnounce) -> None:
    refunds = Refunds(script(REFUND))
    history = InMemoryHistory()
    with pytest.raises(TypeError, match="message_history"):
        handle_message(refunds.agent, START, inbox, history=history, message_history=[])
    with pytest.raises(ValidationError, match="thread_id"):
        handle_message(refunds.agent, {"input": "x"}, inbox, history=history)
    # A parked history written by other code: its calls' kinds are unknown.
    parked = refunds.agent.run_sync("refund")
    history.save(THREAD, parked.all_messages())
    with pytest.raises(ValueError, match=r"issue_refund-1-0.*did not record"):
        handle_message(refunds.agent, START, inbox, history=history)


async def test_ahandle_message_with_async_tools(
    script: Callable[..., Script], inbox: MemoryAnnounce, history: HistoryStore
) -> None:
    agent = Agent(script(REFUND).model, output_type=[str, DeferredToolRequests])
    runs: list[int] = []

    @agent.tool
    @wait
    async def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    started = await ahandle_message(agent, START, inbox, history=history)
    assert started.outcome is Outcome.STARTED
    assert started.question_ids == ["issue_refund-1-0"]
    republished = await ahandle_message(agent, START, inbox, history=history)
    assert republished.outcome is Outcome.REPUBLISHED
    approve = answer("issue_refund-1-0", {"action": "approve"})
    resumed = await ahandle_message(agent, approve, inbox, history=history)
    assert resumed.outcome is Outcome.RESUMED
    assert (
        await ahandle_message(agent, approve, inbox, history=history)
    ).outcome is Outcome.DUPLICATE
    assert runs == [41000]
    tool_returns = [
        part
        for message in history.load(THREAD)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    assert [p.content for p in tool_returns] == ["refunded 41000"]


def test_message_options_go_to_the_host_and_every_other_name_to_the_run(
    script: Callable[..., Script], history: HistoryStore
) -> None:
    refunds = Refunds(script(REFUND))
    seen: list[Any] = []

    @refunds.agent.instructions
    def note_deps(ctx: RunContext[Any]) -> str:
        seen.append(ctx.deps)
        return "Refund what is asked."

    # strict is the host's: the failed delivery raises once the history is stored; deps is the run's.
    with pytest.raises(AnnounceFailed):
        handle_message(refunds.agent, START, Broken(), history=history, strict=True, deps="d-1")
    assert seen == ["d-1"]
    assert history.load(THREAD)
    # A name neither takes is refused with every message, here a redelivered start message that
    # runs nothing.
    with pytest.raises(TypeError, match=r"'stirct'; did you mean 'strict'\?"):
        handle_message(refunds.agent, START, MemoryAnnounce(), history=history, stirct=True)
    assert seen == ["d-1"]
