"""Lifecycle events and answers carry the trace context in the transport's own headers too."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pika
import pytest
import redis
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_wait.core import Outcome, Question, SqliteAnnounce, WaitPolicy, publish
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import answer, sweep
from agent_wait.langgraph import handle_message
from agent_wait.nats import NatsEntry
from agent_wait.opentelemetry import TRACEPARENT
from agent_wait.rabbitmq import RabbitMqEntry
from agent_wait.redis import RedisAnnounce, RedisEntry
from agent_wait.sqs import SqsAnnounce, SqsEntry
from agent_wait.webhook import WebhookAnnounce, WebhookEntry
from tests.aws_moto import Aws, create_queue, drain
from tests.nats.conftest import Stream, drop_stream, nats_url  # noqa: F401 - fixture
from tests.opentelemetry.conftest import named, traceparent_of
from tests.opentelemetry.test_tracing import START_MESSAGE, refund_graph
from tests.rabbitmq.conftest import amqp_url  # noqa: F401 - fixture
from tests.redis.conftest import client, names, redis_url  # noqa: F401 - fixtures
from tests.webhook.conftest import Receiver, Step

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
LATER = "2026-09-11T12:00:00Z"


def tracer() -> trace.Tracer:
    return trace.get_tracer("app")


def attributes_of(message: dict[str, object]) -> dict[str, str]:
    raw = message.get("MessageAttributes") or {}
    assert isinstance(raw, dict)
    return {str(name): str(value["StringValue"]) for name, value in raw.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def asked_in_inbox(spans: InMemorySpanExporter) -> str:
    """Publish q1 (and "due", past its deadline at LATER) to the inbox inside a tool call span;
    the publish span's traceparent."""
    policy = WaitPolicy.model_validate({"timeout": "PT1H", "default": {"action": "reject"}})
    questions = [
        Question(question_id="q1", question={"n": 1}),
        Question(question_id="due", question={"n": 2}, policy=policy),
    ]
    with tracer().start_as_current_span("tool call"):
        publish(questions, "t-1", SqliteAnnounce(default_inbox_path()), clock=lambda: T0)
    [publishing] = named(spans, "agent-wait publish")
    spans.clear()
    return traceparent_of(publishing)


def fifo_entry_queue(aws: Aws) -> str:
    sqs = aws.client("sqs")
    _, dead_arn = create_queue(sqs, "answers-dlq.fifo")
    redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": "3"})
    url, _ = create_queue(sqs, "answers.fifo", RedrivePolicy=redrive)
    return url


def test_a_wait_answered_event_carries_the_consumer_span_in_sqs_attributes(
    aws: Aws, spans: InMemorySpanExporter
) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    graph = refund_graph()
    announce = SqsAnnounce(url, **aws.options).with_lifecycle_events("wait.answered")
    with tracer().start_as_current_span("agent run"):
        handle_message(graph, START_MESSAGE, announce)
    [question] = drain(sqs, url)
    reply = {**json.loads(question["Body"])["reply_with"], "answer": {"action": "approve"}}
    with tracer().start_as_current_span("consumer", context=otel_context.Context()) as consumer:
        resumed = handle_message(graph, reply, announce)
    announce.close()
    assert resumed.outcome is Outcome.RESUMED
    [event] = drain(sqs, url)
    assert json.loads(event["Body"])["type"] == "wait.answered"
    assert attributes_of(event) == {
        "type": "wait.answered",
        "thread_id": "order-4471",
        TRACEPARENT: traceparent_of(consumer),
    }


def test_a_wait_expired_event_carries_the_sweep_span_in_webhook_headers(
    receiver: Receiver, spans: InMemorySpanExporter
) -> None:
    asked_in_inbox(spans)
    url = receiver.script("/events", Step(204))
    with WebhookAnnounce(url).with_lifecycle_events("wait.expired") as hook:
        report = sweep(now=LATER, announce=[hook])
    assert [q.envelope.question_id for q in report.expired] == ["due"]
    [swept] = named(spans, "agent-wait sweep")
    [request] = receiver.requests("/events")
    assert json.loads(request.body)["type"] == "wait.expired"
    assert request.headers[TRACEPARENT] == traceparent_of(swept)


@pytest.mark.parametrize(
    ("send", "sender", "question_id"),
    [
        (lambda entry: answer("q1", "approve", by="alice", entry=entry), "answer", "q1"),
        # A default the sweeper sends for the question past its deadline.
        (lambda entry: sweep(now=LATER, entry=entry), "sweep", "due"),
    ],
    ids=["answer", "sweep"],
)
def test_a_sent_answer_carries_its_senders_span_in_sqs_attributes(
    aws: Aws,
    spans: InMemorySpanExporter,
    send: Callable[[SqsEntry], object],
    sender: str,
    question_id: str,
) -> None:
    asking = asked_in_inbox(spans)
    url = fifo_entry_queue(aws)
    with SqsEntry(url, **aws.options) as entry:
        send(entry)
    [sending] = named(spans, f"agent-wait {sender}")
    [message] = drain(aws.client("sqs"), url)
    # The body brings the asking span back (reply_with); the attributes name who sent it.
    assert json.loads(message["Body"])["question_id"] == question_id
    assert json.loads(message["Body"])[TRACEPARENT] == asking
    assert attributes_of(message) == {TRACEPARENT: traceparent_of(sending)}


def test_an_answer_carries_the_answer_span_in_webhook_headers(
    receiver: Receiver, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    asking = asked_in_inbox(spans)
    url = receiver.script("/in", Step(200))
    with WebhookEntry(url, path=str(tmp_path / "outbox.sqlite3")) as entry:
        answer("q1", "approve", by="alice", entry=entry)
        assert entry.flush(10)
    [answering] = named(spans, "agent-wait answer")
    [request] = receiver.requests("/in")
    assert json.loads(request.body)[TRACEPARENT] == asking
    assert request.headers[TRACEPARENT] == traceparent_of(answering)


def test_without_a_current_span_an_answer_is_sent_without_the_header(
    aws: Aws, spans: InMemorySpanExporter
) -> None:
    asked_in_inbox(spans)
    url = fifo_entry_queue(aws)
    with SqsEntry(url, **aws.options) as entry:
        # A start message sent outside any span: nothing to propagate.
        entry.send({"thread_id": "t-2", "input": {"n": 1}})
    [message] = drain(aws.client("sqs"), url)
    assert attributes_of(message) == {}


def test_a_wait_expired_event_carries_the_sweep_span_in_redis_fields(
    redis_url: str,  # noqa: F811 - fixture
    client: redis.Redis,  # noqa: F811 - fixture
    names: tuple[str, str],  # noqa: F811 - fixture
    spans: InMemorySpanExporter,
) -> None:
    asked_in_inbox(spans)
    key, prefix = names
    with RedisAnnounce(redis_url, stream=key, index_prefix=prefix) as announce:
        sweep(now=LATER, announce=[announce.with_lifecycle_events("wait.expired")])
    [swept] = named(spans, "agent-wait sweep")
    [(_, fields)] = client.xrange(key)
    assert fields["type"] == "wait.expired"
    assert fields[TRACEPARENT] == traceparent_of(swept)


def test_an_answer_carries_the_answer_span_in_redis_fields_even_from_the_backlog(
    redis_url: str,  # noqa: F811 - fixture
    client: redis.Redis,  # noqa: F811 - fixture
    names: tuple[str, str],  # noqa: F811 - fixture
    spans: InMemorySpanExporter,
) -> None:
    asking = asked_in_inbox(spans)
    stream, _ = names
    with RedisEntry(redis_url, stream=stream) as entry:
        # The thread's first message is in the stream: the answer waits in its backlog.
        with tracer().start_as_current_span("start"):
            entry.send({"thread_id": "t-1", "input": {"n": 1}})
        answer("q1", "approve", by="alice", entry=entry)
        [answering] = named(spans, "agent-wait answer")
        [(_, first)] = client.xrange(stream)
        assert set(first) == {"thread", "body", TRACEPARENT}
        [started] = entry.receive()
        assert entry.ack(started)  # the answer moves from the backlog to the stream
        [(_, fields)] = client.xrange(stream)
        [received] = entry.receive()
        assert received.message["question_id"] == "q1"
    assert json.loads(fields["body"])[TRACEPARENT] == asking
    assert fields[TRACEPARENT] == traceparent_of(answering)
    assert fields["thread"] == "t-1"


def test_a_redis_entry_without_a_current_span_adds_no_field(
    redis_url: str,  # noqa: F811 - fixture
    client: redis.Redis,  # noqa: F811 - fixture
    names: tuple[str, str],  # noqa: F811 - fixture
) -> None:
    stream, _ = names
    with RedisEntry(redis_url, stream=stream) as entry:
        entry.send({"thread_id": "t-1", "input": {"n": 1}})
        entry.send({"thread_id": "t-1", "input": {"n": 2}})  # in the backlog
        [first] = entry.receive()
        assert entry.ack(first)
        [(_, fields)] = client.xrange(stream)
        [second] = entry.receive()
    assert set(fields) == {"thread", "body"}
    assert second.message["input"] == {"n": 2}


@pytest.fixture
def nats_names(nats_url: str) -> Iterator[tuple[str, str]]:  # noqa: F811 - fixture
    """A fresh stream name and subject for a NatsEntry; what it made is dropped after."""
    suffix = uuid.uuid4().hex[:12]
    stream = f"AW_OTEL_{suffix.upper()}"
    yield stream, f"awtest.{suffix}"
    for made in (stream, f"{stream}_DEAD", f"KV_{stream}_ATTEMPTS"):
        drop_stream(made)


def test_an_answer_carries_the_answer_span_in_nats_headers(
    nats_url: str,  # noqa: F811 - fixture
    nats_names: tuple[str, str],
    spans: InMemorySpanExporter,
) -> None:
    asking = asked_in_inbox(spans)
    stream, subject = nats_names
    with NatsEntry(nats_url, stream=stream, subject=subject) as entry:
        answer("q1", "approve", by="alice", entry=entry)
    [answering] = named(spans, "agent-wait answer")
    [message] = Stream(name=stream, prefix=subject).messages()
    assert message.body[TRACEPARENT] == asking
    assert message.headers[TRACEPARENT] == traceparent_of(answering)


@pytest.fixture
def amqp_queue(amqp_url: str) -> Iterator[str]:  # noqa: F811 - fixture
    name = f"agent-wait-test-otel-{uuid.uuid4().hex[:12]}"
    yield name
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    for queue in (name, f"{name}.dead"):
        channel.queue_delete(queue)
    channel.exchange_delete(f"{name}.dead")
    connection.close()


def test_an_answer_carries_the_answer_span_in_rabbitmq_headers(
    amqp_url: str,  # noqa: F811 - fixture
    amqp_queue: str,
    spans: InMemorySpanExporter,
) -> None:
    asking = asked_in_inbox(spans)
    with RabbitMqEntry(amqp_url, queue=amqp_queue) as entry:
        answer("q1", "approve", by="alice", entry=entry)
    [answering] = named(spans, "agent-wait answer")
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        # A quorum queue with a single active consumer: read it by consuming, not basic_get.
        channel = connection.channel()
        method, properties, body = next(channel.consume(amqp_queue, inactivity_timeout=10))
        assert method is not None
        channel.basic_ack(method.delivery_tag)
        channel.cancel()
    finally:
        connection.close()
    assert json.loads(body)[TRACEPARENT] == asking
    assert properties.headers == {TRACEPARENT: traceparent_of(answering)}
