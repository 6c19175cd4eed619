"""The host reads a FileSessionManager agent record's two parts it needs: read_agent's values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from strands.session import FileSessionManager
from strands.types.session import SessionAgent

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.strands import handle_message
from agent_wait.strands._host import (
    _agent_record,  # pyright: ignore[reportPrivateUsage]
    _plain_file_repository,  # pyright: ignore[reportPrivateUsage]
)
from tests.strands.conftest import Threads
from tests.strands.fake_model import ScriptedModel
from tests.strands.test_host import DELETE, REFUND, Tools, only_envelope, reply, start

THREAD = "order-4471"


def through_read_agent(repository: FileSessionManager) -> Any:
    record = repository.read_agent(THREAD, "default")
    return None if record is None else (record.state, record._internal_state)  # pyright: ignore[reportPrivateUsage]


def check_agrees(repository: FileSessionManager) -> Any:
    assert _plain_file_repository(repository)
    read = _agent_record(repository, THREAD, "default")
    assert read == through_read_agent(repository)
    return read


def test_parked_answered_and_finished_records(sessions: Path, inbox: MemoryAnnounce) -> None:
    tools = Tools()
    agents = Threads(ScriptedModel([REFUND], [DELETE]), tools.all, sessions)
    repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(sessions))
    assert check_agrees(repository) is None  # no session yet

    def handle(message: dict[str, Any]) -> Any:
        return handle_message(agents, message, inbox, session_repository=repository)

    first = only_envelope(handle(start()))
    state, internal = check_agrees(repository)
    assert internal["interrupt_state"]["activated"]
    assert isinstance(state["agent_wait_asked"], str)
    second = only_envelope(handle(reply(first, {"action": "approve"})))
    check_agrees(repository)
    assert handle(reply(first, {"action": "approve"})).outcome is Outcome.DUPLICATE
    assert handle(reply(second, {"action": "approve"})).outcome is Outcome.RESUMED
    _, internal = check_agrees(repository)
    assert not internal["interrupt_state"]["activated"]
    assert handle(reply(second, {"action": "approve"})).outcome is Outcome.DUPLICATE


def record_file(sessions: Path) -> Path:
    return sessions / f"session_{THREAD}" / "agents" / "agent_default" / "agent.json"


def test_bytes_in_the_record_are_decoded_as_read_agent_decodes_them(sessions: Path) -> None:
    repository = FileSessionManager(session_id=THREAD, storage_dir=str(sessions))
    agent = SessionAgent(
        agent_id="default",
        state={"blob": b"\x00\x01", "agent_wait_asked": "\n"},
        conversation_manager_state={},
        _internal_state={"model_state": {"raw": b"\xff"}},
    )
    repository.create_agent(THREAD, agent)
    state, internal = check_agrees(repository)
    assert state["blob"] == b"\x00\x01"
    assert internal == {"model_state": {"raw": b"\xff"}}


def test_a_record_read_agent_refuses_is_refused_the_same_way(sessions: Path) -> None:
    repository = FileSessionManager(session_id=THREAD, storage_dir=str(sessions))
    repository.create_agent(
        THREAD, SessionAgent(agent_id="default", state={}, conversation_manager_state={})
    )
    path = record_file(sessions)
    data = json.loads(path.read_text())
    del data["conversation_manager_state"]
    path.write_text(json.dumps(data))
    with pytest.raises(TypeError, match="conversation_manager_state"):
        repository.read_agent(THREAD, "default")
    with pytest.raises(TypeError, match="conversation_manager_state"):
        _agent_record(repository, THREAD, "default")


def test_a_repository_that_reads_agents_its_own_way_is_read_through_read_agent(
    sessions: Path,
) -> None:
    class Overriding(FileSessionManager):
        def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> Any:
            record = super().read_agent(session_id, agent_id, **kwargs)
            if record is not None:
                record.state = {**record.state, "seen": True}
            return record

    repository = Overriding(session_id=THREAD, storage_dir=str(sessions))
    repository.create_agent(
        THREAD, SessionAgent(agent_id="default", state={}, conversation_manager_state={})
    )
    assert not _plain_file_repository(repository)
    read = _agent_record(repository, THREAD, "default")
    assert read is not None
    assert read[0] == {"seen": True}
