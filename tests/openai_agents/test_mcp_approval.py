"""``require_approval`` on a local MCP server (stdio, the mcp SDK's own server) parks the run,
and the answer resumes it: the server runs the call once, a duplicate answer runs nothing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from agents import Agent
from agents.mcp import MCPServerStdio

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.openai_agents import InMemoryRuns, ahandle_message
from tests.openai_agents.scripted import ScriptedModel

SERVER = Path(__file__).with_name("mcp_refunds.py")
REFUND = {"order_id": "order-4471", "amount": 41000}


def server(effects: Path, approval: Any) -> MCPServerStdio:
    params = {
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {"REFUNDS_FILE": str(effects), "PATH": ""},
    }
    return MCPServerStdio(params, require_approval=approval, cache_tools_list=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("approval", ["always", {"always": {"tool_names": ["issue_refund"]}}])
def test_an_mcp_call_that_needs_approval_parks_and_an_approval_runs_it_once(
    tmp_path: Path, approval: Any
) -> None:
    effects = tmp_path / "refunds.txt"
    effects.touch()

    async def scenario() -> None:
        inbox, runs = MemoryAnnounce(), InMemoryRuns()
        async with server(effects, approval) as mcp:
            agent = Agent(
                "refunds", model=ScriptedModel("issue_refund", [REFUND]), mcp_servers=[mcp]
            )
            started = await ahandle_message(
                agent, {"thread_id": "mcp-1", "input": "refund"}, inbox, runs=runs
            )
            assert started.outcome is Outcome.STARTED, started.detail
            [envelope] = inbox.envelopes
            assert envelope.question == {"function": "issue_refund", "args": REFUND}
            assert envelope.context is not None
            assert envelope.context.tool_call_id == "call-0"
            assert effects.read_text() == "", "the server ran the call before the approval"

            answer = {"thread_id": "mcp-1", "question_id": envelope.question_id, "answer": True}
            resumed = await ahandle_message(agent, answer, inbox, runs=runs)
            assert resumed.outcome is Outcome.RESUMED, resumed.detail
            assert resumed.result.final_output == "done"
            assert effects.read_text() == "order-4471 41000\n"

            again = await ahandle_message(agent, answer, inbox, runs=runs)
            assert again.outcome is Outcome.DUPLICATE
            assert effects.read_text() == "order-4471 41000\n"

    asyncio.run(scenario())


def test_a_rejected_mcp_call_never_reaches_the_server(tmp_path: Path) -> None:
    effects = tmp_path / "refunds.txt"
    effects.touch()

    async def scenario() -> None:
        inbox, runs = MemoryAnnounce(), InMemoryRuns()
        async with server(effects, "always") as mcp:
            model = ScriptedModel("issue_refund", [REFUND])
            agent = Agent("refunds", model=model, mcp_servers=[mcp])
            await ahandle_message(agent, {"thread_id": "mcp-2", "input": "go"}, inbox, runs=runs)
            [envelope] = inbox.envelopes
            no = {"action": "reject", "reason": "over the limit"}
            answer = {"thread_id": "mcp-2", "question_id": envelope.question_id, "answer": no}
            done = await ahandle_message(agent, answer, inbox, runs=runs)
            assert done.outcome is Outcome.RESUMED, done.detail
            outputs = [
                i["output"] for i in model.inputs[-1] if i.get("type") == "function_call_output"
            ]
            assert outputs == ["over the limit"]
        assert effects.read_text() == ""

    asyncio.run(scenario())
