"""A real graph refuses an answer recorded in the DynamoDB store (moto server): the dynamodb
announcer, told of the refusal, opens the question again once, with the reason, and a corrected
answer goes through."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from agent_wait.core import SqliteEntry
from agent_wait.dynamodb import DynamoDbAnnounce, DynamoDbQuestionStore, create_table
from tests.aws_moto import Aws
from tests.langgraph.test_host import Counts, refund_graph
from tests.refusals import REFUSED, answer_another_way, correct_and_resume, refuse_a_misspelt_answer


def test_a_refused_answer_reopens_once_with_the_reason_and_a_corrected_one_resumes(
    aws: Aws, tmp_path: Path
) -> None:
    create_table(aws.client("dynamodb"), "refusals")
    counts = Counts()
    graph = refund_graph(counts)
    inbox = DynamoDbAnnounce("refusals", **aws.options).with_lifecycle_events(REFUSED)
    store = DynamoDbQuestionStore(
        aws.session.resource("dynamodb", endpoint_url=aws.url).Table("refusals")
    )
    entry = SqliteEntry(tmp_path / "messages.sqlite3")
    question_id, event, note = refuse_a_misspelt_answer(graph, inbox, store, entry)

    # The same event delivered again (another announcer, its own client) reopens nothing more:
    # the row no longer records the refused answer. (Racing deliveries are the store kit's:
    # moto applies concurrent conditional writes without isolation.)
    again = DynamoDbAnnounce("refusals", **aws.options).with_lifecycle_events(REFUSED)
    again.deliver_event(event)
    [question] = store.find(question_id)
    assert (question.is_open, question.describe_refusal()) == (True, note)

    # A late copy of the refusal, after the corrected answer, leaves that answer alone.
    late_copy = partial(again.deliver_event, event)
    correct_and_resume(graph, counts, inbox, store, entry, question_id, late_copy)
    for closing in (again, inbox, entry):
        closing.close()


def test_the_answered_event_closes_a_row_answered_another_way(aws: Aws) -> None:
    create_table(aws.client("dynamodb"), "answered")
    graph = refund_graph(Counts())
    inbox = DynamoDbAnnounce("answered", **aws.options).with_lifecycle_events("wait.answered")
    question_id = answer_another_way(graph, inbox)
    store = DynamoDbQuestionStore(
        aws.session.resource("dynamodb", endpoint_url=aws.url).Table("answered")
    )
    [question] = store.find(question_id)
    assert (question.status, question.answered_by, question.answer) == ("answered", "bob", None)
    inbox.close()
