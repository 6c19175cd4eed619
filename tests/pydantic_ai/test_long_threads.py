"""An answer or start message that runs nothing is decided from the index, not the history."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from agent_wait.core import AnswerTrust, MemoryAnnounce, Outcome
from agent_wait.pydantic_ai import (
    HistoryStore,
    IndexedHistoryStore,
    InMemoryHistory,
    SqliteHistory,
    _host,
    ahandle_message,
    astream_message,
    handle_message,
    questions_in,
)
from tests.pydantic_ai.scripted import Script
from tests.pydantic_ai.test_host import START, THREAD, Refunds, answer

TWO = (
    ("issue_refund", {"order_id": "a", "amount": 1}),
    ("issue_refund", {"order_id": "b", "amount": 2}),
)


class CountingMemory(InMemoryHistory):
    """A real in-memory store that counts full loads of a history."""

    loads = 0

    def load(self, thread_id: str) -> list[ModelMessage]:
        self.loads += 1
        return super().load(thread_id)


class CountingSqlite(SqliteHistory):
    """A real SQLite store that counts full loads of a history."""

    loads = 0

    def load(self, thread_id: str) -> list[ModelMessage]:
        self.loads += 1
        return super().load(thread_id)


class PlainStore:
    """A store with only ``load`` and ``save``, as an application may write one."""

    def __init__(self) -> None:
        self.inner = CountingMemory()

    def load(self, thread_id: str) -> list[ModelMessage]:
        return self.inner.load(thread_id)

    def save(self, thread_id: str, messages: Sequence[ModelMessage]) -> None:
        self.inner.save(thread_id, messages)


@pytest.fixture(params=["memory", "sqlite"])
def counting(request: pytest.FixtureRequest, tmp_path: Path) -> CountingMemory | CountingSqlite:
    if request.param == "memory":
        return CountingMemory()
    return CountingSqlite(tmp_path / "history.sqlite3")


def test_duplicate_unknown_held_and_republish_load_no_history(
    script: Callable[..., Script],
    inbox: MemoryAnnounce,
    counting: CountingMemory | CountingSqlite,
) -> None:
    refunds = Refunds(script(*TWO))
    started = handle_message(refunds.agent, START, inbox, history=counting)
    first, second = started.question_ids
    _, *asked = (counting.load_index(THREAD) or "").splitlines()
    assert [json.loads(line) for line in asked] == [first, second]
    counting.loads = 0

    republished = handle_message(refunds.agent, START, inbox, history=counting)
    assert republished.outcome is Outcome.REPUBLISHED
    assert republished.question_ids == [first, second]
    unknown = handle_message(refunds.agent, answer("never-asked", 1), inbox, history=counting)
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert counting.loads == 0

    # Holding writes the answer into the history: that one loads it.
    held = handle_message(refunds.agent, answer(second, {"action": "approve"}), history=counting)
    assert held.outcome is Outcome.HELD
    assert counting.loads == 1
    again = handle_message(refunds.agent, answer(second, {"action": "reject"}), history=counting)
    assert again.outcome is Outcome.DUPLICATE
    assert "already answered" in (again.detail or "")
    assert counting.loads == 1

    resumed = handle_message(refunds.agent, answer(first, {"action": "reject"}), history=counting)
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == [{"order_id": "b", "amount": 2}]  # the held approval stood
    counting.loads = 0
    for question_id in (first, second):
        late = handle_message(
            refunds.agent, answer(question_id, {"action": "approve"}), inbox, history=counting
        )
        assert late.outcome is Outcome.DUPLICATE
        assert late.question_ids == []
    assert counting.loads == 0
    assert (counting.load_index(THREAD) or "").startswith("null\n")


async def test_the_async_host_decides_from_the_index_too(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    history = CountingMemory()
    refunds = Refunds(script(TWO[0]))
    [first] = (await ahandle_message(refunds.agent, START, inbox, history=history)).question_ids
    history.loads = 0
    unknown = await ahandle_message(refunds.agent, answer("nope", 1), history=history)
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert history.loads == 0
    resumed = await ahandle_message(
        refunds.agent, answer(first, {"action": "approve"}), history=history
    )
    assert resumed.outcome is Outcome.RESUMED
    assert history.loads == 1  # the run itself needs the history
    late = await ahandle_message(
        refunds.agent, answer(first, {"action": "approve"}), history=history
    )
    assert late.outcome is Outcome.DUPLICATE
    assert history.loads == 1


def test_a_history_saved_without_an_index_is_read_in_full_then_indexed(
    script: Callable[..., Script], inbox: MemoryAnnounce, counting: CountingMemory | CountingSqlite
) -> None:
    # Written by other code (or an earlier version) through plain save: no index.
    refunds = Refunds(script(TWO[0]))
    plain = PlainStore()
    [first] = handle_message(refunds.agent, START, inbox, history=plain).question_ids
    counting.save(THREAD, plain.load(THREAD))
    assert counting.load_index(THREAD) is None
    counting.loads = 0

    unknown = handle_message(refunds.agent, answer("nope", 1), history=counting)
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert counting.loads == 1
    resumed = handle_message(refunds.agent, answer(first, {"action": "approve"}), history=counting)
    assert resumed.outcome is Outcome.RESUMED
    assert counting.load_index(THREAD) is not None  # the run's save wrote one
    counting.loads = 0
    late = handle_message(refunds.agent, answer(first, {"action": "approve"}), history=counting)
    assert late.outcome is Outcome.DUPLICATE
    assert counting.loads == 0


def test_a_store_without_the_index_methods_still_decides_right(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    store = PlainStore()
    assert isinstance(store, HistoryStore)
    assert not isinstance(store, IndexedHistoryStore)
    refunds = Refunds(script(TWO[0]))
    [first] = handle_message(refunds.agent, START, inbox, history=store).question_ids
    assert store.inner.load_index(THREAD) is None  # plain save writes no index
    assert handle_message(refunds.agent, answer("nope", 1), history=store).outcome is (
        Outcome.UNKNOWN_QUESTION
    )
    yes = answer(first, {"action": "approve"})
    assert handle_message(refunds.agent, yes, history=store).outcome is Outcome.RESUMED
    assert handle_message(refunds.agent, yes, history=store).outcome is Outcome.DUPLICATE
    assert refunds.runs == [{"order_id": "a", "amount": 1}]


def test_sqlite_table_of_an_earlier_version_gains_the_index(
    script: Callable[..., Script], inbox: MemoryAnnounce, tmp_path: Path
) -> None:
    path = tmp_path / "old.sqlite3"
    refunds = Refunds(script(TWO[0]))
    memory = InMemoryHistory()
    [first] = handle_message(refunds.agent, START, inbox, history=memory).question_ids
    stored: Any = memory.load(THREAD)
    with sqlite3.connect(path) as old:
        # The earlier schema, and a row written by the earlier version.
        old.execute(
            "CREATE TABLE agent_wait_history "
            "(thread_id TEXT PRIMARY KEY, messages TEXT NOT NULL, updated_at TEXT NOT NULL)"
        )
        old.execute(
            "INSERT INTO agent_wait_history VALUES (?, ?, '2026-01-01T00:00:00.000Z')",
            (THREAD, history_text(stored)),
        )
    with CountingSqlite(path) as history:
        assert history.load_index(THREAD) is None
        late = handle_message(refunds.agent, answer("nope", 1), history=history)
        assert late.outcome is Outcome.UNKNOWN_QUESTION
        assert history.loads == 1
        yes = answer(first, {"action": "approve"})
        assert handle_message(refunds.agent, yes, history=history).outcome is Outcome.RESUMED
        assert history.load_index(THREAD) is not None
        # An earlier-version writer replaces the history without the index: it is ignored.
        with sqlite3.connect(path) as old:
            old.execute(
                "UPDATE agent_wait_history SET messages = ?, "
                "updated_at = '2026-01-02T00:00:00.000Z' WHERE thread_id = ?",
                (history_text(stored), THREAD),
            )
        assert history.load_index(THREAD) is None
        history.loads = 0
        # Read in full: the thread is parked again as the old writer left it.
        assert handle_message(refunds.agent, START, history=history).outcome is (
            Outcome.REPUBLISHED
        )
        assert history.loads == 1


def history_text(messages: Sequence[ModelMessage]) -> str:
    return ModelMessagesTypeAdapter.dump_json(list(messages)).decode("utf-8")


async def test_the_streaming_host_decides_from_the_index_too(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    history = CountingMemory()
    refunds = Refunds(script(TWO[0]))
    started = astream_message(refunds.agent, START, inbox, history=history)
    assert [event async for event in started]
    [first] = started.handled.question_ids
    history.loads = 0
    again = astream_message(refunds.agent, START, inbox, history=history)
    assert [event async for event in again] == []
    assert again.handled.outcome is Outcome.REPUBLISHED
    assert history.loads == 0
    yes = answer(first, {"action": "approve"})
    resumed = astream_message(refunds.agent, yes, inbox, history=history)
    assert [event async for event in resumed]
    assert resumed.handled.outcome is Outcome.RESUMED
    assert history.loads == 1  # the run itself needs the history
    late = astream_message(refunds.agent, yes, inbox, history=history)
    assert [event async for event in late] == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert history.loads == 1
    assert refunds.runs == [{"order_id": "a", "amount": 1}]


def test_a_resume_builds_its_questions_only_when_trust_settings_read_them(
    script: Callable[..., Script],
    inbox: MemoryAnnounce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[object] = []

    def counting(result: Any) -> Any:
        if isinstance(result, DeferredToolRequests):  # a parked thread's, not a run's
            built.append(result)
        return questions_in(result)

    monkeypatch.setattr(_host, "questions_in", counting)
    history = InMemoryHistory()
    for thread, trust, builds in (
        ("plain", None, 0),
        ("strict", AnswerTrust(strict_actions=True), 1),
    ):
        refunds = Refunds(script(TWO[0]))
        started = handle_message(
            refunds.agent, {**START, "thread_id": thread}, inbox, history=history
        )
        built.clear()
        republished = handle_message(
            refunds.agent, {**START, "thread_id": thread}, inbox, history=history
        )
        assert republished.question_ids == started.question_ids
        assert len(built) == 1  # published again: read, so built
        built.clear()
        message = answer(started.question_ids[0], {"action": "approve"}, thread)
        resumed = handle_message(refunds.agent, message, inbox, history=history, trust=trust)
        assert resumed.outcome is Outcome.RESUMED
        assert len(built) == builds
