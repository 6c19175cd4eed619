"""A real graph refusing an answer recorded in a deployment's question store, step by step.

Shared by the stores whose announcer, told of the refusal, reopens the question itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from agent_wait.core import (
    BaseAnnounce,
    LifecycleEvent,
    MemoryAnnounce,
    Outcome,
    QuestionStore,
    SqliteEntry,
)
from agent_wait.host import answer
from agent_wait.langgraph import handle_message
from tests.langgraph.test_host import START_MESSAGE, Counts

REFUSED = "wait.answer_refused"


class Refused(NamedTuple):
    question_id: str
    event: LifecycleEvent
    note: str | None


def refuse_a_misspelt_answer(
    graph: Any, inbox: BaseAnnounce, store: QuestionStore, entry: SqliteEntry
) -> Refused:
    """Ask, answer with a misspelt argument and let the graph refuse it: the question reopens."""
    audit = MemoryAnnounce().with_lifecycle_events(REFUSED)
    [question_id] = handle_message(graph, START_MESSAGE, inbox).question_ids
    bad = {"args": {"amonut": 1}}
    answer(question_id, "approve", answer=bad, by="alice", force=True, store=store, entry=entry)
    [sent] = entry.receive(1)
    assert entry.ack(sent)

    refused = handle_message(graph, sent.message, [inbox, audit])
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert [event.ok for event in refused.events] == [True, True]
    [question] = store.find(question_id)
    assert question.is_open
    assert question.refusal is not None
    assert question.refusal["answer"] == {**bad, "action": "approve"}
    assert "amonut" in question.refusal["reason"]
    [event] = audit.events
    return Refused(question_id, event, question.describe_refusal())


def correct_and_resume(
    graph: Any,
    counts: Counts,
    inbox: BaseAnnounce,
    store: QuestionStore,
    entry: SqliteEntry,
    question_id: str,
    late_copy: Callable[[], object],
) -> None:
    """Answer the reopened question correctly; ``late_copy`` of the refusal leaves that alone."""
    result = answer(question_id, "approve", by="alice", store=store, entry=entry)
    assert result.question.refusal is None
    [corrected] = entry.receive(1)
    assert entry.ack(corrected)
    late_copy()
    resumed = handle_message(graph, corrected.message, inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert counts.body == 1
    [question] = store.find(question_id)
    assert (question.status, question.answer, question.refusal) == (
        "answered",
        {"action": "approve"},
        None,
    )


def answer_another_way(graph: Any, inbox: BaseAnnounce) -> str:
    """Ask, then resume the run with an answer that went round the store: its question id."""
    [question_id] = handle_message(graph, START_MESSAGE, inbox).question_ids
    message = {
        "thread_id": START_MESSAGE["thread_id"],
        "question_id": question_id,
        "answer": {"action": "approve"},
        "answered_by": "bob",
    }
    assert handle_message(graph, message, inbox).outcome is Outcome.RESUMED
    return question_id
