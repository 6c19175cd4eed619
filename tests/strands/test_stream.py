"""astream_message: the Strands host over stream_async, for an agent and for a Swarm."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.strands import astream_message
from tests.strands.conftest import Threads
from tests.strands.fake_model import ScriptedModel
from tests.strands.test_host import REFUND, Tools, reply, start
from tests.strands.test_multiagent import Refunds, SwarmThreads

Factory = Callable[[ScriptedModel, Sequence[Any]], Threads]


async def test_agent_stream_parks_publishes_and_resumes(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)

    started = astream_message(threads, start(), inbox)
    events = [event async for event in started]
    assert started.handled.outcome is Outcome.STARTED
    assert events[-1]["result"].stop_reason == "interrupt"
    assert any("current_tool_use" in e for e in events)  # the tool call streamed as it came
    [envelope] = started.handled.report.envelopes
    assert envelope.question["function"] == "issue_refund"
    assert tools.runs == []

    again = astream_message(threads, start(), inbox)
    assert [event async for event in again] == []
    assert again.handled.outcome is Outcome.REPUBLISHED

    resumed = astream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    text = "".join([e["data"] async for e in resumed if "data" in e])
    assert text == "done: refunded 41000"
    assert resumed.handled.outcome is Outcome.RESUMED
    assert not resumed.handled.parked
    assert tools.runs == ["refund order-4471 41000"]

    late = astream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert [event async for event in late] == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert tools.runs == ["refund order-4471 41000"]


async def test_swarm_stream_names_the_node_of_each_event(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = SwarmThreads(sessions, refunds)

    started = astream_message(threads, {"thread_id": "s-1", "input": "refund"}, inbox)
    nodes = {e.get("node_id") async for e in started if e.get("type") == "multiagent_node_start"}
    assert nodes == {"triage", "refunds"}
    [envelope] = started.handled.report.envelopes

    resumed = astream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    nodes = {e.get("node_id") async for e in resumed if e.get("type") == "multiagent_node_start"}
    assert nodes == {"refunds"}  # only the node that asked runs again
    assert resumed.handled.outcome is Outcome.RESUMED
    assert refunds.runs == ["order-4471"]
