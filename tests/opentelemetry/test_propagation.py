"""The asking span's trace context in each transport's own headers, and where deliveries went.

Real transports: SQS and SNS on a moto server, the machine's NATS, RabbitMQ and Redis, a real
HTTP receiver. The context also stays in ``reply_with``, so a consumer that reads neither the
headers nor the body's extras still works.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_wait.core import Question, WaitPolicy, publish
from agent_wait.dynamodb import DynamoDbAnnounce
from agent_wait.eventbridge import EventBridgeAnnounce
from agent_wait.nats import NatsAnnounce
from agent_wait.opentelemetry import TRACEPARENT
from agent_wait.postgres import PostgresAnnounce
from agent_wait.rabbitmq import RabbitMqAnnounce
from agent_wait.redis import RedisAnnounce
from agent_wait.sns import SnsAnnounce
from agent_wait.sqs import SqsAnnounce
from agent_wait.webhook import WebhookAnnounce
from tests.aws_moto import Aws, create_queue, drain
from tests.nats.conftest import Stream, nats_url, stream  # noqa: F401 - fixtures
from tests.opentelemetry.conftest import child_of, named, only_delivery, traceparent_of
from tests.rabbitmq.conftest import Broker, amqp_url, broker  # noqa: F401 - fixtures
from tests.redis.conftest import client, names, redis_url  # noqa: F401 - fixtures

SECRET = "pa55w0rd-s3cret"


def asked(tags: dict[str, str] | None = None, question_id: str = "q1") -> list[Question]:
    policy = WaitPolicy.model_validate({"tags": tags or {}})
    return [Question(question_id=question_id, question={"function": "refund"}, policy=policy)]


def publish_in_span(spans: InMemorySpanExporter, questions: list[Question], announce: Any) -> str:
    """Publish inside a tool-call span; the traceparent of the publish span it made."""
    with trace.get_tracer("app").start_as_current_span("tool call") as tool_call:
        report = publish(questions, "order-4471", announce, strict=True)
    [publishing] = named(spans, "agent-wait publish")
    assert child_of(publishing, tool_call)
    assert report.envelopes[0].reply_with.model_extra == {TRACEPARENT: traceparent_of(publishing)}
    return traceparent_of(publishing)


def sqs_attributes(message: dict[str, Any]) -> dict[str, str]:
    return {n: v["StringValue"] for n, v in message.get("MessageAttributes", {}).items()}


def test_sqs_message_attributes_carry_it_after_the_tags_within_ten(
    aws: Aws, spans: InMemorySpanExporter
) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    seven = {f"team{i}": "refunds" for i in range(7)}
    eight = {**seven, "team7": "refunds"}
    with SqsAnnounce(url, **aws.options) as announce:
        context = publish_in_span(spans, asked(seven), announce)
        [roomy] = drain(sqs, url)
        spans.clear()
        publish_in_span(spans, asked(eight, "q2"), announce)
        [full] = drain(sqs, url)
    # type, thread_id and seven tags leave one of SQS's ten attributes: the trace context.
    assert sqs_attributes(roomy) == {
        "type": "wait.created",
        "thread_id": "order-4471",
        **seven,
        TRACEPARENT: context,
    }
    # Eight tags fill them: routing keeps its room; the context is still in reply_with.
    assert sqs_attributes(full) == {"type": "wait.created", "thread_id": "order-4471", **eight}
    assert TRACEPARENT in json.loads(full["Body"])["reply_with"]


def test_sns_message_attributes_carry_it(aws: Aws, spans: InMemorySpanExporter) -> None:
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic_arn = sns.create_topic(Name="approvals-topic")["TopicArn"]
    url, queue_arn = create_queue(sqs, "from-topic")
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    with SnsAnnounce(topic_arn, **aws.options) as announce:
        context = publish_in_span(spans, asked({"team": "refunds"}), announce)
    [message] = drain(sqs, url)
    assert sqs_attributes(message)[TRACEPARENT] == context
    delivery = only_delivery(spans, "sns")
    assert dict(delivery.attributes or {})["messaging.destination.name"] == "approvals-topic"


def test_nats_headers_carry_it(
    nats_url: str,  # noqa: F811 - fixture
    stream: Stream,  # noqa: F811 - fixture
    spans: InMemorySpanExporter,
) -> None:
    with NatsAnnounce(nats_url, subject=f"{stream.prefix}.q", stream=stream.name) as announce:
        context = publish_in_span(spans, asked({"team": "refunds"}), announce)
    [message] = stream.messages()
    assert message.headers[TRACEPARENT] == context
    assert message.headers["Nats-Msg-Id"]  # the announcer's own headers are untouched
    delivery = only_delivery(spans, "nats")
    assert dict(delivery.attributes or {})["messaging.destination.name"] == stream.name


def test_rabbitmq_headers_carry_it(
    amqp_url: str,  # noqa: F811 - fixture
    broker: Broker,  # noqa: F811 - fixture
    spans: InMemorySpanExporter,
) -> None:
    broker.declare()
    queue = broker.queue("#")
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange) as announce:
        context = publish_in_span(spans, asked({"team": "refunds"}), announce)
    [delivered] = broker.drain(queue)
    assert delivered.properties.headers == {"team": "refunds", TRACEPARENT: context}
    delivery = only_delivery(spans, "rabbitmq")
    assert dict(delivery.attributes or {})["messaging.destination.name"] == broker.exchange


def test_redis_stream_fields_carry_it(
    redis_url: str,  # noqa: F811 - fixture
    client: redis.Redis,  # noqa: F811 - fixture
    names: tuple[str, str],  # noqa: F811 - fixture
    spans: InMemorySpanExporter,
) -> None:
    key, prefix = names
    with RedisAnnounce(redis_url, stream=key, index_prefix=prefix) as announce:
        context = publish_in_span(spans, asked({"team": "refunds"}), announce)
    [(_, fields)] = client.xrange(key)
    assert fields[TRACEPARENT] == context
    assert fields["tag:team"] == "refunds"
    assert json.loads(fields["envelope"])["reply_with"][TRACEPARENT] == context
    delivery = only_delivery(spans, "redis")
    assert dict(delivery.attributes or {})["messaging.destination.name"] == key


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            lambda aws: SqsAnnounce(
                "https://sqs.us-east-1.amazonaws.com/123456789012/approvals.fifo",
                **aws.options,
            ),
            "approvals.fifo",
        ),
        (
            lambda aws: SnsAnnounce("arn:aws:sns:us-east-1:123456789012:approvals", **aws.options),
            "approvals",
        ),
        (lambda aws: EventBridgeAnnounce("approvals-bus", **aws.options), "approvals-bus"),
        (lambda aws: DynamoDbAnnounce("approvals-table", **aws.options), "approvals-table"),
        (
            lambda aws: WebhookAnnounce(
                f"https://ops:{SECRET}@hooks.example:8443/in?token={SECRET}"
            ),
            "hooks.example:8443",
        ),
        (lambda aws: WebhookAnnounce(f"https://hooks.example/in/{SECRET}"), "hooks.example"),
        (
            lambda aws: NatsAnnounce(f"nats://ops:{SECRET}@127.0.0.1:4222", subject="approvals.q"),
            "approvals.q",
        ),
        (
            lambda aws: RabbitMqAnnounce(f"amqp://ops:{SECRET}@127.0.0.1/", exchange="approvals"),
            "approvals",
        ),
        (
            lambda aws: RedisAnnounce(f"redis://:{SECRET}@127.0.0.1:6379/0", stream="approvals"),
            "approvals",
        ),
        (
            lambda aws: PostgresAnnounce(f"postgresql://ops:{SECRET}@127.0.0.1/app"),
            "agent_wait_inbox",
        ),
    ],
    ids=[
        "sqs",
        "sns",
        "eventbridge",
        "dynamodb",
        "webhook",
        "webhook-path",
        "nats",
        "rabbitmq",
        "redis",
        "postgres",
    ],
)
def test_each_announcer_names_its_destination_without_secrets(
    aws: Aws, build: Any, expected: str
) -> None:
    announce = build(aws)
    try:
        assert announce.destination == expected
        assert SECRET not in str(announce.destination)
    finally:
        announce.close()
