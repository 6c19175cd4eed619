"""Spans, metrics and log ids of a publish, with the real SDK and real transports."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any, TypedDict
from urllib.parse import urlsplit

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agent_wait.core import (
    Answer,
    BaseAnnounce,
    MemoryAnnounce,
    Outcome,
    Question,
    WaitEnvelope,
    hookspecs,
    publish,
)
from agent_wait.langgraph import handle_message, wait
from agent_wait.opentelemetry import TRACEPARENT, OpenTelemetryPlugin, asking_span_context
from agent_wait.sqs import SqsAnnounce
from agent_wait.webhook import WebhookAnnounce
from tests.aws_moto import Aws, create_queue, drain
from tests.opentelemetry.conftest import Metrics, child_of, named, only_delivery, traceparent_of
from tests.webhook.conftest import Receiver, Step

CARD = "4111 1111 1111 1111"
TOKEN = "s3cr3t-t0ken"


def tracer() -> trace.Tracer:
    return trace.get_tracer("app")


def every_value(span: ReadableSpan) -> str:
    """Everything a span exports as text: attributes, status, events and links."""
    return json.dumps(
        {
            "attributes": dict(span.attributes or {}),
            "status": span.status.description,
            "events": [(e.name, dict(e.attributes or {})) for e in span.events],
            "links": [dict(link.attributes or {}) for link in span.links],
        },
        default=str,
    )


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def refund_graph() -> Any:
    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        return f"refunded {amount} on {order_id}"

    def refund(state: State, config: RunnableConfig) -> State:
        return {"result": issue_refund(state["order_id"], state["amount"])}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=InMemorySaver())


START_MESSAGE = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}


def park_on_sqs(aws: Aws) -> tuple[Any, SqsAnnounce, trace.Span, dict[str, Any], dict[str, Any]]:
    """A LangGraph run parks inside a span; its envelope (and message attributes) is read back
    from a moto SQS queue."""
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    graph = refund_graph()
    announce = SqsAnnounce(url, **aws.options)
    with tracer().start_as_current_span("agent run") as asking:
        started = handle_message(graph, START_MESSAGE, announce)
    assert started.outcome is Outcome.STARTED
    assert started.parked
    [message] = drain(sqs, url)
    return graph, announce, asking, json.loads(message["Body"]), message["MessageAttributes"]


def test_traceparent_travels_through_sqs_and_back_in_the_answer(
    aws: Aws, spans: InMemorySpanExporter, recorded: Metrics
) -> None:
    graph, announce, asking, body, attributes_sent = park_on_sqs(aws)
    envelope = WaitEnvelope.model_validate(body)
    # One question to one announcer: the publish span is the delivery's span too.
    publishing = only_delivery(spans, "sqs")
    assert child_of(publishing, asking)
    assert body["reply_with"] == {
        "thread_id": "order-4471",
        "question_id": envelope.question_id,
        "answer": None,
        TRACEPARENT: traceparent_of(publishing),
    }
    # The same context in the message's own attributes, for the consumer's instrumentation.
    assert attributes_sent[TRACEPARENT] == {
        "StringValue": traceparent_of(publishing),
        "DataType": "String",
    }
    attributes = dict(publishing.attributes or {})
    duration = attributes.pop("agent_wait.duration_s")
    assert isinstance(duration, float)
    assert duration > 0
    message_id = attributes.pop("messaging.message.id")
    assert isinstance(message_id, str)
    assert message_id
    assert attributes == {
        "agent_wait.operation": "publish",
        "agent_wait.thread_id": "order-4471",
        "agent_wait.questions": 1,
        "agent_wait.deliveries": 1,
        "agent_wait.deliveries.failed": 0,
        "messaging.system": "aws_sqs",
        "messaging.destination.name": "approvals",
        "messaging.operation": "publish",
        "messaging.operation.type": "send",
        "agent_wait.announcer": "sqs",
        "agent_wait.outcome": "delivered",
        "agent_wait.question_id": envelope.question_id,
        "agent_wait.event_id": envelope.event_id,
        "agent_wait.attempts": 1,
    }
    assert publishing.status.status_code is StatusCode.UNSET
    assert recorded.added("agent_wait.questions.published") == 1
    assert (
        recorded.added(
            "agent_wait.deliveries",
            **{"agent_wait.announcer": "sqs", "agent_wait.outcome": "delivered"},
        )
        == 1
    )
    assert (
        recorded.added(
            "agent_wait.delivery.duration",
            **{"agent_wait.announcer": "sqs", "agent_wait.outcome": "delivered"},
        )
        == 1
    )

    # The consumer copies reply_with verbatim, sets answer, and sends it from its own trace.
    reply = {**body["reply_with"], "answer": {"action": "approve"}}
    answer = Answer.model_validate(reply)
    linked = asking_span_context(answer)
    assert linked is not None
    assert (linked.trace_id, linked.span_id) == (
        publishing.context.trace_id,
        publishing.context.span_id,
    )
    with tracer().start_as_current_span("consumer", context=otel_context.Context()):
        resumed = handle_message(graph, json.dumps(reply), announce)
    announce.close()
    assert resumed.outcome is Outcome.RESUMED
    assert resumed.result["result"] == "refunded 41000 on order-4471"


def test_an_answer_without_traceparent_still_resumes(aws: Aws, spans: InMemorySpanExporter) -> None:
    graph, announce, _, body, _ = park_on_sqs(aws)
    reply = {
        "thread_id": "order-4471",
        "question_id": body["question_id"],
        "answer": {"action": "approve"},
    }
    assert asking_span_context(Answer.model_validate(reply)) is None
    resumed = handle_message(graph, reply, announce)
    announce.close()
    assert resumed.outcome is Outcome.RESUMED


def test_a_signed_reply_carries_token_and_traceparent_through_sqs(
    aws: Aws, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", "answer-secret-".ljust(40, "x"))
    graph, announce, asking, body, _ = park_on_sqs(aws)
    assert sorted(body["reply_with"]) == [
        "answer",
        "question_id",
        "thread_id",
        "token",
        TRACEPARENT,
    ]
    [publishing] = named(spans, "agent-wait publish")
    assert child_of(publishing, asking)
    assert body["reply_with"][TRACEPARENT] == traceparent_of(publishing)
    reply = {**body["reply_with"], "answer": {"action": "approve"}}
    unsigned = {k: v for k, v in reply.items() if k != "token"}
    assert handle_message(graph, unsigned, announce).outcome is Outcome.UNAUTHORIZED
    resumed = handle_message(graph, json.dumps(reply), announce)
    announce.close()
    assert resumed.outcome is Outcome.RESUMED


@pytest.mark.skipif(
    not hasattr(hookspecs, "answer_handled"), reason="core has no answer_handled hook"
)
def test_the_answer_span_links_to_the_asking_span(
    aws: Aws, spans: InMemorySpanExporter, recorded: Metrics
) -> None:
    graph, announce, asking, body, _ = park_on_sqs(aws)
    reply = {**body["reply_with"], "answer": {"action": "approve"}}
    with tracer().start_as_current_span("consumer", context=otel_context.Context()) as consumer:
        resumed = handle_message(graph, reply, announce)
    announce.close()
    assert resumed.outcome is Outcome.RESUMED
    [handled] = named(spans, "agent-wait handle_message")
    assert handled.kind is SpanKind.CONSUMER
    assert handled.parent is not None
    assert handled.parent.span_id == consumer.get_span_context().span_id
    [publishing] = named(spans, "agent-wait publish")
    assert child_of(publishing, asking)
    [link] = handled.links
    asking_context = publishing.context
    assert (link.context.trace_id, link.context.span_id) == (
        asking_context.trace_id,
        asking_context.span_id,
    )
    attributes = dict(handled.attributes or {})
    assert attributes["agent_wait.outcome"] == "resumed"
    assert attributes["agent_wait.thread_id"] == "order-4471"
    assert attributes["agent_wait.question_id"] == body["question_id"]
    assert recorded.added("agent_wait.answers", **{"agent_wait.outcome": "resumed"}) == 1


def test_webhook_round_trip_has_a_span_per_delivery_and_no_secret(
    receiver: Receiver, closed_port: int, spans: InMemorySpanExporter, recorded: Metrics
) -> None:
    ok = receiver.script("/ok", Step(204))
    down = f"http://127.0.0.1:{closed_port}/hook?token={TOKEN}"
    question = Question(question_id="q-card", question={"function": "charge", "card": CARD})
    with (
        WebhookAnnounce(ok, headers={"Authorization": f"Bearer {TOKEN}"}) as good,
        WebhookAnnounce(down, retries=0) as bad,
    ):
        bad.name = "webhook-down"
        with tracer().start_as_current_span("tool call") as parent:
            report = publish([question], "order-4471", [good, bad])
    assert [d.ok for d in report.deliveries] == [True, False]
    [publishing] = named(spans, "agent-wait publish")
    assert child_of(publishing, parent)
    assert publishing.status.status_code is StatusCode.UNSET
    assert dict(publishing.attributes or {})["agent_wait.deliveries.failed"] == 1
    [request] = receiver.requests("/ok")
    assert json.loads(request.body)["reply_with"][TRACEPARENT] == traceparent_of(publishing)
    assert request.headers[TRACEPARENT] == traceparent_of(publishing)

    delivered, failed = named(spans, "publish webhook")
    assert dict(delivered.attributes or {})["messaging.destination.name"] == (
        urlsplit(receiver.base_url).netloc
    )
    assert dict(failed.attributes or {})["messaging.destination.name"] == (
        f"127.0.0.1:{closed_port}"
    )
    for span in (delivered, failed):
        assert child_of(span, publishing)
        assert span.kind is SpanKind.PRODUCER
        assert span.end_time is not None
        assert span.start_time is not None
        assert span.end_time > span.start_time
        # No question content, no token from the URL or headers, by default.
        assert CARD not in every_value(span)
        assert TOKEN not in every_value(span)
        assert "agent_wait.question" not in (span.attributes or {})
    assert dict(delivered.attributes or {})["messaging.system"] == "webhook"
    assert (
        dict(delivered.attributes or {})["agent_wait.duration_s"] == report.deliveries[0].duration
    )
    assert dict(failed.attributes or {})["agent_wait.outcome"] == "failed"
    assert failed.status.status_code is StatusCode.ERROR
    assert (
        dict(failed.attributes or {})["error.type"] == type(report.deliveries[1].exception).__name__
    )
    outcomes = {
        ("webhook", "delivered"): 1,
        ("webhook-down", "failed"): 1,
    }
    for (announcer, outcome), count in outcomes.items():
        labels = {"agent_wait.announcer": announcer, "agent_wait.outcome": outcome}
        assert recorded.added("agent_wait.deliveries", **labels) == count


class Leaky(BaseAnnounce):
    """An announcer whose error message quotes a secret, as a careless transport's might."""

    name = "leaky"

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError(f"https://hooks.example/answers?token={TOKEN} unreachable")


def test_no_content_and_no_error_message_by_default_and_the_question_on_opt_in(
    spans: InMemorySpanExporter, only_plugin: Callable[[object], None]
) -> None:
    question = Question(question_id="q-card", question={"function": "charge", "card": CARD})
    report = publish([question], "order-4471", [MemoryAnnounce(), Leaky()])
    assert TOKEN in (report.deliveries[1].error or "")  # the report keeps the detail
    default = named(spans, "publish")
    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))
    only_plugin(OpenTelemetryPlugin(tracer_provider=provider, record_question=True))
    publish([question], "order-4471", [MemoryAnnounce(), Leaky()])
    opted_in = own.get_finished_spans()[0]
    assert json.loads(str((opted_in.attributes or {})["agent_wait.question"])) == question.question
    assert [s.name for s in default] == ["publish memory", "publish leaky"]
    for span in default:
        assert CARD not in every_value(span)
        assert TOKEN not in every_value(span)
    assert dict(default[1].attributes or {})["error.type"] == "ConnectionError"


def test_agent_wait_log_records_carry_the_trace_and_span_ids(
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="agent_wait"):
        with tracer().start_as_current_span("tool call") as parent:
            publish([Question(question_id="q1", question={})], "t-1", MemoryAnnounce())
        publish([Question(question_id="q2", question={})], "t-1", MemoryAnnounce())
    inside, outside = [r for r in caplog.records if r.name == "agent_wait.publish"]
    publishing, alone = named(spans, "agent-wait publish")
    assert child_of(publishing, parent)
    assert alone.parent is None  # a publish outside any span starts its own trace
    for record, span in ((inside, publishing), (outside, alone)):
        ctx = span.context
        assert (record.otelTraceID, record.otelSpanID) == (
            f"{ctx.trace_id:032x}",
            f"{ctx.span_id:016x}",
        )
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="agent_wait"):
        logging.getLogger("agent_wait.publish").info("outside any span")
    [record] = caplog.records
    assert (record.otelTraceID, record.otelSpanID) == ("0", "0")


SWITCH_RUN = textwrap.dedent(
    """
    import json, sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from agent_wait.core import MemoryAnnounce, Question, publish
    from agent_wait.core._plugins import registry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if sys.argv[1] == "sdk-first":
        trace.set_tracer_provider(provider)
    registry().load(["opentelemetry"])
    trace.set_tracer_provider(provider)  # no-op when already set
    sink = MemoryAnnounce()
    with trace.get_tracer("app").start_as_current_span("tool call"):
        publish([Question(question_id="q1", question={})], "t-1", sink)
    hooks = registry().manager.publish_hooks()
    print(json.dumps({
        "spans": [s.name for s in exporter.get_finished_spans()],
        "reply_with": sink.envelopes[0].to_dict()["reply_with"],
        "hooks": [hooks.adjust is not None, hooks.observe is not None],
    }))
    """
)


@pytest.mark.parametrize(
    ("switch", "order"),
    [
        ({"AGENT_WAIT_OTEL_DISABLED": "1"}, "sdk-first"),
        ({"OTEL_SDK_DISABLED": "true"}, "sdk-first"),
        ({}, "sdk-after-load"),
        ({}, "sdk-first"),
    ],
    ids=["AGENT_WAIT_OTEL_DISABLED", "OTEL_SDK_DISABLED", "no-sdk-at-load", "enabled"],
)
def test_switched_off_or_without_an_sdk_no_hook_is_registered(
    switch: dict[str, str], order: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_WAIT_", "OTEL_"))}
    # Only the otel plugin's hooks: the workspace's example plugin would count as hooks too.
    env["AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", SWITCH_RUN, order],
        check=True,
        env={**env, **switch},
        capture_output=True,
        text=True,
    )
    result = json.loads(done.stdout)
    if switch or order == "sdk-after-load":
        assert result == {
            # OTEL_SDK_DISABLED also turns the SDK itself off: not even the app's span.
            "spans": [] if "OTEL_SDK_DISABLED" in switch else ["tool call"],
            "reply_with": {"thread_id": "t-1", "question_id": "q1", "answer": None},
            "hooks": [False, False],
        }
    else:
        assert result["spans"] == ["agent-wait publish", "tool call"]
        assert TRACEPARENT in result["reply_with"]
        assert result["hooks"] == [True, True]
