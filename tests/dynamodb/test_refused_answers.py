"""A real graph refuses an answer recorded in the DynamoDB store (moto server): the dynamodb
announcer, told of the refusal, opens the question again once, with the reason, and a corrected
answer goes through."""

from __future__ import annotations

from pathlib import Path

from agent_wait.core import MemoryAnnounce, Outcome, SqliteEntry, answer
from agent_wait.dynamodb import DynamoDbAnnounce, DynamoDbQuestionStore, create_table
from agent_wait.langgraph import handle_message
from tests.aws_moto import Aws
from tests.langgraph.test_host import START_MESSAGE, Counts, refund_graph

REFUSED = "wait.answer_refused"


def test_a_refused_answer_reopens_once_with_the_reason_and_a_corrected_one_resumes(
    aws: Aws, tmp_path: Path
) -> None:
    create_table(aws.client("dynamodb"), "refusals")
    counts = Counts()
    graph = refund_graph(counts)
    inbox = DynamoDbAnnounce("refusals", **aws.options).with_lifecycle_events(REFUSED)
    audit = MemoryAnnounce().with_lifecycle_events(REFUSED)
    store = DynamoDbQuestionStore(
        aws.session.resource("dynamodb", endpoint_url=aws.url).Table("refusals")
    )
    entry = SqliteEntry(tmp_path / "messages.sqlite3")
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
    note = question.describe_refusal()

    # The same event delivered again (another announcer, its own client) reopens nothing more:
    # the row no longer records the refused answer. (Racing deliveries are the store kit's:
    # moto applies concurrent conditional writes without isolation.)
    [event] = audit.events
    again = DynamoDbAnnounce("refusals", **aws.options).with_lifecycle_events(REFUSED)
    again.deliver_event(event)
    [question] = store.find(question_id)
    assert (question.is_open, question.describe_refusal()) == (True, note)

    result = answer(question_id, "approve", by="alice", store=store, entry=entry)
    assert result.question.refusal is None
    [corrected] = entry.receive(1)
    assert entry.ack(corrected)
    # A late copy of the refusal, after the corrected answer, leaves that answer alone.
    again.deliver_event(event)
    resumed = handle_message(graph, corrected.message, inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert counts.body == 1
    [question] = store.find(question_id)
    assert (question.status, question.answer, question.refusal) == (
        "answered",
        {"action": "approve"},
        None,
    )
    for closing in (again, inbox, entry):
        closing.close()


def test_the_answered_event_closes_a_row_answered_another_way(aws: Aws) -> None:
    create_table(aws.client("dynamodb"), "answered")
    graph = refund_graph(Counts())
    inbox = DynamoDbAnnounce("answered", **aws.options).with_lifecycle_events("wait.answered")
    [question_id] = handle_message(graph, START_MESSAGE, inbox).question_ids
    message = {
        "thread_id": START_MESSAGE["thread_id"],
        "question_id": question_id,
        "answer": {"action": "approve"},
        "answered_by": "bob",
    }
    assert handle_message(graph, message, inbox).outcome is Outcome.RESUMED
    store = DynamoDbQuestionStore(
        aws.session.resource("dynamodb", endpoint_url=aws.url).Table("answered")
    )
    [question] = store.find(question_id)
    assert (question.status, question.answered_by, question.answer) == ("answered", "bob", None)
    inbox.close()
