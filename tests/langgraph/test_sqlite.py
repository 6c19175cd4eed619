"""Publishing to the embedded sqlite announcer and answering from its inbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from agent_wait.core import (
    MemoryAnnounce,
    Outcome,
    QuestionStatus,
    SqliteQuestionStore,
    WaitPolicy,
    announcer,
)
from agent_wait.langgraph import handle_message, wait
from tests.langgraph.conftest import check_envelope, clock, namespace


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def test_the_inbox_holds_the_envelope_and_its_answer_resumes(
    tmp_path: Path, inbox: MemoryAnnounce
) -> None:
    runs: list[int] = []

    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return "refunded"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    sqlite = announcer("sqlite", path=tmp_path / "inbox.sqlite3")
    start = {"thread_id": "order-9", "input": {"order_id": "order-9", "amount": 4100}}
    started = handle_message(graph, start, [sqlite, inbox], clock=clock)
    assert [d.announcer for d in started.report.deliveries] == ["sqlite", "memory"]
    assert started.report.ok

    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [item] = store.open_questions()
        check_envelope(
            item.envelope,
            thread_id="order-9",
            question_id=started.question_ids[0],
            question={"function": "issue_refund", "args": {"order_id": "order-9", "amount": 4100}},
            allowed_actions=["approve", "reject"],
            expires_at="2026-09-14T09:00:00Z",
            default={"action": "reject"},
            source={"function": "issue_refund"},
            context={"framework": "langgraph", "node": "refund", "namespace": namespace("refund")},
        )
        assert item.envelope == inbox.envelopes[0]
        reply = {**item.envelope.reply_with.model_dump(), "answer": {"action": "approve"}}
        assert handle_message(graph, reply, sqlite).outcome is Outcome.RESUMED
        assert store.transition(
            "order-9", item.envelope.question_id, QuestionStatus.ANSWERED, by="test"
        ).won
        assert store.open_questions() == []
    assert runs == [4100]
