"""A resume whose run raises on the answer leaves the question pending for a corrected answer.

Each host here gates one action behind a question whose answer the gate reads as text
(``answer.lower()``): an object answer makes the run raise while resuming. Without the host's
help the frameworks keep part of that answer (LangGraph saves it as the task's resume value and
hands it back on the next resume; Strands keeps it as the interrupt's response, so the thread
reads as answered) and the thread can never resume; and a raise out of ``handle_message`` makes
a host that acknowledges last get the same failing answer again and again.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.models.test import TestModel
from strands import Agent as StrandsAgent
from strands import tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.session import FileSessionManager

from agent_wait.core import Handled, MemoryAnnounce, Outcome
from agent_wait.langgraph import ahandle_message as langgraph_ahandle_message
from agent_wait.langgraph import handle_message as langgraph_handle_message
from agent_wait.langgraph import wait as langgraph_wait
from agent_wait.pydantic_ai import InMemoryHistory
from agent_wait.pydantic_ai import ahandle_message as pydantic_ai_ahandle_message
from agent_wait.pydantic_ai import handle_message as pydantic_ai_handle_message
from agent_wait.pydantic_ai import wait as pydantic_ai_wait
from agent_wait.strands import ahandle_message as strands_ahandle_message
from agent_wait.strands import handle_message as strands_handle_message
from tests.strands.fake_model import Call, ScriptedModel

THREAD = "order-1"


class Host(Protocol):
    runs: list[str]

    def handle(self, message: dict[str, Any]) -> Handled: ...

    async def ahandle(self, message: dict[str, Any]) -> Handled: ...

    def pending(self) -> set[str]: ...

    async def apending(self) -> set[str]: ...


class _State(TypedDict, total=False):
    order_id: str
    notice: Any


class LangGraphHost:
    """A ``@wait`` function whose body reads the answer as text; SqliteSaver checkpoints."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.runs: list[str] = []

        @langgraph_wait
        def notify_customer(order_id: str, decision: Any = None) -> str:
            self.runs.append(decision.lower())
            return "notified"

        builder = StateGraph(_State)
        builder.add_node("notify", lambda s: {"notice": notify_customer(s["order_id"])})
        builder.add_edge(START, "notify")
        builder.add_edge("notify", END)
        self.graph = builder.compile(checkpointer=saver)
        self.config: Any = {"configurable": {"thread_id": THREAD}}

    def handle(self, message: dict[str, Any]) -> Handled:
        return langgraph_handle_message(self.graph, message, MemoryAnnounce(), strict=True)

    async def ahandle(self, message: dict[str, Any]) -> Handled:
        return await langgraph_ahandle_message(self.graph, message, MemoryAnnounce(), strict=True)

    def pending(self) -> set[str]:
        return {i.id for i in self.graph.get_state(self.config).interrupts}

    async def apending(self) -> set[str]:
        return {i.id for i in (await self.graph.aget_state(self.config)).interrupts}


class PydanticAiHost:
    """A ``@wait`` tool whose body reads the answer as text, on ``TestModel``."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.history = InMemoryHistory()
        agent = Agent(TestModel(), output_type=[str, DeferredToolRequests])

        @agent.tool
        @pydantic_ai_wait
        def notify_customer(ctx: RunContext[None], order_id: str, decision: Any = None) -> str:
            self.runs.append(decision.lower())
            return "notified"

        self.agent = agent

    def handle(self, message: dict[str, Any]) -> Handled:
        return pydantic_ai_handle_message(
            self.agent, message, MemoryAnnounce(), history=self.history, strict=True
        )

    async def ahandle(self, message: dict[str, Any]) -> Handled:
        return await pydantic_ai_ahandle_message(
            self.agent, message, MemoryAnnounce(), history=self.history, strict=True
        )

    def pending(self) -> set[str]:
        requests = self.history.load(THREAD)[-1]
        return {c.tool_call_id for c in getattr(requests, "tool_calls", [])}

    async def apending(self) -> set[str]:
        return self.pending()


class _Guard(HookProvider):
    """A Strands hook that asks before every tool call and reads the answer as text."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.check)

    def check(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt("guard", reason=event.tool_use["input"]).lower() != "ok":
            event.cancel_tool = "not allowed"


class StrandsHost:
    """A guarded tool on ``FileSessionManager`` sessions, a fresh Agent for every message."""

    def __init__(self, sessions: Path) -> None:
        self.runs: list[str] = []
        self.sessions = sessions

        @tool
        def drop_table(table: str) -> str:
            """Drop a table."""
            self.runs.append(table)
            return "dropped"

        self.tool = drop_table

    def agent(self, thread_id: str) -> StrandsAgent:
        return StrandsAgent(
            model=ScriptedModel([Call("drop_table", {"table": "orders"})], "done"),
            tools=[self.tool],
            hooks=[_Guard()],
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )

    def handle(self, message: dict[str, Any]) -> Handled:
        return strands_handle_message(self.agent, message, MemoryAnnounce(), strict=True)

    async def ahandle(self, message: dict[str, Any]) -> Handled:
        return await strands_ahandle_message(self.agent, message, MemoryAnnounce(), strict=True)

    async def apending(self) -> set[str]:
        return self.pending()

    def pending(self) -> set[str]:
        state = self.agent(THREAD)._interrupt_state  # pyright: ignore[reportPrivateUsage]
        return {i.id for i in state.interrupts.values() if state.activated and i.response is None}


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(connection)
    finally:
        connection.close()


HOSTS: dict[str, Callable[[Any, Path], Host]] = {
    "langgraph": lambda saver, path: LangGraphHost(saver),
    "pydantic_ai": lambda saver, path: PydanticAiHost(),
    "strands": lambda saver, path: StrandsHost(path / "sessions"),
}


async def _scenario(
    host: Host,
    handle: Callable[[dict[str, Any]], Awaitable[Handled]],
    pending: Callable[[], Awaitable[set[str]]],
    framework: str,
) -> None:
    started = await handle({"thread_id": THREAD, "input": {"order_id": THREAD}})
    [question_id] = started.question_ids

    wrong = {"thread_id": THREAD, "question_id": question_id, "answer": {"verdict": "ok"}}
    for _ in range(2):  # redelivered, it fails the same way and is reported the same way
        failed = await handle(wrong)
        assert failed.outcome is Outcome.RESUME_FAILED, failed.detail
        assert failed.error is not None
        assert "'dict' object has no attribute 'lower'" in (failed.detail or "")
        assert "still pending" in (failed.detail or "")
        assert await pending() == {question_id}
        assert host.runs == []

    corrected = await handle({"thread_id": THREAD, "question_id": question_id, "answer": "OK"})
    assert corrected.outcome is Outcome.RESUMED, corrected.detail
    assert host.runs == (["orders"] if framework == "strands" else ["ok"])
    assert await pending() == set()


@pytest.mark.parametrize("framework", sorted(HOSTS))
async def test_a_resume_that_raises_leaves_the_question_pending_for_a_corrected_answer(
    framework: str, saver: SqliteSaver, tmp_path: Path
) -> None:
    host = HOSTS[framework](saver, tmp_path)

    async def handle(message: dict[str, Any]) -> Handled:
        # The sync handle_message, off the event loop as a worker would call it.
        return await asyncio.to_thread(host.handle, message)

    async def pending() -> set[str]:
        return await asyncio.to_thread(host.pending)

    await _scenario(host, handle, pending, framework)


@pytest.mark.parametrize("framework", sorted(HOSTS))
async def test_ahandle_message_reports_a_failed_resume_the_same_way(
    framework: str, tmp_path: Path
) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        host = HOSTS[framework](saver, tmp_path)
        await _scenario(host, host.ahandle, host.apending, framework)
