"""Spans, metrics and log correlation for agent-wait, through the OpenTelemetry API only.

Every hook reads the current context and the tracer and meter providers given (default: the
global ones, which stay no-ops until the application installs an SDK). Attributes carry ids,
announcer names and outcomes: never the question (unless asked for), the answer or an error's
message, which may quote a URL with a token in it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from agent_wait.core import Answer, Delivery, WaitEnvelope, hookimpl
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

TRACEPARENT = "traceparent"
"""The ``reply_with`` key (and so the answer field) that carries the asking span's context."""

DISABLED_ENV = "AGENT_WAIT_OTEL_DISABLED"
RECORD_QUESTION_ENV = "AGENT_WAIT_OTEL_RECORD_QUESTION"

_SCOPE = "agent_wait.opentelemetry"
_TRUE = frozenset({"1", "true", "yes", "on"})

# messaging.system values the semantic conventions define; other announcers use their own name.
_SYSTEMS = {"sqs": "aws_sqs", "sns": "aws_sns", "rabbitmq": "rabbitmq"}

# Delivery durations are seconds, a few ms to a few s; the API's default buckets are for ms.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _version() -> str:
    try:
        return version("agent-wait-opentelemetry")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def disabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``AGENT_WAIT_OTEL_DISABLED`` or OpenTelemetry's ``OTEL_SDK_DISABLED`` is set true."""
    env = os.environ if environ is None else environ
    return (
        env.get(DISABLED_ENV, "").strip().lower() in _TRUE
        or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    )


def traceparent(context: SpanContext) -> str:
    """The W3C ``traceparent`` header value of a span context."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def parse_traceparent(value: object) -> SpanContext | None:
    """The remote span context a ``traceparent`` value names, or None when it is not one.

    The value comes back from whoever answered, so anything else (another type, another length,
    upper case, version ``ff``, all-zero ids) is ignored rather than trusted.
    """
    match = _TRACEPARENT.match(value) if isinstance(value, str) else None
    if match is None or match[1] == "ff":
        return None
    trace_id, span_id, flags = int(match[2], 16), int(match[3], 16), int(match[4], 16)
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))


def asking_span_context(answer: Answer) -> SpanContext | None:
    """The span context of the run that asked, when the answer carried ``traceparent`` back.

    A consumer that copies ``reply_with`` verbatim carries it without knowing; an answer without
    it (or with a malformed one) gives None.
    """
    extra = answer.model_extra
    return parse_traceparent(extra.get(TRACEPARENT)) if extra else None


class OpenTelemetryPlugin:
    """The ``agent_wait`` hooks that trace, count and time publishing and answering.

    The plugin module registers one instance on the global providers; build your own only to use
    other providers (a test, a benchmark), and register it instead of the entry point's.

    Args:
        tracer_provider: Default: the global one.
        meter_provider: Default: the global one.
        record_question: Put the question (JSON) on delivery spans as ``agent_wait.question``.
            Default: ``AGENT_WAIT_OTEL_RECORD_QUESTION``, off. Questions may hold personal data.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        record_question: bool | None = None,
    ) -> None:
        release = _version()
        self._tracer = trace.get_tracer(_SCOPE, release, tracer_provider)
        meter = metrics.get_meter(_SCOPE, release, meter_provider)
        if record_question is None:
            record_question = os.environ.get(RECORD_QUESTION_ENV, "").strip().lower() in _TRUE
        self.record_question = record_question
        self._questions = meter.create_counter(
            "agent_wait.questions.published",
            unit="{question}",
            description="Envelopes built for publishing, one per question and publish.",
        )
        self._deliveries = meter.create_counter(
            "agent_wait.deliveries",
            unit="{delivery}",
            description="Envelopes handed to an announcer, by announcer and outcome.",
        )
        self._duration = meter.create_histogram(
            "agent_wait.delivery.duration",
            unit="s",
            description="How long an announcer took for the call that carried an envelope.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._answers = meter.create_counter(
            "agent_wait.answers",
            unit="{answer}",
            description="Answers handled by handle_message, by outcome.",
        )

    @hookimpl
    def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
        """Count the question; put the asking span's ``traceparent`` into ``reply_with``."""
        self._questions.add(1)
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        reply = envelope.reply_with.model_dump()
        reply[TRACEPARENT] = traceparent(context)
        return {"reply_with": reply}

    @hookimpl
    def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
        """One PRODUCER span per delivery (timed by the announcer call), counted and measured."""
        end = time.time_ns()
        duration = delivery.duration
        outcome = "delivered" if delivery.ok else "failed"
        labels = {"agent_wait.announcer": delivery.announcer, "agent_wait.outcome": outcome}
        self._deliveries.add(1, labels)
        if duration is not None:
            self._duration.record(duration, labels)
        start = end - int(duration * 1e9) if duration is not None else end
        span = self._tracer.start_span(
            f"publish {delivery.announcer}", kind=SpanKind.PRODUCER, start_time=start
        )
        if span.is_recording():
            span.set_attributes(self._delivery_attributes(delivery, envelope, outcome))
            if not delivery.ok:
                error_type = type(delivery.exception).__name__ if delivery.exception else "error"
                span.set_attribute("error.type", error_type)
                span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end)

    def _delivery_attributes(
        self, delivery: Delivery, envelope: WaitEnvelope, outcome: str
    ) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            "messaging.system": _SYSTEMS.get(delivery.announcer, delivery.announcer),
            "messaging.operation": "publish",
            "messaging.operation.type": "send",
            "agent_wait.announcer": delivery.announcer,
            "agent_wait.outcome": outcome,
            "agent_wait.thread_id": envelope.thread_id,
            "agent_wait.question_id": delivery.question_id,
            "agent_wait.event_id": delivery.event_id,
        }
        if delivery.duration is not None:
            attributes["agent_wait.duration_s"] = delivery.duration
        if delivery.attempts is not None:
            attributes["agent_wait.attempts"] = delivery.attempts
        if delivery.message_id is not None:
            attributes["messaging.message.id"] = delivery.message_id
        if self.record_question:
            attributes["agent_wait.question"] = json.dumps(envelope.question, default=str)
        return attributes

    @hookimpl(optionalhook=True)
    def answer_handled(self, answer: Answer, handled: Any) -> None:
        """One CONSUMER span per answer handled, linked to the asking span; counted by outcome."""
        outcome = str(getattr(handled.outcome, "value", handled.outcome))
        self._answers.add(1, {"agent_wait.outcome": outcome})
        asking = asking_span_context(answer)
        span = self._tracer.start_span(
            "agent-wait handle_message",
            kind=SpanKind.CONSUMER,
            links=[Link(asking)] if asking is not None else None,
        )
        if span.is_recording():
            span.set_attributes(
                {
                    "messaging.operation": "process",
                    "messaging.operation.type": "process",
                    "agent_wait.outcome": outcome,
                    "agent_wait.thread_id": answer.thread_id,
                    "agent_wait.question_id": answer.question_id,
                    "agent_wait.ran": bool(getattr(handled, "ran", False)),
                }
            )
        span.end()


_LogRecordFactory = Callable[..., logging.LogRecord]


def install_log_correlation() -> None:
    """Give every ``agent_wait`` log record the current trace and span ids (idempotent).

    The attribute names are those of opentelemetry-instrumentation-logging (``otelTraceID``,
    ``otelSpanID``, ``otelTraceSampled``), so one format string serves both. Other loggers'
    records are left alone; the previous record factory is kept and called first.
    """
    previous: _LogRecordFactory = logging.getLogRecordFactory()
    if getattr(previous, "agent_wait_otel", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name.startswith("agent_wait"):
            context = trace.get_current_span().get_span_context()
            if context.is_valid:
                record.otelTraceID = f"{context.trace_id:032x}"
                record.otelSpanID = f"{context.span_id:016x}"
                record.otelTraceSampled = context.trace_flags.sampled
            else:
                record.otelTraceID = record.otelSpanID = "0"
                record.otelTraceSampled = False
        return record

    factory.agent_wait_otel = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
