"""lambda_handler: SQS events as Lambda delivers them, built from a real moto queue."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from agent_wait.sqs import lambda_handler
from tests.aws_moto import Aws, create_queue, drain, lambda_sqs_event, settle_lambda_batch


class Host:
    """A handle function: records what it handled, raises for the threads told to fail.

    ``failing`` maps a thread to how many of its calls raise before it is handled.
    """

    def __init__(self, failing: dict[str, int]) -> None:
        self.failing = failing
        self.handled: list[dict[str, Any]] = []

    def __call__(self, message: dict[str, Any]) -> str:
        if self.failing.get(message["thread_id"], 0) > 0:
            self.failing[message["thread_id"]] -= 1
            raise RuntimeError(f"refund service down for {message['input']['secret']}")
        self.handled.append(message)
        return "handled"


def start(thread_id: str) -> str:
    return json.dumps({"thread_id": thread_id, "input": {"secret": f"card-of-{thread_id}"}})


@pytest.mark.integration
def test_only_the_failed_records_are_reported_and_they_end_in_the_dead_letter_queue(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    sqs = aws.client("sqs")
    dlq_url, dlq_arn = create_queue(sqs, "inbound-dlq")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})
    url, arn = create_queue(sqs, "inbound", VisibilityTimeout="1", RedrivePolicy=redrive)
    bodies = [start("order-1"), start("order-2"), "[1, 2]", start("order-3")]
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    host = Host(failing={"order-2": 2})
    handler = lambda_handler(host)

    caplog.set_level(logging.DEBUG, logger="agent_wait.sqs")
    event = lambda_sqs_event(sqs, url, arn)
    assert sorted(r["body"] for r in event["Records"]) == sorted(bodies)
    response = handler(event, None)
    by_body = {r["body"]: r["messageId"] for r in event["Records"]}
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(
        [by_body[start("order-2")], by_body["[1, 2]"]]
    )
    assert sorted(m["thread_id"] for m in host.handled) == ["order-1", "order-3"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("receive 1" in w and "goes back to the queue" in w for w in warnings)
    assert not [
        r for r in caplog.records if r.levelno >= logging.INFO and "card-of" in r.getMessage()
    ]
    settle_lambda_batch(sqs, url, event, response)

    # The two failures come back (second receive), fail again, then the redrive policy moves them.
    time.sleep(1.2)
    again = lambda_sqs_event(sqs, url, arn)
    assert sorted(r["body"] for r in again["Records"]) == sorted([start("order-2"), "[1, 2]"])
    assert {r["attributes"]["ApproximateReceiveCount"] for r in again["Records"]} == {"2"}
    response = handler(again, None)
    assert len(response["batchItemFailures"]) == 2
    settle_lambda_batch(sqs, url, again, response)
    time.sleep(1.2)
    assert lambda_sqs_event(sqs, url, arn)["Records"] == []
    assert sorted(m["Body"] for m in drain(sqs, dlq_url)) == sorted([start("order-2"), "[1, 2]"])
    assert sorted(m["thread_id"] for m in host.handled) == ["order-1", "order-3"]


@pytest.mark.integration
def test_fifo_a_failed_thread_keeps_its_later_messages_back(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, arn = create_queue(sqs, "inbound.fifo", VisibilityTimeout="1")
    for n, thread_id in enumerate(["order-1", "order-2", "order-1", "order-2"]):
        body = json.dumps({"thread_id": thread_id, "input": {"secret": "s", "n": n}})
        sqs.send_message(
            QueueUrl=url, MessageBody=body, MessageGroupId=thread_id, MessageDeduplicationId=str(n)
        )
    host = Host(failing={"order-1": 1})  # only its first message fails
    event = lambda_sqs_event(sqs, url, arn)
    assert [json.loads(r["body"])["input"]["n"] for r in event["Records"]] == [0, 1, 2, 3]
    response = lambda_handler(host)(event, None)
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    order_1 = [
        r["messageId"] for r in event["Records"] if r["attributes"]["MessageGroupId"] == "order-1"
    ]
    assert failed == order_1
    assert [m["input"]["n"] for m in host.handled] == [1, 3]


def test_an_event_that_is_not_an_sqs_batch_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'Records' list, got keys \['detail', 'source'\]"):
        lambda_handler(Host({}))({"source": "aws.events", "detail": {}}, None)
