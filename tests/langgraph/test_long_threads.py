"""Telling a duplicate from an unknown answer reads the latest checkpoint, not the history."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import handle_message
from agent_wait.langgraph._host import ASKED_KEY  # pyright: ignore[reportPrivateUsage]
from tests.bench.run import long_graph

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
