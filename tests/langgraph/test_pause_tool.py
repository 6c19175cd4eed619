"""pause_tool: the agent_wait pause as a LangChain tool in create_agent, on the shared policy."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import TimeoutPolicy

from agent_wait.langgraph import pause_tool
from agent_wait.pause import INPUT_SCHEMA, PauseLimits, PausePolicy
from tests.langgraph.conftest import calls, model
from tests.pause_clock import THREE_BEATS, ConsumerPaced, FakeClock

WAIT = ("agent_wait", {"seconds": 90, "user_message": "Waiting for the export.", "reason": "drain"})


def tool_results(state: dict[str, object]) -> list[dict[str, object]]:
    messages = state["messages"]
    assert isinstance(messages, list)
    return [json.loads(m.content) for m in messages if isinstance(m, ToolMessage)]


def test_create_agent_pauses_clipped_then_refused_by_the_call_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(max_seconds_per_call=30, max_calls_per_turn=1), clock=clock)
    tool = pause_tool(policy, sleep=clock.sleep, asleep=clock.asleep)
    assert tool.name == "agent_wait"
    assert tool.args == INPUT_SCHEMA["properties"]
    agent = create_agent(
        model(calls(WAIT), calls(WAIT), AIMessage("export done")),
        [tool],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t-1", "user_id": "u-1", "turn_id": "m-1"}}

    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        state = agent.invoke({"messages": [("user", "export it")]}, config)

    first, second = tool_results(state)
    assert first["granted_seconds"] == 30
    assert first["clipped_by"] == "per_call"
    assert first["waited_seconds"] == 30
    assert second["refused"] == "calls_per_turn"
    assert "AGENT_WAIT_MAX_CALLS_PER_TURN" in second["message"]
    assert clock.slept == [1] * 30  # slept beat by beat (a heartbeat every second)
    assert state["messages"][-1].content == "export done"
    # The host named the user and the turn in the config; the model never could.
    assert "outcome=completed user='u-1' turn='m-1' requested=90 granted=30" in caplog.text
    assert "outcome=refused code=calls_per_turn user='u-1' turn='m-1'" in caplog.text


async def test_async_agent_charges_the_thread_when_no_user_is_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(max_seconds_per_call=5), clock=clock)
    agent = create_agent(
        model(calls(("agent_wait", {"seconds": 2, "user_message": "x"})), AIMessage("ok")),
        [pause_tool(policy, sleep=clock.sleep, asleep=clock.asleep)],
        checkpointer=InMemorySaver(),
    )
    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        state = await agent.ainvoke(
            {"messages": [("user", "wait")]}, {"configurable": {"thread_id": "t-9"}}
        )
    [result] = tool_results(state)
    assert result["granted_seconds"] == 2
    assert "clipped_by" not in result
    assert "user='thread:t-9' turn=None" in caplog.text


def test_bad_arguments_reach_the_model_as_a_refusal_naming_the_field() -> None:
    clock = FakeClock()
    agent = create_agent(
        model(calls(("agent_wait", {"seconds": 0, "user_message": "x"})), AIMessage("ok")),
        [pause_tool(PausePolicy(clock=clock), sleep=clock.sleep)],
    )
    state = agent.invoke({"messages": [("user", "wait")]})
    [result] = tool_results(state)
    assert result["refused"] == "invalid_input"
    assert "seconds must be a whole number from 1" in str(result["message"])
    assert clock.slept == []


def test_the_policy_comes_from_the_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_MAX_SECONDS_PER_CALL", "7")
    assert "at most 7 s per call" in pause_tool().description
    monkeypatch.setenv("AGENT_WAIT_MAX_SECONDS_PER_CALL", "seven")
    with pytest.raises(ValueError, match="AGENT_WAIT_MAX_SECONDS_PER_CALL='seven'"):
        pause_tool()


EXPORT = ("agent_wait", {"seconds": 3, "user_message": "Waiting for the export."})


def test_a_custom_stream_gets_the_heartbeats_while_the_agent_waits() -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=1000), clock=clock)
    paced = ConsumerPaced(clock)
    agent = create_agent(
        model(calls(EXPORT), AIMessage("export done")), [pause_tool(policy, sleep=paced.sleep)]
    )
    beats: list[dict[str, object]] = []
    for mode, chunk in agent.stream(
        {"messages": [("user", "export it")]}, stream_mode=["custom", "updates"]
    ):
        if mode == "custom":
            beats.append(chunk)
            paced.received()

    assert paced.missed == []
    assert [(b["progress"], b["remaining_seconds"], b["total"]) for b in beats] == THREE_BEATS
    assert {(b["type"], b["message"]) for b in beats} == {
        ("agent_wait.heartbeat", "Waiting for the export.")
    }
    assert clock.slept == [1, 1, 1]


async def test_an_async_custom_stream_gets_the_heartbeats_while_the_agent_waits() -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=1000), clock=clock)
    paced = ConsumerPaced(clock)
    agent = create_agent(
        model(calls(EXPORT), AIMessage("export done")), [pause_tool(policy, asleep=paced.asleep)]
    )
    progress: list[object] = []
    async for mode, chunk in agent.astream(
        {"messages": [("user", "export it")]}, stream_mode=["custom", "updates"]
    ):
        if mode == "custom":
            progress.append(chunk["progress"])
            paced.received()

    assert paced.missed == []
    assert progress == [0, 1, 2]


def test_outside_a_graph_the_tool_waits_in_one_sleep() -> None:
    clock = FakeClock()
    tool = pause_tool(PausePolicy(clock=clock), sleep=clock.sleep)
    result = tool.invoke({"seconds": 3, "user_message": "x"})
    assert result["waited_seconds"] == 3
    assert clock.slept == [3]  # no graph, no stream: no heartbeats


async def test_a_node_idle_timeout_counts_the_wait_as_progress() -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=1000), clock=clock)

    async def asleep(seconds: float) -> None:
        await asyncio.sleep(0.1)  # each second of the wait takes 0.1 s here: 1 s in all
        clock.sleep(seconds)

    builder = StateGraph(MessagesState)
    builder.add_node(
        "tools",
        ToolNode([pause_tool(policy, asleep=asleep)]),
        # Idle for longer than 0.8 s: timed out, unless something reports progress.
        timeout=TimeoutPolicy(idle_timeout=0.8, refresh_on="heartbeat"),
    )
    builder.add_edge(START, "tools")
    call = {"name": "agent_wait", "args": {"seconds": 10, "user_message": "x"}, "id": "c-1"}
    state = await builder.compile().ainvoke({"messages": [AIMessage("", tool_calls=[call])]})
    [result] = tool_results(state)
    assert result["waited_seconds"] == 10
