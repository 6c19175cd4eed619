"""SNS takes only XML 1.0's characters: through a proxy that refuses the rest, as SNS does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_wait.core import apublish, publish
from agent_wait.sns import SnsAnnounce
from tests.aws_moto import REGION, drain
from tests.aws_strict import (
    EXPECTED_NOTES,
    REFUSED_TEXT,
    THREAD_ID,
    StrictAws,
    refusable_questions,
)
from tests.sns.test_sns import _topic_with_queue  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.integration


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}


def test_the_proxy_refuses_what_sns_refuses(strict_aws: StrictAws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(strict_aws, "strict")
    sns = strict_aws.client("sns", max_attempts=1)
    with pytest.raises(ClientError) as refused:
        sns.publish(TopicArn=topic_arn, Message='{"note": "\uffff"}')  # what was sent raw
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"
    with pytest.raises(ClientError, match="InvalidParameter"):
        sns.publish(
            TopicArn=topic_arn,
            Message="{}",
            MessageAttributes={"thread_id": {"DataType": "String", "StringValue": "t\x00"}},
        )
    sns.publish(TopicArn=topic_arn, Message='{"note": "\\uffff"}')  # escaped: accepted
    assert [json.loads(m["Body"]) for m in drain(sqs, url)] == [{"note": "\uffff"}]
    assert len(strict_aws.refused) == 2


@pytest.mark.parametrize("count", [1, 3], ids=["Publish", "PublishBatch"])
def test_questions_sns_would_refuse_reach_the_subscriber_and_decode_unchanged(
    strict_aws: StrictAws, count: int
) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(strict_aws, f"refusable-{count}")
    with SnsAnnounce(topic_arn, endpoint_url=strict_aws.url, region=REGION) as announce:
        report = publish(refusable_questions(count), THREAD_ID, announce)
    assert report.ok, report.failures
    assert strict_aws.refused == []
    assert [d.notes for d in report.deliveries] == [EXPECTED_NOTES] * count
    messages = {json.loads(m["Body"])["question_id"]: m for m in drain(sqs, url)}
    for envelope in report.envelopes:
        message = messages[envelope.question_id]
        assert json.loads(message["Body"]) == envelope.to_dict()
        assert json.loads(message["Body"])["question"]["args"]["note"] == REFUSED_TEXT
        assert _attributes(message)["thread_id"] == "order\ufffd[31m-4471\ufffd"


async def test_the_async_path_publishes_what_sns_takes(strict_aws: StrictAws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(strict_aws, "refusable-async")
    async with strict_aws.aclient("sns") as client:
        report = await apublish(
            refusable_questions(3), THREAD_ID, SnsAnnounce(topic_arn, async_client=client)
        )
    assert report.ok, report.failures
    assert strict_aws.refused == []
    assert [d.notes for d in report.deliveries] == [EXPECTED_NOTES] * 3
    bodies = sorted(
        (json.loads(m["Body"]) for m in drain(sqs, url)), key=lambda b: b["question_id"]
    )
    assert bodies == [e.to_dict() for e in report.envelopes]
