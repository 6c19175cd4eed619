"""Fixtures of the Strands tests: a session directory, an agent factory, a memory inbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.session import FileSessionManager

from agent_wait.core import MemoryAnnounce
from tests.aws_moto import aws, moto_server  # noqa: F401 - fixtures, registered by import
from tests.strands.fake_model import ScriptedModel


class CountingAgent(Agent):
    """A real Agent that records each invocation (sync and async both go through stream_async)."""

    def __init__(self, invocations: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._invocations = invocations

    def stream_async(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self._invocations.append(self.session_id)
        return super().stream_async(*args, **kwargs)


class Tables:
    """A ``drop_table`` tool that records each table it drops in ``runs``."""

    def __init__(self) -> None:
        self.runs: list[str] = []

        @tool
        def drop_table(table: str) -> str:
            """Drop a table."""
            self.runs.append(table)
            return f"dropped {table}"

        self.tool = drop_table


class TextGuard(HookProvider):
    """Asks (interrupt ``name``) before every tool call and reads the answer as text: an object
    makes it raise."""

    def __init__(self, name: str = "guard") -> None:
        self.name = name

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.check)

    def check(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt(self.name, reason=event.tool_use["input"]).lower() != "ok":
            event.cancel_tool = "not allowed"


class Threads:
    """``threads(thread_id)`` builds a fresh Agent on the thread's FileSessionManager session.

    Attributes:
        invocations: The thread id of every agent invocation, in order.
    """

    def __init__(self, model: ScriptedModel, tools: Sequence[Any], storage: Path) -> None:
        self.model = model
        self.tools = list(tools)
        self.storage = storage
        self.invocations: list[str] = []

    def __call__(self, thread_id: str) -> Agent:
        return CountingAgent(
            self.invocations,
            model=self.model,
            tools=self.tools,
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(self.storage)),
            callback_handler=None,
        )


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def inbox() -> MemoryAnnounce:
    return MemoryAnnounce()


@pytest.fixture
def factory(sessions: Path) -> Callable[[ScriptedModel, Sequence[Any]], Threads]:
    """``factory(model, tools)`` gives the :class:`Threads` agent factory of a test."""

    def make(model: ScriptedModel, tools: Sequence[Any]) -> Threads:
        return Threads(model, tools, sessions)

    return make
