"""handle_message over Strands multi-agent runs: a Swarm and a Graph on file sessions."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, ToolContext, tool
from strands.hooks import HookProvider, HookRegistry
from strands.hooks.events import BeforeNodeCallEvent
from strands.multiagent import GraphBuilder, Swarm
from strands.multiagent.base import MultiAgentResult, Status
from strands.multiagent.graph import Graph
from strands.session import FileSessionManager

from agent_wait.core import CallContext, Handled, MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.strands import (
    MultiAgentRunFailed,
    ahandle_message,
    astream_message,
    handle_message,
    questions_in,
    stream_message,
    wait,
)
from tests.strands.conftest import TextGuard
from tests.strands.fake_model import Call, ScriptedModel


class Refunds:
    """A gated refund tool that records each run, and the hook answers it saw."""

    def __init__(self) -> None:
        self.runs: list[Any] = []
        runs = self.runs

        @tool(context=True)
        @wait
        def issue_refund(order_id: str, tool_context: ToolContext) -> str:
            """Refund an order."""
            runs.append(order_id)
            return f"refunded {order_id}"

        self.tool = issue_refund


class NoticeGate(HookProvider):
    """Asks before the ``notify`` node runs, the way the Strands docs interrupt from a hook."""

    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeNodeCallEvent, self.before_node)

    def before_node(self, event: BeforeNodeCallEvent) -> None:
        if event.node_id == "notify":
            answer = event.interrupt("publish-notice", reason={"node": event.node_id})
            self.seen.append(("notice", answer))


class SwarmThreads:
    """``threads(thread_id)`` builds a fresh triage/refunds Swarm on the thread's session."""

    def __init__(self, storage: Path, refunds: Refunds) -> None:
        self.storage = storage
        self.refunds = refunds
        handoff = Call("handoff_to_agent", {"agent_name": "refunds", "message": "refund it"})
        self.triage_model = ScriptedModel([handoff], call_prefix="triage")
        self.refunds_model = ScriptedModel(
            [Call("issue_refund", {"order_id": "order-4471"})], call_prefix="refunds"
        )

    def agents(self) -> list[Agent]:
        """Fresh triage and refunds agents over the scripted models."""
        triage = Agent(name="triage", model=self.triage_model, callback_handler=None)
        refunds = Agent(
            name="refunds",
            model=self.refunds_model,
            tools=[self.refunds.tool],
            callback_handler=None,
        )
        return [triage, refunds]

    def __call__(self, thread_id: str) -> Swarm:
        return Swarm(
            self.agents(),
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(self.storage)),
        )


class GraphThreads:
    """Two refund nodes in parallel, then ``notify`` behind a hook interrupt."""

    def __init__(self, storage: Path, refunds: Refunds) -> None:
        self.storage = storage
        self.refunds = refunds
        self.seen: list[Any] = []
        self.models = {
            "refund_a": ScriptedModel([Call("issue_refund", {"order_id": "a-1"})], call_prefix="a"),
            "refund_b": ScriptedModel([Call("issue_refund", {"order_id": "b-2"})], call_prefix="b"),
            "notify": ScriptedModel("noticed", call_prefix="n"),
        }

    def __call__(self, thread_id: str) -> Graph:
        builder = GraphBuilder()
        for node, model in self.models.items():
            tools = [] if node == "notify" else [self.refunds.tool]
            builder.add_node(Agent(model=model, tools=tools, callback_handler=None), node)
        builder.add_edge("refund_a", "notify")
        builder.add_edge("refund_b", "notify")
        builder.set_entry_point("refund_a")
        builder.set_entry_point("refund_b")
        builder.set_max_node_executions(10)
        builder.set_hook_providers([NoticeGate(self.seen)])
        builder.set_session_manager(
            FileSessionManager(session_id=thread_id, storage_dir=str(self.storage))
        )
        return builder.build()


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {**envelope.reply_with.model_dump(), "answer": answer}


def by_order(handled: Handled) -> dict[str, WaitEnvelope]:
    return {e.question["args"]["order_id"]: e for e in handled.report.envelopes}


@pytest.fixture(autouse=True)
def _no_unbounded_graph_warning() -> None:
    warnings.filterwarnings("ignore", message="graph has no max_node_executions")


def test_swarm_node_tool_parks_and_the_answer_resumes_that_node(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = SwarmThreads(sessions, refunds)

    started = handle_message(threads, {"thread_id": "t-1", "input": "refund order-4471"}, inbox)
    assert started.outcome is Outcome.STARTED
    assert isinstance(started.result, MultiAgentResult)
    assert started.result.status is Status.INTERRUPTED
    [envelope] = started.report.envelopes
    assert envelope.thread_id == "t-1"
    assert envelope.question == {"function": "issue_refund", "args": {"order_id": "order-4471"}}
    assert envelope.source is not None
    assert envelope.source.function == "issue_refund"
    # The node that asked, and its tool call.
    assert envelope.context == CallContext(
        node="refunds",
        tool="issue_refund",
        tool_call_id=envelope.context.tool_call_id,
        framework="strands",
    )
    assert envelope.context.tool_call_id
    assert f":{envelope.context.tool_call_id}:" in envelope.question_id
    assert refunds.runs == []
    triage_calls = threads.triage_model.calls

    again = handle_message(threads, {"thread_id": "t-1", "input": "refund order-4471"}, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == [envelope.question_id]
    # Republished from the restored Swarm's node agents: the same context.
    assert [e.context for e in again.report.envelopes] == [envelope.context]
    assert threads.triage_model.calls == triage_calls

    resumed = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert isinstance(resumed.result, MultiAgentResult)
    assert resumed.result.status is Status.COMPLETED
    assert not resumed.parked
    assert refunds.runs == ["order-4471"]
    # The refunds node resumed where it parked: triage did not run again.
    assert threads.triage_model.calls == triage_calls
    assert "refunded order-4471" in str(resumed.result)

    # A finished Swarm given the answer again would run its whole task again; nothing runs.
    # Strands resets a finished Swarm's nodes on restore, so no history tells that the question
    # was asked: the late answer reads as unknown.
    late = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert late.outcome is Outcome.UNKNOWN_QUESTION
    assert not late.ran
    assert refunds.runs == ["order-4471"]
    assert threads.triage_model.calls == triage_calls


def test_graph_parallel_nodes_and_a_hook_each_resume_the_node_that_asked(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = GraphThreads(sessions, refunds)

    started = handle_message(threads, {"thread_id": "g-1", "input": "refund both"}, inbox)
    assert started.outcome is Outcome.STARTED
    questions = by_order(started)
    assert sorted(questions) == ["a-1", "b-2"]
    assert questions["a-1"].question_id != questions["b-2"].question_id
    assert {o: e.context.node for o, e in questions.items() if e.context} == {
        "a-1": "refund_a",
        "b-2": "refund_b",
    }

    # Answer b's node only: a's question is still pending and goes out again under its id.
    partial = handle_message(threads, reply(questions["b-2"], {"action": "approve"}), inbox)
    assert partial.outcome is Outcome.RESUMED
    assert refunds.runs == ["b-2"]
    assert partial.question_ids == [questions["a-1"].question_id]

    # b's answer again, while a's is pending: Strands would take it again; nothing runs.
    duplicate = handle_message(threads, reply(questions["b-2"], {"action": "reject"}), inbox)
    assert duplicate.outcome is Outcome.DUPLICATE
    assert duplicate.question_ids == [questions["a-1"].question_id]
    assert refunds.runs == ["b-2"]

    rejected = handle_message(threads, reply(questions["a-1"], {"action": "reject"}), inbox)
    assert rejected.outcome is Outcome.RESUMED
    assert refunds.runs == ["b-2"]
    [notice] = rejected.report.envelopes
    assert notice.question == {"name": "publish-notice", "reason": {"node": "notify"}}
    # The hook interrupt's id names its node: that is the whole context.
    assert notice.context == CallContext(node="notify", framework="strands")
    assert notice.source is None
    assert threads.seen == []

    unknown = handle_message(
        threads,
        {"thread_id": "g-1", "question_id": "v1:before_node_call:nope:nope", "answer": "x"},
        inbox,
    )
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION

    done = handle_message(threads, reply(notice, "ship it"), inbox)
    assert done.outcome is Outcome.RESUMED
    assert isinstance(done.result, MultiAgentResult)
    assert done.result.status is Status.COMPLETED
    assert threads.seen == [("notice", "ship it")]
    assert threads.models["notify"].calls == 1
    # Each refund node ran its model twice (the call, then the answer); none ran again.
    assert threads.models["refund_a"].calls == 2
    assert threads.models["refund_b"].calls == 2


async def test_async_swarm(sessions: Path, inbox: MemoryAnnounce) -> None:
    refunds = Refunds()
    threads = SwarmThreads(sessions, refunds)

    async def factory(thread_id: str) -> Swarm:
        return threads(thread_id)

    started = await ahandle_message(factory, {"thread_id": "t-2", "input": "refund"}, inbox)
    [envelope] = started.report.envelopes
    resumed = await ahandle_message(factory, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == ["order-4471"]


def test_questions_in_reads_multi_agent_results() -> None:
    assert questions_in(MultiAgentResult(status=Status.COMPLETED)) == []
    with pytest.raises(TypeError, match="MultiAgentResult of a Swarm or Graph, got dict"):
        questions_in({"stop_reason": "interrupt"})  # pyright: ignore[reportArgumentType]


def test_factory_returning_something_else_is_refused(inbox: MemoryAnnounce) -> None:
    with pytest.raises(TypeError, match=r"expected a strands\.Agent, or a strands\.multiagent"):
        handle_message(lambda _t: "nope", {"thread_id": "x", "input": "hi"}, inbox)  # pyright: ignore[reportArgumentType, reportUnknownLambdaType]


class StrictGate(NoticeGate):
    """A hook that cannot handle an answer that is not text: the resume raises."""

    def before_node(self, event: BeforeNodeCallEvent) -> None:
        if event.node_id == "notify":
            answer = event.interrupt("publish-notice", reason={"node": event.node_id})
            if not isinstance(answer, str):
                raise TypeError(f"publish-notice expects text, got {answer!r}")
            self.seen.append(("notice", answer))


def test_a_hook_failing_on_the_answer_ends_the_question(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = GraphThreads(sessions, refunds)
    threads.models.pop("refund_b")

    def graph_for(thread_id: str) -> Graph:
        builder = GraphBuilder()
        builder.add_node(
            Agent(model=threads.models["refund_a"], tools=[refunds.tool], callback_handler=None),
            "refund_a",
        )
        builder.add_node(Agent(model=threads.models["notify"], callback_handler=None), "notify")
        builder.add_edge("refund_a", "notify")
        builder.set_entry_point("refund_a")
        builder.set_max_node_executions(10)
        builder.set_hook_providers([StrictGate(threads.seen)])
        builder.set_session_manager(
            FileSessionManager(session_id=thread_id, storage_dir=str(sessions))
        )
        return builder.build()

    [refund] = handle_message(
        graph_for, {"thread_id": "g-2", "input": "go"}, inbox
    ).report.envelopes
    [notice] = handle_message(
        graph_for, reply(refund, {"action": "approve"}), inbox
    ).report.envelopes

    failed = handle_message(graph_for, reply(notice, {"not": "text"}), inbox)
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, TypeError)
    # Strands ends the Graph as failed: a corrected answer would not run the hook again, so
    # the question is not offered as still pending.
    assert "no longer pending" in (failed.detail or "")

    again = handle_message(graph_for, reply(notice, "ship it"), inbox)
    assert again.outcome is Outcome.DUPLICATE
    assert threads.seen == []
    assert refunds.runs == ["a-1"]


class DownAfterTools(ScriptedModel):
    """Fails once it is shown a tool result: the node ran its tool, then its model call failed."""

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if any("toolResult" in block for block in messages[-1]["content"]):
            raise RuntimeError("model unavailable")
        async for event in super().stream(messages, *args, **kwargs):
            yield event


class GuardedSwarm(SwarmThreads):
    """The triage/refunds Swarm with a text-reading hook on the refunds agent."""

    def __call__(self, thread_id: str) -> Swarm:
        triage = Agent(name="triage", model=self.triage_model, callback_handler=None)
        refunds = Agent(
            name="refunds",
            model=self.refunds_model,
            tools=[self.refunds.tool],
            hooks=[TextGuard("refund-ok")],
            callback_handler=None,
        )
        return Swarm(
            [triage, refunds],
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(self.storage)),
        )


@pytest.mark.parametrize("streamed", [False, True], ids=["handle", "stream"])
def test_a_swarm_failing_on_the_answer_keeps_the_question_answerable(
    sessions: Path, inbox: MemoryAnnounce, streamed: bool
) -> None:
    refunds = Refunds()
    threads = GuardedSwarm(sessions, refunds)

    def handle(message: dict[str, Any]) -> Handled:
        if not streamed:
            return handle_message(threads, message, inbox)
        run = stream_message(threads, message, inbox)
        for _ in run:
            pass
        return run.handled

    [envelope] = handle({"thread_id": "s-f", "input": "refund"}).report.envelopes
    assert envelope.question["name"] == "refund-ok"

    # Strands' Swarm catches the hook's error and ends FAILED, raising nothing.
    failed = handle(reply(envelope, {"not": "text"}))
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, MultiAgentRunFailed)
    assert failed.error.result.status is Status.FAILED
    assert failed.error.pending
    assert "still pending" in (failed.detail or "")
    assert refunds.runs == []

    again = handle({"thread_id": "s-f", "input": "refund"})
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == [envelope.question_id]

    # The corrected answer passes the hook; the gated tool then asks its own question.
    passed = handle(reply(envelope, "ok"))
    assert passed.outcome is Outcome.RESUMED
    [refund] = passed.report.envelopes
    assert refund.question["function"] == "issue_refund"
    done = handle(reply(refund, {"action": "approve"}))
    assert done.outcome is Outcome.RESUMED
    assert isinstance(done.result, MultiAgentResult)
    assert done.result.status is Status.COMPLETED
    assert refunds.runs == ["order-4471"]


def test_a_swarm_failing_after_the_answer_ran_its_tool_does_not_run_it_again(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = SwarmThreads(sessions, refunds)
    threads.refunds_model = DownAfterTools(
        [Call("issue_refund", {"order_id": "order-4471"})], call_prefix="refunds"
    )

    [envelope] = handle_message(
        threads, {"thread_id": "s-d", "input": "refund"}, inbox
    ).report.envelopes
    failed = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, MultiAgentRunFailed)
    assert not failed.error.pending
    assert refunds.runs == ["order-4471"]

    # The answer was used: the question is not offered again, and the answer runs nothing.
    late = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert not late.ran
    assert refunds.runs == ["order-4471"]


async def test_an_async_swarm_failing_on_the_answer_keeps_the_question_answerable(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = GuardedSwarm(sessions, refunds)
    started = await ahandle_message(threads, {"thread_id": "s-a", "input": "refund"}, inbox)
    [envelope] = started.report.envelopes

    failed = await ahandle_message(threads, reply(envelope, {"not": "text"}), inbox)
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, MultiAgentRunFailed)
    assert failed.error.pending

    streamed = astream_message(threads, reply(envelope, {"not": "text"}), inbox)
    async for _ in streamed:
        pass
    assert streamed.handled.outcome is Outcome.RESUME_FAILED
    assert isinstance(streamed.handled.error, MultiAgentRunFailed)
    assert streamed.handled.error.pending

    passed = await ahandle_message(threads, reply(envelope, "ok"), inbox)
    assert passed.outcome is Outcome.RESUMED
    assert [e.question["function"] for e in passed.report.envelopes] == ["issue_refund"]
    assert refunds.runs == []
