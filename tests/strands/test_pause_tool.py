"""pause_tool: the agent_wait pause as a Strands tool, on the shared policy."""

from __future__ import annotations

import json
import logging

import pytest
from strands import Agent

from agent_wait.pause import INPUT_SCHEMA, PauseLimits, PausePolicy
from agent_wait.strands import pause_tool
from tests.pause_clock import THREE_BEATS, ConsumerPaced, FakeClock
from tests.strands.fake_model import Call, ScriptedModel

WAIT = Call("agent_wait", {"seconds": 90, "user_message": "Waiting for the export."})


def test_the_agent_pauses_clipped_then_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(max_seconds_per_call=30, max_calls_per_turn=1), clock=clock)
    model = ScriptedModel([WAIT], [WAIT], "export done")
    tool = pause_tool(policy, sleep=clock.asleep)
    assert tool.tool_spec["inputSchema"] == {"json": INPUT_SCHEMA}
    agent = Agent(model=model, tools=[tool], callback_handler=None)

    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        result = agent("export it", invocation_state={"user_id": "u-1", "turn_id": "m-1"})

    assert str(result).strip() == "export done"
    first, second = (json.loads(r["text"]) for r in model.tool_results)
    assert [r["status"] for r in model.tool_results] == ["success", "error"]
    assert first["granted_seconds"] == 30
    assert first["clipped_by"] == "per_call"
    assert second["refused"] == "calls_per_turn"
    assert clock.slept == [1] * 30  # slept beat by beat (a heartbeat every second)
    assert "outcome=completed user='u-1' turn='m-1' requested=90 granted=30" in caplog.text


def test_without_a_named_user_the_session_is_charged(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    model = ScriptedModel([Call("agent_wait", {"seconds": 2}), WAIT])
    agent = Agent(
        model=model,
        tools=[pause_tool(PausePolicy(clock=clock), sleep=clock.asleep)],
        callback_handler=None,
    )
    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        agent("wait")
    refusal, admitted = model.tool_results
    assert refusal["status"] == "error"
    assert json.loads(refusal["text"])["refused"] == "invalid_input"
    assert "outcome=invalid field=user_message" in caplog.text
    assert json.loads(admitted["text"])["granted_seconds"] == 90
    assert f"user='session:{agent.session_id}' turn=None requested=90" in caplog.text
    assert clock.slept == [1] * 90


async def test_stream_async_yields_the_heartbeats_while_the_agent_waits() -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=1000), clock=clock)
    paced = ConsumerPaced(clock)

    model = ScriptedModel(
        [Call("agent_wait", {"seconds": 3, "user_message": "Waiting for the export."})],
        "export done",
    )
    agent = Agent(
        model=model, tools=[pause_tool(policy, sleep=paced.asleep)], callback_handler=None
    )
    beats: list[dict[str, object]] = []
    async for event in agent.stream_async("export it"):
        if event.get("type") == "tool_stream":
            stream = event["tool_stream_event"]
            assert stream["tool_use"]["name"] == "agent_wait"
            beats.append(stream["data"])
            paced.received()

    assert paced.missed == []
    assert [(b["progress"], b["remaining_seconds"], b["total"]) for b in beats] == THREE_BEATS
    assert {(b["type"], b["message"]) for b in beats} == {
        ("agent_wait.heartbeat", "Waiting for the export.")
    }
    [result] = model.tool_results
    assert result["status"] == "success"
    assert json.loads(result["text"])["waited_seconds"] == 3  # the result, not a heartbeat
