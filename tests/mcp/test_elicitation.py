"""MCP elicitations as agent-wait questions, end to end in separate processes.

A background LangGraph agent (tests/mcp/booking_agent.py) calls an MCP tool in a real MCP server
process (tests/mcp/booking_server.py) that asks for a form; the question is in
``agent-wait inbox``, a person answers with ``agent-wait answer``, and the tool call completes
with the answer. Both protocols: 2026-07-28 (multi round-trip) and the older
``elicitation/create`` request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from tests.serving import until

pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who is staying in Oslo, and for how many nights?"
MODES = ["2026-07-28", "legacy"]


@pytest.fixture(params=MODES)
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """The agent worker in its own process, negotiating the given protocol; its workdir."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.booking_agent", str(tmp_path), request.param],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield tmp_path
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
        assert "Traceback" not in err, err


def agent_wait(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_wait.host._cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )


def ask(thread_id: str) -> dict[str, Any]:
    """Start a run on ``thread_id``; the inbox's listing of the question it parks on."""
    with SqliteEntry() as entry:
        entry.send(
            {
                "thread_id": thread_id,
                "input": {"messages": [{"role": "user", "content": "A room in Oslo, please."}]},
            }
        )

    def open_question() -> bool:
        if not default_inbox_path().exists():
            return False
        with SqliteQuestionStore() as store:
            return any(q.envelope.thread_id == thread_id for q in store.open_questions())

    until(open_question, "the elicitation to reach the inbox")
    listed = agent_wait("inbox", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "request_state" not in listed.stdout  # kept with the parked run, never shown
    (item,) = [i for i in json.loads(listed.stdout) if i["envelope"]["thread_id"] == thread_id]
    return item["envelope"]


def finished(workdir: Path) -> tuple[str, dict[str, Any]]:
    """The tool's result in the agent, and what the MCP tool received last."""
    results = workdir / "results.log"
    until(lambda: results.exists() and results.read_text(), "the tool call to complete")
    received = (workdir / "server.log").read_text().splitlines()
    return results.read_text().strip(), json.loads(received[-1])


def test_a_form_is_an_inbox_question_and_its_json_answer_completes_the_tool_call(
    agent: Path,
) -> None:
    envelope = ask("booking-accept")

    assert envelope["question"] == {"text": QUESTION, "server": "booking", "tool": "book_room"}
    assert envelope["allowed_actions"] == ["accept", "decline", "cancel"]
    schema = envelope["answer_schema"]
    assert schema["properties"]["action"] == {"enum": ["accept", "decline", "cancel"]}
    assert schema["then"]["properties"]["content"]["required"] == ["name", "nights"]
    assert envelope["context"]["tool"] == "book_room"

    answered = agent_wait(
        "answer",
        envelope["question_id"],
        "--json",
        '{"action": "accept", "content": {"name": "Ada", "nights": 2}}',
    )

    assert answered.returncode == 0, answered.stderr
    result, received = finished(agent)
    assert result == "booked 2 nights in Oslo for Ada"
    assert received == {"city": "Oslo", "action": "accept", "name": "Ada", "nights": 2}


def test_a_decline_reaches_the_tool_as_a_decline(agent: Path) -> None:
    envelope = ask("booking-decline")

    answered = agent_wait("answer", envelope["question_id"], "decline")

    assert answered.returncode == 0, answered.stderr
    result, received = finished(agent)
    assert result == "not booked: decline"
    assert received == {"city": "Oslo", "action": "decline"}


# The answer check is the CLI's, the same for both protocols.
@pytest.mark.parametrize("agent", ["2026-07-28"], indirect=True)
def test_an_out_of_schema_answer_is_refused_at_answer_time_and_the_question_stays_open(
    agent: Path,
) -> None:
    envelope = ask("booking-refused")
    question_id = envelope["question_id"]

    refused = agent_wait(
        "answer", question_id, "--json", '{"action": "accept", "content": {"name": "Ada"}}'
    )
    forged = agent_wait("answer", question_id, "--json", '{"action": "approve"}')

    assert refused.returncode == 1
    assert "answer.content" in refused.stderr, refused.stderr
    assert "nights" in refused.stderr, refused.stderr
    assert forged.returncode == 1
    assert "approve" in forged.stderr, forged.stderr
    with SqliteQuestionStore() as store:
        (stored,) = store.find(question_id)
        assert stored.is_open
    assert not (agent / "results.log").exists()

    answered = agent_wait(
        "answer", question_id, "accept", "--answer", '{"content": {"name": "Bo", "nights": 1}}'
    )

    assert answered.returncode == 0, answered.stderr
    assert finished(agent)[0] == "booked 1 nights in Oslo for Bo"
