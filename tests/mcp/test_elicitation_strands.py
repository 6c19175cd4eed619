"""A Strands agent's tool calls the booking server through the bridge, parking with ``park``.

The agent runs on the scripted model under the Strands host (``ahandle_message``, a file
session per thread), the server in its own stdio process. The elicitation parks the run on a
Strands interrupt; the answer message resumes it through a fresh agent, the tool runs again
and the bridge hands the answer to the server.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agent_wait.strands", reason="needs agent-wait-strands installed")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from strands import Agent, ToolContext, tool
from strands.session import FileSessionManager

from agent_wait.core import AnswerTrust, MemoryAnnounce, Outcome
from agent_wait.mcp import ElicitationBridge
from agent_wait.strands import ahandle_message, park
from tests.strands.fake_model import Call, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
THREAD = "trip-12"


class Booking:
    """``threads(thread_id)``: a fresh agent with a ``book_room`` tool on the thread's session."""

    def __init__(self, log: Path, mode: str, sessions: Path) -> None:
        self.model = ScriptedModel([Call("book_room", {"city": "Rome"})])
        self.sessions = sessions

        @tool(context=True)
        async def book_room(city: str, tool_context: ToolContext) -> str:
            """Book a hotel room in a city."""
            server = StdioServerParameters(
                command=sys.executable,
                args=["-m", "tests.mcp.booking_server", str(log)],
                cwd=str(ROOT),
            )
            bridge = ElicitationBridge(functools.partial(park, tool_context), server="booking")
            result = await bridge.call_tool(Client(server, mode=mode), "book_room", {"city": city})
            return "".join(block.text for block in result.content if block.type == "text")

        self.tool = book_room

    def __call__(self, thread_id: str) -> Agent:
        return Agent(
            model=self.model,
            tools=[self.tool],
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )


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
    threads = Booking(log, mode, tmp_path / "sessions")
    inbox = MemoryAnnounce()

    started = await ahandle_message(threads, {"thread_id": THREAD, "input": "book Rome"}, inbox)

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
    assert [entry["action"] for entry in received(log)] == (["cancel"] if mode == "legacy" else [])

    resumed = await ahandle_message(
        threads, {**envelope.reply_with.model_dump(), "answer": answer}, inbox
    )

    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert received(log)[-1] == booked
    assert [seen["text"] for seen in threads.model.tool_results] == [reply]


async def test_an_answer_outside_the_requested_schema_is_refused_and_the_run_stays_parked(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    threads = Booking(log, "2026-07-28", tmp_path / "sessions")
    inbox, trust = MemoryAnnounce(), AnswerTrust(strict_actions=True)
    await ahandle_message(threads, {"thread_id": THREAD, "input": "book"}, inbox, trust=trust)
    (envelope,) = inbox.envelopes
    reply_with = envelope.reply_with.model_dump()

    refused = await ahandle_message(
        threads,
        {**reply_with, "answer": {"action": "accept", "content": {"name": "Ada"}}},
        inbox,
        trust=trust,
    )

    assert refused.outcome is Outcome.INVALID_ANSWER
    assert "'nights' is a required property" in (refused.detail or "")
    assert received(log) == []
    done = await ahandle_message(
        threads, {**reply_with, "answer": {"action": "cancel"}}, inbox, trust=trust
    )
    assert done.outcome is Outcome.RESUMED
    assert received(log) == [{"city": "Rome", "action": "cancel"}]


def test_parking_on_a_value_that_is_no_question_is_refused_naming_its_keys(tmp_path: Path) -> None:
    agent = Booking(tmp_path / "log", "2026-07-28", tmp_path / "sessions")(THREAD)
    context = ToolContext(
        tool_use={"toolUseId": "call-1", "name": "book_room", "input": {}},
        agent=agent,
        invocation_state={},
    )

    with pytest.raises(ValueError, match=r"value: not a parked question .* got keys \['text'\]"):
        park(context, {"text": "Who is staying?"})
