"""pause_tool: the agent_wait pause as a Pydantic AI tool, on the shared policy."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest
from pydantic_ai import Agent, RunContext

from agent_wait.pause import INPUT_SCHEMA, PauseLimits, PausePolicy
from agent_wait.pydantic_ai import PauseHeartbeatEvent, pause_tool
from tests.pause_clock import THREE_BEATS, ConsumerPaced, FakeClock
from tests.pydantic_ai.scripted import Script, seen_by_model

WAIT = {"seconds": 90, "user_message": "Waiting for the export."}


def test_each_run_is_a_turn_and_the_caps_apply(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(max_seconds_per_call=30, max_calls_per_turn=1), clock=clock)
    script = Script(("agent_wait", WAIT), ("agent_wait", WAIT))
    agent = Agent(script.model, tools=[pause_tool(policy, sleep=clock.asleep)])

    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        seen = seen_by_model(agent.run_sync("export it").output)
    first, second = seen["agent_wait-1-0"]["content"], seen["agent_wait-1-1"]["content"]
    # One of the two parallel calls was admitted and clipped; the other hit the call cap.
    admitted, refused = (first, second) if "granted_seconds" in first else (second, first)
    assert admitted["granted_seconds"] == 30
    assert admitted["clipped_by"] == "per_call"
    assert refused["refused"] == "calls_per_turn"
    assert clock.slept == [1] * 30  # slept beat by beat (a heartbeat every second)
    assert script.schemas["agent_wait"] == INPUT_SCHEMA
    assert "user='anonymous' turn=" in caplog.text

    # The next run is a new turn: one of its calls is admitted again.
    seen = seen_by_model(agent.run_sync("again").output)
    second_run = [seen["agent_wait-2-0"]["content"], seen["agent_wait-2-1"]["content"]]
    assert sorted("granted_seconds" in c for c in second_run) == [False, True]
    assert clock.slept == [1] * 60


@dataclass
class Deps:
    user_id: str
    turn_id: str


def test_identity_from_deps_and_invalid_arguments(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()

    def identity(ctx: RunContext[Deps]) -> tuple[str | None, str | None]:
        return ctx.deps.user_id, ctx.deps.turn_id

    script = Script(
        ("agent_wait", {"seconds": "soon", "user_message": "x"}),
        ("agent_wait", {"seconds": 3, "user_message": "x"}),
    )
    agent = Agent(
        script.model,
        deps_type=Deps,
        tools=[pause_tool(PausePolicy(clock=clock), identity=identity, sleep=clock.asleep)],
    )
    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        seen = seen_by_model(agent.run_sync("wait", deps=Deps("u-1", "m-1")).output)
    bad, good = seen["agent_wait-1-0"]["content"], seen["agent_wait-1-1"]["content"]
    assert bad["refused"] == "invalid_input"
    assert "seconds must be a whole number" in bad["message"]
    assert good["granted_seconds"] == 3
    assert "outcome=completed user='u-1' turn='m-1' requested=3 granted=3" in caplog.text
    assert clock.slept == [1, 1, 1]


async def test_the_event_stream_gets_the_heartbeats_while_the_agent_waits() -> None:
    clock = FakeClock()
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=1000), clock=clock)
    paced = ConsumerPaced(clock)

    script = Script(("agent_wait", {"seconds": 3, "user_message": "Waiting for the export."}))
    agent = Agent(script.model, tools=[pause_tool(policy, sleep=paced.asleep)])
    beats: list[PauseHeartbeatEvent] = []
    async with agent.run_stream_events("export it") as events:
        async for event in events:
            if isinstance(event, PauseHeartbeatEvent):
                beats.append(event)
                paced.received()

    assert paced.missed == []
    assert [(b.progress, b.remaining_seconds, b.total) for b in beats] == THREE_BEATS
    assert {(b.name, b.message, b.tool_name) for b in beats} == {
        ("agent_wait.heartbeat", "Waiting for the export.", "agent_wait")
    }
    assert {b.tool_call_id for b in beats} == {"agent_wait-1-0"}
    assert clock.slept == [1, 1, 1]
