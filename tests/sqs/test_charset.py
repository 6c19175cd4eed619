"""SQS takes only XML 1.0's characters: through a proxy that refuses the rest, as SQS does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_wait.core import LifecycleEvent, apublish, publish
from agent_wait.sqs import SqsAnnounce, SqsEntry
from tests.aws_moto import REGION, create_queue, drain
from tests.aws_strict import (
    EXPECTED_NOTES,
    REFUSED_TEXT,
    THREAD_ID,
    StrictAws,
    refusable_questions,
)
from tests.sqs.test_entry import fifo_with_dead_letters

pytestmark = pytest.mark.integration


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}


def test_the_proxy_refuses_what_sqs_refuses_and_passes_the_rest(strict_aws: StrictAws) -> None:
    sqs = strict_aws.client("sqs", max_attempts=1)
    url, _ = create_queue(sqs, "strict")
    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=url, MessageBody='{"note": "\ufffe"}')  # what was sent raw
    assert refused.value.response["Error"]["Code"] == "InvalidMessageContents"
    assert "'#xFFFE' was found in the message body" in str(refused.value)
    with pytest.raises(ClientError, match="InvalidMessageContents"):
        sqs.send_message(
            QueueUrl=url,
            MessageBody="{}",
            MessageAttributes={"thread_id": {"DataType": "String", "StringValue": "t\x1b"}},
        )
    batch = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "good", "MessageBody": '{"note": "\\ufffe"}'},  # escaped: accepted
            {"Id": "bad", "MessageBody": "nul \x00"},
        ],
    )
    assert [e["Id"] for e in batch["Successful"]] == ["good"]
    [failed] = batch["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == (
        "bad",
        "InvalidMessageContents",
        True,
    )
    assert [json.loads(m["Body"]) for m in drain(sqs, url)] == [{"note": "\ufffe"}]
    assert len(strict_aws.refused) == 3


async def test_the_proxy_refuses_the_async_client_too(strict_aws: StrictAws) -> None:
    url, _ = create_queue(strict_aws.client("sqs"), "strict-async")
    async with strict_aws.aclient("sqs", max_attempts=1) as sqs:
        with pytest.raises(ClientError, match="InvalidMessageContents"):
            await sqs.send_message(QueueUrl=url, MessageBody="\uffff")
    assert len(strict_aws.refused) == 1


@pytest.mark.parametrize("count", [1, 3], ids=["SendMessage", "SendMessageBatch"])
def test_questions_sqs_would_refuse_reach_the_queue_and_decode_unchanged(
    strict_aws: StrictAws, count: int
) -> None:
    sqs = strict_aws.client("sqs")
    url, _ = create_queue(sqs, f"refusable-{count}")
    with SqsAnnounce(url, endpoint_url=strict_aws.url, region=REGION) as announce:
        report = publish(refusable_questions(count), THREAD_ID, announce)
    assert report.ok, report.failures
    assert strict_aws.refused == []
    assert [d.notes for d in report.deliveries] == [EXPECTED_NOTES] * count
    messages = {json.loads(m["Body"])["question_id"]: m for m in drain(sqs, url)}
    for envelope in report.envelopes:
        message = messages[envelope.question_id]
        assert "\ufffe" not in message["Body"]  # escaped in the JSON...
        assert json.loads(message["Body"]) == envelope.to_dict()  # ...to the same value
        assert json.loads(message["Body"])["question"]["args"]["note"] == REFUSED_TEXT
        assert _attributes(message) == {
            "type": "wait.created",
            "thread_id": "order\ufffd[31m-4471\ufffd",
            "approver_group": "finance\ufffd",
            "team": "ops\ufffddesk",
        }


async def test_the_async_path_sends_what_sqs_takes(strict_aws: StrictAws) -> None:
    sqs = strict_aws.client("sqs")
    url, _ = create_queue(sqs, "refusable-async")
    async with strict_aws.aclient("sqs") as client:  # the aiobotocore path, through the proxy
        report = await apublish(
            refusable_questions(3), THREAD_ID, SqsAnnounce(url, async_client=client)
        )
    assert report.ok, report.failures
    assert strict_aws.refused == []
    assert [d.notes for d in report.deliveries] == [EXPECTED_NOTES] * 3
    bodies = sorted(
        (json.loads(m["Body"]) for m in drain(sqs, url)), key=lambda b: b["question_id"]
    )
    assert bodies == [e.to_dict() for e in report.envelopes]


def test_a_lifecycle_event_of_such_a_thread_reaches_the_queue(strict_aws: StrictAws) -> None:
    sqs = strict_aws.client("sqs")
    url, _ = create_queue(sqs, "refusable-events")
    event = LifecycleEvent(
        type="wait.answered",
        event_id="01J00000000000000000000000",
        thread_id=THREAD_ID,
        question_id="q1",
        at="2026-09-14T09:00:00Z",
        by="alice \uffff",
        outcome="resumed",
    )
    with SqsAnnounce(url, endpoint_url=strict_aws.url, region=REGION) as announce:
        receipt = announce.deliver_event(event)
    assert receipt.notes == EXPECTED_NOTES[:1]
    [message] = drain(sqs, url)
    assert LifecycleEvent.model_validate_json(message["Body"]) == event
    assert _attributes(message)["thread_id"] == "order\ufffd[31m-4471\ufffd"


def test_the_entry_point_sends_and_dead_letters_what_sqs_takes(strict_aws: StrictAws) -> None:
    url = fifo_with_dead_letters(strict_aws, "refusable-entry", 1)
    answer = {"thread_id": THREAD_ID, "question_id": "q1", "answer": {"note": REFUSED_TEXT}}
    with SqsEntry(url, endpoint_url=strict_aws.url, region=REGION) as messages:
        messages.send(answer)
        [received] = messages.receive(max_messages=10, wait=1)
        assert received.message == answer
        assert received.thread_id == THREAD_ID
        # The error text quotes the message: an attribute value, so its characters are replaced.
        assert messages.fail(received, f"ValueError: bad note {REFUSED_TEXT}", retry=False)
        [letter] = messages.dead_letters()
    assert strict_aws.refused == []
    assert letter.message == answer
    assert letter.error == "ValueError: bad note " + REFUSED_TEXT.translate(
        dict.fromkeys(map(ord, "\ufffe\uffff\x1b\x00\x07"), "\ufffd")
    )
