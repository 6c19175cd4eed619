"""Fixtures of the Strands tests: a session directory, an agent factory, a memory inbox."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from strands.session import FileSessionManager
from tests.strands.fake_model import ScriptedModel

from agent_wait.core import MemoryAnnounce
from strands import Agent

AgentFactory = Callable[[str], Agent]


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def inbox() -> MemoryAnnounce:
    return MemoryAnnounce()


@pytest.fixture
def factory(sessions: Path) -> Callable[[ScriptedModel, Sequence[Any]], AgentFactory]:
    """``factory(model, tools)(thread_id)`` builds a fresh Agent on the thread's file session."""

    def make(model: ScriptedModel, tools: Sequence[Any]) -> AgentFactory:
        def agent_for(thread_id: str) -> Agent:
            return Agent(
                model=model,
                tools=list(tools),
                session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(sessions)),
                callback_handler=None,
            )

        return agent_for

    return make
