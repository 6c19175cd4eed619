"""Telling a duplicate from an unknown answer reads the latest checkpoint, not the history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import _compat, handle_message
from agent_wait.langgraph._host import (  # pyright: ignore[reportPrivateUsage]
    ASKED_KEY,
    _aread,  # pyright: ignore[reportPrivateUsage]
    _read,  # pyright: ignore[reportPrivateUsage]
)
from tests.bench.run import long_graph
from tests.langgraph.test_nested import mounted_subgraphs

STEPS = 60


class CountingSaver(InMemorySaver):
    """A real in-memory checkpointer that counts history walks (``list`` calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.walks = 0

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        self.walks += 1
        return super().list(config, **kwargs)


def test_a_late_or_unknown_answer_on_a_long_thread_walks_no_history() -> None:
    saver, inbox = CountingSaver(), MemoryAnnounce()
    graph = long_graph(saver)
    first = handle_message(
        graph, {"thread_id": "t", "input": {"limit": STEPS}}, inbox
    ).question_ids[0]
    moved = handle_message(graph, {"thread_id": "t", "question_id": first, "answer": 1}, inbox)
    assert moved.outcome is Outcome.RESUMED
    [second] = moved.question_ids
    assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) > STEPS
    saver.walks = 0

    late = handle_message(graph, {"thread_id": "t", "question_id": first, "answer": 2}, inbox)
    assert late.outcome is Outcome.DUPLICATE
    assert late.question_ids == [second]  # what it waits on now goes out again
    unknown = handle_message(graph, {"thread_id": "t", "question_id": "0" * 32, "answer": 2})
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert saver.walks == 0

    done = handle_message(graph, {"thread_id": "t", "question_id": second, "answer": 3}, inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result == {"first": 1, "steps": STEPS, "second": 3, "limit": STEPS}
    for question_id in (first, second):
        again = handle_message(graph, {"thread_id": "t", "question_id": question_id, "answer": 4})
        assert again.outcome is Outcome.DUPLICATE
    assert saver.walks == 0
    latest = graph.get_state({"configurable": {"thread_id": "t"}})
    assert set(latest.metadata[ASKED_KEY].split()) == {first, second}


def test_a_thread_run_without_handle_message_is_still_recognised() -> None:
    # Its checkpoints carry no index: the history is walked once, then the index is written.
    saver, inbox = CountingSaver(), MemoryAnnounce()
    graph = long_graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "plain"}}
    first = graph.invoke({"limit": STEPS}, config)["__interrupt__"][0].id
    second = graph.invoke(Command(resume={first: 1}), config)["__interrupt__"][0].id
    saver.walks = 0

    late = handle_message(graph, {"thread_id": "plain", "question_id": first, "answer": 2}, inbox)
    assert late.outcome is Outcome.DUPLICATE
    assert saver.walks == 1
    unknown = handle_message(graph, {"thread_id": "plain", "question_id": "f" * 32, "answer": 2})
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION

    done = handle_message(graph, {"thread_id": "plain", "question_id": second, "answer": 3}, inbox)
    assert done.outcome is Outcome.RESUMED
    saver.walks = 0
    again = handle_message(graph, {"thread_id": "plain", "question_id": first, "answer": 4})
    assert again.outcome is Outcome.DUPLICATE
    assert saver.walks == 0


class ReadCountingSaver(InMemorySaver):
    """A real in-memory checkpointer that counts reads of a thread's own latest checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.latest_reads = 0

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable") or {}
        if not configurable.get("checkpoint_ns") and "checkpoint_id" not in configurable:
            self.latest_reads += 1
        return super().get_tuple(config)


def one_question(saver: InMemorySaver) -> Any:
    class State(TypedDict, total=False):
        reply: Any

    builder = StateGraph(State)
    builder.add_node("ask", lambda state: {"reply": interrupt("approve?")})
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


def test_the_host_reads_the_state_and_the_checkpoint_in_one_read() -> None:
    saver = ReadCountingSaver()
    graph = mounted_subgraphs(saver)
    parked = handle_message(graph, {"thread_id": "t", "input": {}}, MemoryAnnounce())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    saver.latest_reads = 0
    snapshot, latest = _read(graph, config)
    assert saver.latest_reads == 1
    # What get_state shows, nested graphs included, and the checkpoint it was built from.
    assert snapshot == graph.get_state(config, subgraphs=True)
    assert latest == saver.get_tuple(config)
    assert {i.id for i in snapshot.interrupts} == set(parked.question_ids)


def test_without_pregels_internal_steps_the_host_reads_through_get_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = ReadCountingSaver()
    graph = mounted_subgraphs(saver)
    parked = handle_message(graph, {"thread_id": "t", "input": {}}, MemoryAnnounce())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    expected = (graph.get_state(config, subgraphs=True), saver.get_tuple(config))
    # A langgraph release without one of the steps the one-read path calls.
    steps = (*_compat._ONE_READ_STEPS, "_gone")  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(_compat, "_ONE_READ_STEPS", steps)
    saver.latest_reads = 0
    assert _read(graph, config) == expected
    assert saver.latest_reads == 2
    assert asyncio.run(_aread(graph, config)) == expected
    answer = {"thread_id": "t", "question_id": parked.question_ids[0], "answer": 1}
    assert handle_message(graph, answer, MemoryAnnounce()).outcome is Outcome.RESUMED


def test_a_resume_reads_the_latest_checkpoint_once_more_than_langgraph_does() -> None:
    reads: dict[str, int] = {}
    for side in ("handle_message", "langgraph"):
        saver = ReadCountingSaver()
        graph = one_question(saver)
        started = handle_message(graph, {"thread_id": "t", "input": {}}, MemoryAnnounce())
        [question_id] = started.question_ids
        saver.latest_reads = 0
        if side == "handle_message":
            message = {"thread_id": "t", "question_id": question_id, "answer": "yes"}
            assert handle_message(graph, message, MemoryAnnounce()).outcome is Outcome.RESUMED
        else:
            graph.invoke(Command(resume={question_id: "yes"}), {"configurable": {"thread_id": "t"}})
        reads[side] = saver.latest_reads
    assert reads["handle_message"] == reads["langgraph"] + 1
