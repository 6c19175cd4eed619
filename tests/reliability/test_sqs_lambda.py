"""A LangGraph host as an AWS Lambda function behind SQS: ``agent_wait.sqs.lambda_handler``.

The inbound FIFO queue (grouped by thread, with a redrive policy) and the approvals queue the
questions go to are real queues on a moto server; each invocation gets the event Lambda's SQS
event source mapping builds from what it received, and the batch is settled the way the mapping
settles a partial batch response.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import WaitPolicy
from agent_wait.langgraph import handle_message, wait
from agent_wait.sqs import SqsAnnounce, lambda_handler
from tests.aws_moto import ACCOUNT, Aws, create_queue, drain, lambda_sqs_event, settle_lambda_batch

pytestmark = pytest.mark.integration


class _State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def test_a_lambda_parks_retries_a_failed_publish_and_resumes_on_the_answer(
    aws: Aws, tmp_path: Path
) -> None:
    sqs = aws.client("sqs")
    dlq_url, dlq_arn = create_queue(sqs, "inbound-dlq.fifo")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
    url, arn = create_queue(sqs, "inbound.fifo", VisibilityTimeout="1", RedrivePolicy=redrive)
    approvals_url = f"{aws.url}/{ACCOUNT}/approvals"  # created only after the first attempt

    refunds: list[str] = []

    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int) -> str:
        refunds.append(order_id)
        return f"refunded {amount} on {order_id}"

    builder = StateGraph(_State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite3", check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(connection))
    announce = SqsAnnounce(approvals_url, **aws.options)
    handler = lambda_handler(lambda m: handle_message(graph, m, announce, strict=True))

    def invoke(expected_records: int) -> dict[str, Any]:
        event = lambda_sqs_event(sqs, url, arn)
        assert len(event["Records"]) == expected_records
        response = handler(event, None)
        settle_lambda_batch(sqs, url, event, response)
        return {"event": event, "response": response}

    start = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
    sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps(start),
        MessageGroupId="order-4471",
        MessageDeduplicationId="start-order-4471",
    )

    # 1. The run parks, but the approvals queue does not exist: the publish fails, so the record
    #    is reported failed and goes back to the queue.
    first = invoke(1)
    [record] = first["event"]["Records"]
    assert first["response"] == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}

    # 2. Redelivered once the queue exists: the parked thread publishes its question again.
    create_queue(sqs, "approvals")
    time.sleep(1.2)
    second = invoke(1)
    assert second["event"]["Records"][0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert second["response"] == {"batchItemFailures": []}
    [published] = drain(sqs, approvals_url)
    envelope = json.loads(published["Body"])
    assert envelope["question"]["args"] == {"order_id": "order-4471", "amount": 41000}
    assert refunds == []

    # 3. The approver's answer arrives through the same queue; the thread resumes once.
    answer = {**envelope["reply_with"], "answer": {"action": "approve"}}
    sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps(answer),
        MessageGroupId="order-4471",
        MessageDeduplicationId=envelope["question_id"],
    )
    third = invoke(1)
    assert third["response"] == {"batchItemFailures": []}
    assert refunds == ["order-4471"]
    state = graph.get_state({"configurable": {"thread_id": "order-4471"}})
    assert state.values["result"] == "refunded 41000 on order-4471"

    # Nothing is left: not on the inbound queue, not in its dead-letter queue.
    time.sleep(1.2)
    assert lambda_sqs_event(sqs, url, arn)["Records"] == []
    assert drain(sqs, dlq_url) == []
    connection.close()
