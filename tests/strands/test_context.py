"""The call context of interrupts a tool call does not name: BeforeToolsEvent, nested runs."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolsEvent, HookProvider, HookRegistry
from strands.multiagent import GraphBuilder, Swarm
from strands.multiagent.base import Status
from strands.multiagent.graph import Graph
from strands.session import FileSessionManager

from agent_wait.core import CallContext, MemoryAnnounce, Outcome
from agent_wait.strands import MultiAgentRunFailed, handle_message, publish_interrupts
from tests.strands.fake_model import Call, ScriptedModel
from tests.strands.test_multiagent import Refunds, SwarmThreads, reply


class BatchGate(HookProvider):
    """Asks once before each batch of tool calls, the way the Strands docs gate a batch."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolsEvent, self.check)

    def check(self, event: BeforeToolsEvent) -> None:
        names = [b["toolUse"]["name"] for b in event.message["content"] if "toolUse" in b]
        if event.interrupt("run-batch", reason={"tools": names}) != "go":
            event.cancel = "not approved"


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"found {order_id}"


@tool
def notify(order_id: str) -> str:
    """Tell the customer."""
    return f"told {order_id}"


@pytest.fixture(autouse=True)
def _no_unbounded_graph_warning() -> None:
    warnings.filterwarnings("ignore", message="graph has no max_node_executions")


def test_a_batch_of_one_call_names_that_call(sessions: Path, inbox: MemoryAnnounce) -> None:
    model = ScriptedModel([Call("lookup", {"order_id": "o-1"})])

    def agent_for(thread_id: str) -> Agent:
        return Agent(
            model=model,
            tools=[lookup, notify],
            hooks=[BatchGate()],
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(sessions)),
            callback_handler=None,
        )

    started = handle_message(agent_for, {"thread_id": "b-1", "input": "look"}, inbox)
    [envelope] = started.report.envelopes
    assert envelope.question_id.startswith("v1:before_tools:")
    assert envelope.question == {"name": "run-batch", "reason": {"tools": ["lookup"]}}
    assert envelope.source is None
    assert envelope.context == CallContext(
        tool="lookup", tool_call_id="call_1_0", framework="strands"
    )

    # Published again from the stored session: the same context.
    again = handle_message(agent_for, {"thread_id": "b-1", "input": "look"}, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    [republished] = again.report.envelopes
    assert republished.context == envelope.context

    done = handle_message(agent_for, reply(envelope, "go"), inbox)
    assert done.outcome is Outcome.RESUMED
    assert [r["text"] for r in model.tool_results] == ["found o-1"]


def test_a_batch_of_several_calls_names_none(inbox: MemoryAnnounce) -> None:
    model = ScriptedModel(
        [Call("lookup", {"order_id": "o-1"}), Call("notify", {"order_id": "o-1"})]
    )
    agent = Agent(model=model, tools=[lookup, notify], hooks=[BatchGate()], callback_handler=None)
    [envelope] = publish_interrupts(agent("look"), "b-2", inbox).envelopes
    assert envelope.question == {"name": "run-batch", "reason": {"tools": ["lookup", "notify"]}}
    # The hook asked about the batch, not one call of it: no call to name.
    assert envelope.context is None


def test_a_batch_interrupt_in_a_graph_node_names_the_node(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    models = {
        "check": ScriptedModel([Call("lookup", {"order_id": "o-3"})], call_prefix="c"),
        "tell": ScriptedModel([Call("notify", {"order_id": "o-3"})], call_prefix="t"),
    }

    def graph_for(thread_id: str) -> Graph:
        builder = GraphBuilder()
        for node, model in models.items():
            agent = Agent(
                model=model, tools=[lookup, notify], hooks=[BatchGate()], callback_handler=None
            )
            builder.add_node(agent, node)
        builder.add_edge("check", "tell")
        builder.set_entry_point("check")
        builder.set_max_node_executions(5)
        builder.set_session_manager(
            FileSessionManager(session_id=thread_id, storage_dir=str(sessions))
        )
        return builder.build()

    started = handle_message(graph_for, {"thread_id": "g-b", "input": "go"}, inbox)
    [check] = started.report.envelopes
    assert check.context == CallContext(
        node="check", tool="lookup", tool_call_id="c_1_0", framework="strands"
    )

    # Restored from the session (a fresh Graph): the Graph kept the node's state.
    again = handle_message(graph_for, {"thread_id": "g-b", "input": "go"}, inbox)
    assert [e.context for e in again.report.envelopes] == [check.context]

    # The next node asks under the same interrupt id (Strands' BeforeToolsEvent ids name only
    # the interrupt): its context tells which node waits now.
    moved = handle_message(graph_for, reply(check, "go"), inbox)
    [tell] = moved.report.envelopes
    assert tell.question_id == check.question_id
    assert tell.context == CallContext(
        node="tell", tool="notify", tool_call_id="t_1_0", framework="strands"
    )


class NestedThreads:
    """A Graph whose one node ``team`` is the triage/refunds Swarm."""

    def __init__(self, storage: Path, refunds: Refunds) -> None:
        self.storage = storage
        self.team = SwarmThreads(storage, refunds)

    def __call__(self, thread_id: str) -> Graph:
        builder = GraphBuilder()
        builder.add_node(Swarm(self.team.agents()), "team")
        builder.set_entry_point("team")
        builder.set_max_node_executions(5)
        builder.set_session_manager(
            FileSessionManager(session_id=thread_id, storage_dir=str(self.storage))
        )
        return builder.build()


def test_a_swarm_in_a_graph_node_names_the_path_to_the_agent_that_asked(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    build = NestedThreads(sessions, refunds)
    graphs: dict[str, Graph] = {}

    def graph_for(thread_id: str) -> Graph:  # one Graph per thread, kept in memory
        return graphs.setdefault(thread_id, build(thread_id))

    started = handle_message(graph_for, {"thread_id": "n-1", "input": "refund"}, inbox)
    [envelope] = started.report.envelopes
    assert envelope.question["function"] == "issue_refund"
    assert envelope.context == CallContext(
        node="refunds",
        namespace="team|refunds",
        tool="issue_refund",
        tool_call_id="refunds_1_0",
        framework="strands",
    )

    again = handle_message(graph_for, {"thread_id": "n-1", "input": "refund"}, inbox)
    assert [e.context for e in again.report.envelopes] == [envelope.context]

    done = handle_message(graph_for, reply(envelope, {"action": "approve"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert refunds.runs == ["order-4471"]


def test_a_swarm_in_a_graph_node_restored_from_the_session_names_the_graph_node(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    graph_for = NestedThreads(sessions, refunds)  # a fresh Graph for every message

    [envelope] = handle_message(
        graph_for, {"thread_id": "n-2", "input": "refund"}, inbox
    ).report.envelopes
    assert envelope.context is not None
    assert envelope.context.namespace == "team|refunds"

    # Strands saves the interrupt state of a Graph's agent nodes only: the nested Swarm comes
    # back without its own, so all that is known is the Graph node that parked.
    again = handle_message(graph_for, {"thread_id": "n-2", "input": "refund"}, inbox)
    assert [e.context for e in again.report.envelopes] == [
        CallContext(node="team", framework="strands")
    ]

    # And the nested Swarm cannot resume there either: Strands starts it over with the answers
    # as its task, it fails, and the Graph ends FAILED. The answer was not taken: reported.
    resumed = handle_message(graph_for, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUME_FAILED
    assert isinstance(resumed.error, MultiAgentRunFailed)
    assert resumed.error.result.status is Status.FAILED
    assert resumed.error.question_ids == [envelope.question_id]
    assert not resumed.error.pending
    assert "cannot be answered again" in (resumed.detail or "")
    assert refunds.runs == []

    # Strands ended the question: an answer runs nothing, a start message runs the thread again.
    late = handle_message(graph_for, reply(envelope, {"action": "approve"}), inbox)
    assert not late.ran
    assert refunds.runs == []
    restarted = handle_message(graph_for, {"thread_id": "n-2", "input": "refund"}, inbox)
    assert restarted.outcome is Outcome.STARTED
    assert [e.context for e in restarted.report.envelopes] == [envelope.context]
