"""Spans around whole operations (publish, answer, sweep) and gauges over a question store."""

from __future__ import annotations

import io
import logging
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime

import pytest
from opentelemetry import trace
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
    answer,
    apublish,
    publish,
    sweep,
)
from agent_wait.core._cli import main
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.opentelemetry import TRACEPARENT, observe_store
from tests.opentelemetry.conftest import Metrics, child_of, named, traceparent_of

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
