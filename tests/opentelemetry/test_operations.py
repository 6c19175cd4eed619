"""Spans around whole operations (publish, answer, sweep) and gauges over a question store."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    MemoryAnnounce,
    Question,
    SqliteAnnounce,
    SqliteQuestionStore,
    WaitEnvelope,
    WaitPolicy,
    apublish,
    publish,
)
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import answer, sweep
from agent_wait.host._cli import main
from agent_wait.opentelemetry import TRACEPARENT, OpenTelemetryPlugin, observe_store
from agent_wait.opentelemetry._telemetry import _Deliveries
from tests.opentelemetry.conftest import Metrics, child_of, named, traceparent_of


@pytest.fixture(autouse=True)
def _names_given_with_by(monkeypatch: pytest.MonkeyPatch) -> None:
    # agent-wait answer --by names who answers here; the configuration must allow it.
    monkeypatch.setenv("AGENT_WAIT_ALLOW_BY", "1")


T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
LATER = "2026-09-11T12:00:00Z"


class Down(BaseAnnounce):
    name = "down"

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("unreachable")


def question(question_id: str = "q1", **policy: object) -> Question:
    return Question(
        question_id=question_id, question={"n": 1}, policy=WaitPolicy.model_validate(policy)
    )


async def test_apublish_has_one_span_with_the_deliveries_as_children(
    spans: InMemorySpanExporter,
) -> None:
    with trace.get_tracer("app").start_as_current_span("tool call") as tool_call:
        await apublish([question("q1"), question("q2")], "t-1", [MemoryAnnounce(), Down()])
    [publishing] = named(spans, "agent-wait publish")
    assert child_of(publishing, tool_call)
    assert dict(publishing.attributes or {})["agent_wait.operation"] == "apublish"
    assert dict(publishing.attributes or {})["agent_wait.deliveries.failed"] == 2
    deliveries = named(spans, "publish ")
    assert sorted(s.name for s in deliveries) == ["publish down"] * 2 + ["publish memory"] * 2
    assert all(child_of(span, publishing) for span in deliveries)


def test_a_strict_publish_that_fails_ends_its_span_in_error(
    spans: InMemorySpanExporter, recorded: Metrics
) -> None:
    with pytest.raises(AnnounceFailed):
        publish([question()], "t-1", Down(), strict=True)
    [publishing] = named(spans, "agent-wait publish")
    assert publishing.status.status_code is StatusCode.ERROR
    assert dict(publishing.attributes or {})["error.type"] == "AnnounceFailed"
    assert dict(publishing.attributes or {})["agent_wait.deliveries.failed"] == 1
    assert recorded.added("agent_wait.questions.published") == 1
    # The span is no longer current: what follows is not its child.
    assert not trace.get_current_span().get_span_context().is_valid


def test_answer_and_sweep_spans_link_to_the_asking_span(
    spans: InMemorySpanExporter,
) -> None:
    inbox = default_inbox_path()
    with trace.get_tracer("app").start_as_current_span("tool call"):
        report = publish(
            [question("q1"), question("due", timeout="PT1H", default={"action": "reject"})],
            "t-1",
            SqliteAnnounce(inbox),
            clock=lambda: T0,
        )
    [publishing] = named(spans, "agent-wait publish")
    assert all(
        e.reply_with.model_extra == {TRACEPARENT: traceparent_of(publishing)}
        for e in report.envelopes
    )
    spans.clear()

    answered = answer("q1", "approve", by="alice")
    assert answered.message[TRACEPARENT] == traceparent_of(publishing)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["answer", "q1", "reject", "--by", "bob"]) == 1  # already answered
        assert main(["sweep", "--once", "--now", LATER]) == 0
    swept = sweep(now=LATER)
    assert swept.expired == []

    first, refused = named(spans, "agent-wait answer")
    assert first.kind is SpanKind.PRODUCER
    assert dict(first.attributes or {}) == {
        "agent_wait.operation": "answer",
        "agent_wait.question_id": "q1",
        "agent_wait.thread_id": "t-1",
        "agent_wait.outcome": "answered",
    }
    [link] = first.links
    assert (link.context.trace_id, link.context.span_id) == (
        publishing.context.trace_id,
        publishing.context.span_id,
    )
    assert refused.status.status_code is StatusCode.ERROR
    assert dict(refused.attributes or {})["error.type"] == "QuestionClosed"
    assert "alice" not in str(dict(refused.attributes or {}))
    by_cli, by_call = named(spans, "agent-wait sweep")
    assert dict(by_cli.attributes or {}) == {
        "agent_wait.operation": "sweep",
        "agent_wait.expired": 1,
        "agent_wait.overdue": 0,
        "agent_wait.failed": 0,
    }
    assert dict(by_call.attributes or {})["agent_wait.expired"] == 0


def test_open_and_overdue_questions_are_gauges_over_a_store(
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = default_inbox_path()
    publish(
        [
            question("q1"),
            question("due", timeout="PT1H"),
            question("later", timeout="P30D"),
        ],
        "t-1",
        SqliteAnnounce(inbox),
        clock=lambda: datetime.now(UTC).replace(year=2020),
    )
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with SqliteQuestionStore(inbox) as store:
        observe_store(store, meter_provider=provider)

        def gauges() -> dict[str, float]:
            data = reader.get_metrics_data()
            if data is None:  # no point at all
                return {}
            return {
                metric.name: point.value
                for resource in data.resource_metrics
                for scope in resource.scope_metrics
                for metric in scope.metrics
                for point in metric.data.data_points
            }

        # "later" expired too: its 30 days ran out in 2020.
        assert gauges() == {"agent_wait.questions.open": 3, "agent_wait.questions.overdue": 2}
        answer("due", "approve", by="alice", store=store)
        assert gauges() == {"agent_wait.questions.open": 2, "agent_wait.questions.overdue": 1}
        # A store that cannot be read reports nothing rather than breaking the export.
        for path in inbox.parent.glob(inbox.name + "*"):
            path.write_bytes(b"not a database " * 512)
        with caplog.at_level(logging.ERROR, logger="agent_wait.opentelemetry"):
            assert gauges() == {}
        assert "could not count" in caplog.text
    provider.shutdown()


def test_a_single_failed_delivery_is_recorded_on_the_publish_span(
    spans: InMemorySpanExporter, recorded: Metrics
) -> None:
    report = publish([question()], "t-1", Down())
    assert not report.ok
    [publishing] = named(spans, "agent-wait publish")
    assert not named(spans, "publish ")
    attributes = dict(publishing.attributes or {})
    assert attributes["agent_wait.outcome"] == "failed"
    assert attributes["agent_wait.announcer"] == "down"
    assert attributes["error.type"] == "ConnectionError"
    assert publishing.status.status_code is StatusCode.ERROR
    labels = {"agent_wait.announcer": "down", "agent_wait.outcome": "failed"}
    assert recorded.added("agent_wait.deliveries", **labels) == 1
    assert recorded.added("agent_wait.delivery.duration", **labels) == 1


@pytest.mark.parametrize("switch", ["argument", "environment"])
def test_delivery_spans_on_request_even_for_the_only_delivery(
    spans: InMemorySpanExporter,
    only_plugin: Callable[[object], None],
    monkeypatch: pytest.MonkeyPatch,
    switch: str,
) -> None:
    if switch == "environment":
        monkeypatch.setenv("AGENT_WAIT_OTEL_DELIVERY_SPANS", "1")
        plugin = OpenTelemetryPlugin()
    else:
        plugin = OpenTelemetryPlugin(delivery_spans=True)
    only_plugin(plugin)
    with trace.get_tracer("app").start_as_current_span("tool call"):
        publish([question()], "t-1", MemoryAnnounce())
    [publishing] = named(spans, "agent-wait publish")
    [delivery] = named(spans, "publish memory")
    assert child_of(delivery, publishing)
    assert delivery.kind is SpanKind.PRODUCER
    assert dict(delivery.attributes or {})["agent_wait.question_id"] == "q1"
    assert "agent_wait.announcer" not in dict(publishing.attributes or {})


def test_durations_wait_for_a_collection_but_never_pile_up() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    histogram = provider.get_meter("test").create_histogram("d", unit="s")
    deliveries = _Deliveries(histogram, limit=3)

    def counts() -> dict[tuple[tuple[str, Any], ...], int]:
        data = reader.get_metrics_data()
        return {
            tuple(sorted((point.attributes or {}).items())): point.count
            for resource in (data.resource_metrics if data else [])
            for scope in resource.scope_metrics
            for metric in scope.metrics
            for point in metric.data.data_points
        }

    sqs = (("agent_wait.announcer", "sqs"), ("agent_wait.outcome", "delivered"))
    webhook = (("agent_wait.announcer", "webhook"), ("agent_wait.outcome", "failed"))
    deliveries.add(("sqs", "delivered"), 0.1)
    deliveries.add(("webhook", "failed"), 0.2)
    deliveries.add(("webhook", "failed"), None)  # counted, no duration
    assert counts() == {}  # nothing recorded yet: no SDK call on the publishing path
    deliveries.add(("sqs", "delivered"), 0.3)  # the limit: recorded right away
    assert counts() == {sqs: 2, webhook: 1}
    deliveries.add(("sqs", "delivered"), 0.4)
    observed = deliveries.observe(CallbackOptions())  # what a collection does: flush, then count
    assert counts()[sqs] == 3
    totals = {tuple(sorted((o.attributes or {}).items())): o.value for o in observed}
    assert totals == {sqs: 3, webhook: 2}
    provider.shutdown()
