"""A Pydantic AI agent's tool calls the booking server through the bridge, parking with ``park``.

The agent runs on a scripted ``FunctionModel`` under the Pydantic AI host (``ahandle_message``),
the server in its own stdio process. The elicitation parks the run on ``ApprovalRequired``; the
answer message resumes it, the tool runs again and the bridge hands the answer to the server.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agent_wait.pydantic_ai", reason="needs agent-wait-pydantic-ai installed")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from agent_wait.core import AnswerTrust, MemoryAnnounce, Outcome
from agent_wait.mcp import ElicitationBridge
from agent_wait.pydantic_ai import InMemoryHistory, ahandle_message, park
from tests.pydantic_ai.scripted import Script, seen_by_model

ROOT = Path(__file__).resolve().parents[2]
THREAD = "trip-12"


def booking_agent(log: Path, mode: str) -> Agent[None, Any]:
    agent = Agent(
        Script(("book_room", {"city": "Rome"})).model, output_type=[str, DeferredToolRequests]
    )

    @agent.tool
    async def book_room(ctx: RunContext[None], city: str) -> str:
        """Book a hotel room in a city."""
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tests.mcp.booking_server", str(log)],
            cwd=str(ROOT),
        )
        bridge = ElicitationBridge(functools.partial(park, ctx), server="booking")
        result = await bridge.call_tool(Client(server, mode=mode), "book_room", {"city": city})
        return "".join(block.text for block in result.content if block.type == "text")

    return agent


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize(
    ("answer", "reply", "booked"),
    [
        (
            {"action": "accept", "content": {"name": "Ada", "nights": 3}},
            "booked 3 nights in Rome for Ada",
            {"city": "Rome", "action": "accept", "name": "Ada", "nights": 3},
        ),
        ({"action": "decline"}, "not booked: decline", {"city": "Rome", "action": "decline"}),
    ],
)
async def test_the_elicitation_parks_the_run_and_the_answer_reaches_the_server(
    mode: str, answer: dict[str, Any], reply: str, booked: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    agent = booking_agent(log, mode)
    inbox, history = MemoryAnnounce(), InMemoryHistory()

    started = await ahandle_message(
        agent, {"thread_id": THREAD, "input": "book Rome"}, inbox, history=history
    )

    assert started.outcome is Outcome.STARTED
    (envelope,) = inbox.envelopes
    assert envelope.question == {
        "text": "Who is staying in Rome, and for how many nights?",
        "server": "booking",
        "tool": "book_room",
    }
    assert envelope.allowed_actions == ["accept", "decline", "cancel"]
    assert envelope.answer_schema is not None
    assert envelope.answer_schema["then"]["properties"]["content"]["required"] == [
        "name",
        "nights",
    ]
    # Under the older protocol the asking call ran and was cancelled; nothing was booked.
    assert [entry["action"] for entry in received(log)] == (["cancel"] if mode == "legacy" else [])

    resumed = await ahandle_message(
        agent, {**envelope.reply_with.model_dump(), "answer": answer}, inbox, history=history
    )

    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert received(log)[-1] == booked
    assert seen_by_model(resumed.result.output)[envelope.question_id]["content"] == reply


async def test_an_answer_outside_the_requested_schema_is_refused_and_the_run_stays_parked(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    agent = booking_agent(log, "2026-07-28")
    inbox, history = MemoryAnnounce(), InMemoryHistory()
    trust = AnswerTrust(strict_actions=True)
    await ahandle_message(
        agent, {"thread_id": THREAD, "input": "book"}, inbox, history=history, trust=trust
    )
    (envelope,) = inbox.envelopes
    reply_with = envelope.reply_with.model_dump()

    refused = await ahandle_message(
        agent,
        {**reply_with, "answer": {"action": "accept", "content": {"name": "Ada"}}},
        inbox,
        history=history,
        trust=trust,
    )

    assert refused.outcome is Outcome.INVALID_ANSWER
    assert "'nights' is a required property" in (refused.detail or "")
    assert received(log) == []
    done = await ahandle_message(
        agent, {**reply_with, "answer": {"action": "cancel"}}, inbox, history=history, trust=trust
    )
    assert done.outcome is Outcome.RESUMED
    assert received(log) == [{"city": "Rome", "action": "cancel"}]


def test_parking_on_a_value_that_is_no_question_is_refused_naming_its_keys() -> None:
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())

    with pytest.raises(ValueError, match=r"value: not a parked question .* got keys \['text'\]"):
        park(ctx, {"text": "Who is staying?"})
