"""A background LangGraph agent process whose tool calls an MCP server that asks for a form.

``python -m tests.mcp.booking_agent WORKDIR MODE``: ``aserve`` over the embedded entry point,
questions in the default inbox, checkpoints in WORKDIR. The scripted model calls ``book_room``
once per thread; the tool calls the booking server (its own process, over stdio) through an
``ElicitationBridge`` parked on LangGraph's ``interrupt``. MODE is the MCP protocol the client
negotiates: ``2026-07-28`` (multi round-trip) or ``legacy`` (``elicitation/create``). The
server's log is WORKDIR/server.log; every tool result is a line of WORKDIR/results.log.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import interrupt
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from agent_wait.core import SqliteAnnounce, SqliteEntry
from agent_wait.langgraph import aserve
from agent_wait.mcp import ElicitationBridge
from tests.langgraph.conftest import calls, model


async def main(workdir: Path, mode: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.mcp.booking_server", str(workdir / "server.log")],
    )

    @tool
    async def book_room(city: str) -> str:
        """Book a hotel room in a city."""
        bridge = ElicitationBridge(interrupt, server="booking")
        result = await bridge.call_tool(Client(server, mode=mode), "book_room", {"city": city})
        text = "".join(c.text for c in result.content if c.type == "text")
        with (workdir / "results.log").open("a") as out:
            out.write(text + "\n")
        return text

    async with AsyncSqliteSaver.from_conn_string(str(workdir / "checkpoints.sqlite3")) as saver:
        graph = create_agent(
            model(calls(("book_room", {"city": "Oslo"})), AIMessage("done")),
            [book_room],
            checkpointer=saver,
        )
        entry = SqliteEntry(visibility_timeout=30.0, poll_interval=0.05)
        await aserve(graph, entry, SqliteAnnounce(), wait=0.2)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
