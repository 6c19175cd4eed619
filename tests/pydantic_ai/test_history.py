"""The history stores: what is loaded is what was saved, across store objects, with clear errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models.test import TestModel

from agent_wait.pydantic_ai import HistoryStore, InMemoryHistory, SqliteHistory


@pytest.fixture(scope="module")
def conversation() -> list[ModelMessage]:
    agent = Agent(TestModel())

    @agent.tool_plain
    def lookup(order_id: str) -> dict[str, object]:
        return {"order_id": order_id, "total": 41000, "items": ["a", "b"]}

    return agent.run_sync("look it up").all_messages()


def dumped(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_round_trip_and_isolation(
    kind: str, tmp_path: Path, conversation: list[ModelMessage]
) -> None:
    store: HistoryStore = (
        InMemoryHistory() if kind == "memory" else SqliteHistory(tmp_path / "h.db")
    )
    assert isinstance(store, HistoryStore)
    assert store.load("t-1") == []
    store.save("t-1", conversation)
    store.save("t-2", conversation[:1])
    assert dumped(store.load("t-1")) == dumped(conversation)
    assert len(store.load("t-2")) == 1
    store.save("t-1", conversation[:2])  # replace, not append
    assert dumped(store.load("t-1")) == dumped(conversation[:2])
    with pytest.raises(ValueError, match="thread_id: expected a non-empty string, got ''"):
        store.load("")


def test_sqlite_history_survives_the_store_object(
    tmp_path: Path, conversation: list[ModelMessage]
) -> None:
    path = tmp_path / "nested" / "dir" / "history.sqlite3"
    with SqliteHistory(path, table="pai_threads") as store:
        store.save("t", conversation)
    assert path.exists()
    with SqliteHistory(path, table="pai_threads") as store:
        assert dumped(store.load("t")) == dumped(conversation)
        store.close()
        # Reopened on next use after close().
        assert len(store.load("t")) == len(conversation)
    rows = sqlite3.connect(path).execute("SELECT thread_id, updated_at FROM pai_threads").fetchall()
    assert [r[0] for r in rows] == ["t"]
    assert rows[0][1].endswith("Z")


def test_sqlite_history_from_threads(tmp_path: Path, conversation: list[ModelMessage]) -> None:
    store = SqliteHistory(tmp_path / "h.db")
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for _ in range(5):
                store.save(f"t-{index}", conversation)
                assert len(store.load(f"t-{index}")) == len(conversation)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(store.load(f"t-{i}") for i in range(4))


def test_sqlite_history_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"table: .*got 'bad name;'"):
        SqliteHistory(tmp_path / "h.db", table="bad name;")
    with pytest.raises(ValueError, match="timeout: expected positive seconds, got 0"):
        SqliteHistory(tmp_path / "h.db", timeout=0)
    with pytest.raises(ValueError, match="path: expected a file path, got ' '"):
        SqliteHistory(" ")
