"""stream_message / astream_message: the Strands host over stream_async, agent and Swarm."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.session import FileSessionManager

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.strands import astream_message, handle_message, stream_message
from tests.strands.conftest import Tables, TextGuard, Threads
from tests.strands.fake_model import Call, ScriptedModel
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


def test_sync_agent_stream_parks_publishes_and_resumes(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)

    started = stream_message(threads, start(), inbox)
    events = list(started)
    assert started.handled.outcome is Outcome.STARTED
    assert events[-1]["result"].stop_reason == "interrupt"
    assert any("current_tool_use" in e for e in events)
    [envelope] = started.handled.report.envelopes
    assert envelope.question["function"] == "issue_refund"
    assert tools.runs == []

    again = stream_message(threads, start(), inbox)
    assert list(again) == []
    assert again.handled.outcome is Outcome.REPUBLISHED

    resumed = stream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    text = "".join(e["data"] for e in resumed if "data" in e)
    assert text == "done: refunded 41000"
    assert resumed.handled.outcome is Outcome.RESUMED
    assert not resumed.handled.parked
    assert tools.runs == ["refund order-4471 41000"]

    late = stream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert list(late) == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert tools.runs == ["refund order-4471 41000"]


def test_sync_swarm_stream_names_the_node_of_each_event(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    refunds = Refunds()
    threads = SwarmThreads(sessions, refunds)

    started = stream_message(threads, {"thread_id": "s-1", "input": "refund"}, inbox)
    nodes = {e.get("node_id") for e in started if e.get("type") == "multiagent_node_start"}
    assert nodes == {"triage", "refunds"}
    [envelope] = started.handled.report.envelopes

    resumed = stream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    nodes = {e.get("node_id") for e in resumed if e.get("type") == "multiagent_node_start"}
    assert nodes == {"refunds"}
    assert resumed.handled.outcome is Outcome.RESUMED
    assert refunds.runs == ["order-4471"]


def test_a_sync_stream_runs_only_as_iterated_and_a_break_leaves_the_question_pending(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    [envelope] = handle_message(threads, start(), inbox).report.envelopes

    for _ in stream_message(threads, reply(envelope, {"action": "approve"}), inbox):
        break  # the first event: Strands has not reached the tool yet, and goes no further
    assert tools.runs == []
    assert inbox.question_ids == [envelope.question_id]  # nothing published

    # Strands saved the interrupt with its response when the stream closed; the host cleared
    # it, so the same answer resumes the thread instead of reading as a duplicate.
    resumed = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000"]


async def test_an_async_stream_closed_early_leaves_the_question_pending(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    [envelope] = handle_message(threads, start(), inbox).report.envelopes

    run = astream_message(threads, reply(envelope, {"action": "approve"}), inbox)
    async with aclosing(aiter(run)) as events:
        async for _ in events:
            break
    assert tools.runs == []

    resumed = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000"]


def test_a_sync_stream_whose_resume_raises_is_a_failed_resume_still_pending(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    tables = Tables()

    def agent_for(thread_id: str) -> Agent:
        return Agent(
            model=ScriptedModel([Call("drop_table", {"table": "orders"})]),
            tools=[tables.tool],
            hooks=[TextGuard()],
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(sessions)),
            callback_handler=None,
        )

    started = stream_message(agent_for, start("t-guard"), inbox)
    list(started)
    [envelope] = started.handled.report.envelopes

    failed = stream_message(agent_for, reply(envelope, {"verdict": "ok"}), inbox)
    list(failed)  # the hook's error, raised in Strands' loop thread, is the outcome here
    assert failed.handled.outcome is Outcome.RESUME_FAILED
    assert "'dict' object has no attribute 'lower'" in (failed.handled.detail or "")
    assert tables.runs == []

    resumed = stream_message(agent_for, reply(envelope, "OK"), inbox)
    list(resumed)
    assert resumed.handled.outcome is Outcome.RESUMED
    assert tables.runs == ["orders"]


REQUEST = contextvars.ContextVar[str]("REQUEST")


def test_a_sync_stream_runs_in_the_callers_context(sessions: Path, inbox: MemoryAnnounce) -> None:
    seen: list[str] = []

    @tool
    def whoami() -> str:
        """Name the request."""
        seen.append(REQUEST.get("unset"))
        return "ok"

    def agent_for(thread_id: str) -> Agent:
        return Agent(model=ScriptedModel([Call("whoami")]), tools=[whoami], callback_handler=None)

    REQUEST.set("req-7")
    run = stream_message(agent_for, start("t-context"), inbox)
    list(run)
    assert run.handled.outcome is Outcome.STARTED
    assert seen == ["req-7"]
