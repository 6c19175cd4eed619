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
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar, Token
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from agent_wait.core import (
    AnnounceFailed,
    Answer,
    BaseAnnounce,
    Delivery,
    LifecycleEvent,
    Operation,
    PublishReport,
    QuestionStore,
    StartMessage,
    WaitEnvelope,
    hookimpl,
)
from agent_wait.host import AnswerResult, ServeStatus, SweepReport
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Histogram, Observation
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

logger = logging.getLogger("agent_wait.opentelemetry")

TRACEPARENT = "traceparent"
"""The ``reply_with`` key (and so the answer field) that carries the asking span's context."""

DISABLED_ENV = "AGENT_WAIT_OTEL_DISABLED"
RECORD_QUESTION_ENV = "AGENT_WAIT_OTEL_RECORD_QUESTION"
DELIVERY_SPANS_ENV = "AGENT_WAIT_OTEL_DELIVERY_SPANS"

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
    # %-formatting: a fifth less than an f-string with three format specs (once per publish).
    return "00-%032x-%016x-%02x" % (  # noqa: UP031
        context.trace_id,
        context.span_id,
        context.trace_flags,
    )


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


_Key = tuple[str, ...]
_Callback = Callable[[CallbackOptions], Iterable[Observation]]
_Observable = Callable[..., object]
_OUTCOMES = ("failed", "delivered")
_LABELS = ("agent_wait.announcer", "agent_wait.outcome")


class _Tally:
    """Cumulative counts by label values, reported by an observable counter when metrics are read.

    Counting is a dict update under a lock: a synchronous SDK counter costs as much as a span
    per call (attribute handling, exemplar sampling), and publishing counts on every question.
    """

    __slots__ = ("_counts", "_lock", "_names")

    def __init__(self, *names: str) -> None:
        self._names = names
        self._counts: dict[_Key, int] = {}
        self._lock = threading.Lock()

    def add(self, key: _Key = (), amount: int = 1) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            counts = list(self._counts.items())
        return [
            Observation(total, dict(zip(self._names, key, strict=True))) for key, total in counts
        ]


class _Deliveries:
    """Deliveries counted by announcer and outcome, and their durations, kept in process.

    The counts are reported by an observable counter when metrics are read. The durations wait
    for that read too and are recorded into the histogram in bulk: a synchronous SDK ``record``
    costs half a span (attribute hashing, exemplar sampling, a lock), and the OpenTelemetry API
    has no observable histogram. Past ``limit`` waiting values the publishing thread records
    them itself, so a meter provider that never collects cannot grow the list.
    """

    __slots__ = ("_counts", "_histogram", "_limit", "_lock", "_values")

    def __init__(self, histogram: Histogram, *, limit: int = 1024) -> None:
        self._histogram = histogram
        self._limit = limit
        self._counts: dict[_Key, int] = {}
        self._values: list[tuple[_Key, float]] = []
        self._lock = threading.Lock()

    def add(self, key: _Key, duration: float | None) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            if duration is None:
                return
            values = self._values
            values.append((key, duration))
            full = len(values) >= self._limit
        if full:
            self.flush()

    def flush(self) -> None:
        """Record the waiting durations into the histogram, one SDK call each."""
        with self._lock:
            values, self._values = self._values, []
        labels: dict[_Key, dict[str, AttributeValue]] = {}
        record = self._histogram.record
        for key, value in values:
            attributes = labels.get(key)
            if attributes is None:
                attributes = labels[key] = dict(zip(_LABELS, key, strict=True))
            record(value, attributes)

    def observe(self, _options: CallbackOptions) -> Iterable[Observation]:
        # Metrics are being collected: the waiting durations go into the histogram now (an
        # SDK runs the callbacks before it reads the histogram, so they are in this export).
        self.flush()
        with self._lock:
            counts = list(self._counts.items())
        return [Observation(total, dict(zip(_LABELS, key, strict=True))) for key, total in counts]


class _Open:
    """An operation's span, current from ``operation_started`` until ``operation_finished``.

    ``first`` holds a publish's first delivery until a second one shows there are several:
    a publish with one delivery records it on its own span instead of a child span.
    """

    __slots__ = ("context", "first", "operation", "several", "span", "token", "traceparent")

    def __init__(self, operation: Operation, span: trace.Span) -> None:
        self.operation = operation
        self.span = span
        self.token: Token[_Open | None] | None = None
        self.context: Token[otel_context.Context] | None = None
        self.traceparent: str | None = None
        self.first: tuple[Delivery, WaitEnvelope, BaseAnnounce, int] | None = None
        self.several = False


# Each operation's span name and kind. A publish sends messages and an answer sends one: both
# are producers.
_SPANS = {
    "publish": ("agent-wait publish", SpanKind.PRODUCER),
    "apublish": ("agent-wait publish", SpanKind.PRODUCER),
    "answer": ("agent-wait answer", SpanKind.PRODUCER),
    "sweep": ("agent-wait sweep", SpanKind.INTERNAL),
}


class OpenTelemetryPlugin:
    """The ``agent_wait`` hooks that trace, count and time publishing and answering.

    The plugin module registers one instance on the global providers; build your own only to use
    other providers (a test, a benchmark), and register it instead of the entry point's.

    A publish is one span. When it has exactly one delivery (one question, one announcer), the
    delivery's attributes are on that span; with several, each delivery is a child span.

    Args:
        tracer_provider: Default: the global one.
        meter_provider: Default: the global one.
        record_question: Put the question (JSON) in a delivery's attributes (``agent_wait.question``).
            Default: ``AGENT_WAIT_OTEL_RECORD_QUESTION``, off. Questions may hold personal data.
        delivery_spans: A child span for every delivery, even the only one of a publish.
            Default: ``AGENT_WAIT_OTEL_DELIVERY_SPANS``, off.
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        record_question: bool | None = None,
        delivery_spans: bool | None = None,
    ) -> None:
        release = _version()
        self._tracer = trace.get_tracer(_SCOPE, release, tracer_provider)
        meter = metrics.get_meter(_SCOPE, release, meter_provider)
        self.record_question = (
            _switch(RECORD_QUESTION_ENV) if record_question is None else record_question
        )
        self.delivery_spans = (
            _switch(DELIVERY_SPANS_ENV) if delivery_spans is None else delivery_spans
        )
        # Where each instance keeps its open operation: a context variable of its own, read
        # by every hook of a publish, costs a tenth of a lookup in the OpenTelemetry context.
        self._open: ContextVar[_Open | None] = ContextVar("agent_wait_otel_operation", default=None)
        self._questions = _Tally()
        self._answers = _Tally("agent_wait.outcome")
        self._deliveries = _Deliveries(
            meter.create_histogram(
                "agent_wait.delivery.duration",
                unit="s",
                description="How long an announcer took for the call that carried an envelope.",
                explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
            )
        )
        self._workers = _Workers()
        # The observable instruments, read when metrics are collected: (factory, name,
        # callback, unit, description).
        observed: list[tuple[_Observable, str, _Callback, str, str]] = [
            (
                meter.create_observable_counter,
                "agent_wait.questions.published",
                self._questions.observe,
                "{question}",
                "Envelopes built for publishing, one per question and publish.",
            ),
            (
                meter.create_observable_counter,
                "agent_wait.deliveries",
                self._deliveries.observe,
                "{delivery}",
                "Envelopes handed to an announcer, by announcer and outcome.",
            ),
            (
                meter.create_observable_counter,
                "agent_wait.answers",
                self._answers.observe,
                "{answer}",
                "Answers handled by handle_message, by outcome.",
            ),
            (
                meter.create_observable_counter,
                "agent_wait.worker.messages",
                self._workers.messages,
                "{message}",
                "Messages a worker settled, by entry point and outcome.",
            ),
            (
                meter.create_observable_up_down_counter,
                "agent_wait.worker.in_flight",
                self._workers.in_flight,
                "{message}",
                "Messages being handled by the workers, by entry point.",
            ),
            (
                meter.create_observable_gauge,
                "agent_wait.worker.ready",
                self._workers.ready,
                "1",
                "1 while every worker of the entry point reaches it, else 0.",
            ),
            (
                meter.create_observable_gauge,
                "agent_wait.worker.oldest_waiting",
                self._workers.oldest_waiting,
                "s",
                "Age of the oldest message not yet settled, where the entry point tells.",
            ),
        ]
        for create, name, callback, unit, description in observed:
            create(name, [callback], unit=unit, description=description)

    @hookimpl
    def operation_started(self, operation: Operation) -> None:
        """Start the operation's span and make it current: what it sends is traced inside it."""
        name = operation.name
        attributes: dict[str, AttributeValue] = {"agent_wait.operation": name}
        if operation.thread_id is not None:
            attributes["agent_wait.thread_id"] = operation.thread_id
        if operation.question_id is not None:
            attributes["agent_wait.question_id"] = operation.question_id
        span_name, kind = _SPANS.get(name) or (f"agent-wait {name}", SpanKind.INTERNAL)
        span = self._tracer.start_span(span_name, kind=kind, attributes=attributes)
        opened = _Open(operation, span)
        # Current for the transport's own instrumentation (an HTTP or AWS client span is a
        # child of the publish) and for the trace ids of agent-wait's log records.
        opened.context = otel_context.attach(trace.set_span_in_context(span))
        opened.token = self._open.set(opened)

    @hookimpl
    def operation_finished(
        self, operation: Operation, result: object, error: BaseException | None
    ) -> None:
        """End the span ``operation_started`` made current, with what the operation did."""
        opened = self._open.get()
        if opened is None or opened.operation is not operation or opened.token is None:
            return  # its start failed: nothing to end
        try:
            self._open.reset(opened.token)
        except ValueError:  # finished in another context than it started: forget it there
            self._open.set(None)
        if opened.context is not None:
            otel_context.detach(opened.context)
        span = opened.span
        if isinstance(error, AnnounceFailed):
            result = error.report
        if isinstance(result, PublishReport):
            self._questions.add((), len(result.envelopes))
        if not span.is_recording():
            span.end()
            return
        attributes = _outcome_attributes(result)
        failed: str | None = None
        if opened.first is not None:  # the only delivery: recorded on this span
            delivery, envelope, announcer, _ = opened.first
            # The span has the thread id since it started.
            self._delivery_attributes(attributes, delivery, envelope, announcer, thread=False)
            failed = None if delivery.ok else _error_type(delivery)
        if error is not None:
            failed = type(error).__name__
        if failed is not None:
            attributes["error.type"] = failed
            span.set_status(Status(StatusCode.ERROR, failed))
        span.set_attributes(attributes)
        # A vote short of its quorum sends no message: nothing to link.
        if isinstance(result, AnswerResult) and result.message is not None:
            asking = parse_traceparent(result.message.get(TRACEPARENT))
            if asking is not None:
                span.add_link(asking)
        span.end()

    @hookimpl
    def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
        """Put the asking span's ``traceparent`` into ``reply_with``."""
        opened = self._open.get()
        if opened is None:
            value = _current_traceparent()
        else:
            value = opened.traceparent
            if value is None:  # once per publish, not per question
                value = opened.traceparent = _traceparent_of(opened.span)
        if value is None:
            return None
        # The reply as a dict built from its fields: core validates it once, which costs less
        # than dumping the model or copying it.
        reply = envelope.reply_with
        extra = reply.model_extra
        fields = {"thread_id": reply.thread_id, "question_id": reply.question_id, "answer": None}
        if extra:
            fields.update(extra)
        fields[TRACEPARENT] = value
        return {"reply_with": fields}

    @hookimpl
    def message_headers(
        self, envelope: WaitEnvelope | LifecycleEvent | Answer | StartMessage
    ) -> dict[str, str] | None:
        """The ``traceparent`` of the span that sends the message, for the transport's headers.

        A question's is the one its ``reply_with`` carries (the publish span). A lifecycle
        event's, an answer's or a start message's is the span current where it is sent: the
        ``agent-wait answer`` or ``agent-wait sweep`` span, or the host's own span. An answer's
        body keeps the asking span's ``traceparent`` it copied from ``reply_with``.
        """
        if isinstance(envelope, WaitEnvelope):
            extra = envelope.reply_with.model_extra
            value = extra.get(TRACEPARENT) if extra else None
            return {TRACEPARENT: value} if isinstance(value, str) else None
        value = _current_traceparent()
        return None if value is None else {TRACEPARENT: value}

    @hookimpl
    def delivery_outcome(
        self, delivery: Delivery, envelope: WaitEnvelope, announcer: BaseAnnounce
    ) -> None:
        """Count and time a delivery; trace it on the publish span, or as a child span of it."""
        end = time.time_ns()
        self._deliveries.add((delivery.announcer, _OUTCOMES[delivery.ok]), delivery.duration)
        opened = self._open.get()
        if opened is not None and not self.delivery_spans and not opened.several:
            if opened.first is None:
                opened.first = (delivery, envelope, announcer, end)
                return
            # A second delivery: each one gets its own span after all.
            self._delivery_span(*opened.first)
            opened.first = None
            opened.several = True
        self._delivery_span(delivery, envelope, announcer, end)

    def _delivery_span(
        self, delivery: Delivery, envelope: WaitEnvelope, announcer: BaseAnnounce, end: int
    ) -> None:
        """One PRODUCER span for a delivery, timed by the announcer call that carried it."""
        duration = delivery.duration
        attributes: dict[str, AttributeValue] = {}
        self._delivery_attributes(attributes, delivery, envelope, announcer, thread=True)
        error_type = None if delivery.ok else _error_type(delivery)
        if error_type is not None:
            attributes["error.type"] = error_type
        span = self._tracer.start_span(
            f"publish {delivery.announcer}",
            kind=SpanKind.PRODUCER,
            start_time=end - int(duration * 1e9) if duration is not None else end,
            attributes=attributes,
        )
        if error_type is not None and span.is_recording():
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end)

    def _delivery_attributes(
        self,
        attributes: dict[str, AttributeValue],
        delivery: Delivery,
        envelope: WaitEnvelope,
        announcer: BaseAnnounce,
        *,
        thread: bool,
    ) -> None:
        """Add a delivery's attributes to ``attributes`` (``thread``: its thread id too)."""
        name = delivery.announcer
        attributes["messaging.system"] = _SYSTEMS.get(name, name)
        attributes["messaging.operation"] = "publish"
        attributes["messaging.operation.type"] = "send"
        attributes["agent_wait.announcer"] = name
        attributes["agent_wait.outcome"] = _OUTCOMES[delivery.ok]
        if thread:
            attributes["agent_wait.thread_id"] = envelope.thread_id
        attributes["agent_wait.question_id"] = delivery.question_id
        attributes["agent_wait.event_id"] = delivery.event_id
        destination = announcer.destination
        if destination is not None:
            attributes["messaging.destination.name"] = destination
        if delivery.duration is not None:
            attributes["agent_wait.duration_s"] = delivery.duration
        if delivery.attempts is not None:
            attributes["agent_wait.attempts"] = delivery.attempts
        if delivery.message_id is not None:
            attributes["messaging.message.id"] = delivery.message_id
        if self.record_question:
            attributes["agent_wait.question"] = json.dumps(envelope.question, default=str)

    @hookimpl(optionalhook=True)
    def worker_started(self, status: ServeStatus) -> None:
        """Read the worker's figures from now on, when metrics are collected."""
        self._workers.start(status)

    @hookimpl(optionalhook=True)
    def worker_stopped(self, status: ServeStatus) -> None:
        """Keep the stopped worker's final counts; stop reading its live figures."""
        self._workers.stop(status)

    @hookimpl(optionalhook=True)
    def answer_handled(self, answer: Answer, handled: Any) -> None:
        """One CONSUMER span per answer handled, linked to the asking span; counted by outcome."""
        outcome = str(getattr(handled.outcome, "value", handled.outcome))
        self._answers.add((outcome,))
        asking = asking_span_context(answer)
        span = self._tracer.start_span(
            "agent-wait handle_message",
            kind=SpanKind.CONSUMER,
            links=[Link(asking)] if asking is not None else None,
            attributes={
                "messaging.operation": "process",
                "messaging.operation.type": "process",
                "agent_wait.outcome": outcome,
                "agent_wait.thread_id": answer.thread_id,
                "agent_wait.question_id": answer.question_id,
                "agent_wait.ran": bool(getattr(handled, "ran", False)),
            },
        )
        span.end()


def _traceparent_of(span: trace.Span) -> str | None:
    context = span.get_span_context()
    return traceparent(context) if context.is_valid else None


def _current_traceparent() -> str | None:
    return _traceparent_of(trace.get_current_span())


def _error_type(delivery: Delivery) -> str:
    return type(delivery.exception).__name__ if delivery.exception else "error"


def _switch(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def _outcome_attributes(result: object) -> dict[str, AttributeValue]:
    """What an operation did, as span attributes: counts and ids, never content."""
    if isinstance(result, PublishReport):
        return {
            "agent_wait.questions": len(result.envelopes),
            "agent_wait.deliveries": len(result.deliveries),
            "agent_wait.deliveries.failed": len(result.failures),
        }
    if isinstance(result, AnswerResult):
        envelope = result.question.envelope
        return {
            "agent_wait.thread_id": envelope.thread_id,
            "agent_wait.question_id": envelope.question_id,
            "agent_wait.outcome": result.question.status,
        }
    if isinstance(result, SweepReport):
        return {
            "agent_wait.expired": len(result.expired),
            "agent_wait.overdue": len(result.overdue),
            "agent_wait.failed": len(result.failed),
        }
    return {}


def observe_store(
    store: QuestionStore, *, meter_provider: metrics.MeterProvider | None = None
) -> None:
    """Report a question store's open and overdue questions as observable gauges.

    ``agent_wait.questions.open`` and ``agent_wait.questions.overdue`` (open past their
    ``expires_at``) are read from ``store`` each time metrics are collected, so keep the store
    open as long as the meter provider. A read that fails is logged and reports nothing.

    Args:
        store: The store to count, e.g. ``SqliteQuestionStore(path)``.
        meter_provider: Default: the global one.
    """
    meter = metrics.get_meter(_SCOPE, _version(), meter_provider)

    def counting(read: Callable[[], list[Any]]) -> Callable[[CallbackOptions], list[Observation]]:
        def observe(_options: CallbackOptions) -> list[Observation]:
            try:
                return [Observation(len(read()))]
            except Exception:  # a store that cannot be read must not break the export
                logger.exception("agent-wait-opentelemetry: could not count %r", store)
                return []

        return observe

    meter.create_observable_gauge(
        "agent_wait.questions.open",
        [counting(store.open_questions)],
        unit="{question}",
        description="Questions published and not yet answered, expired or cancelled.",
    )
    meter.create_observable_gauge(
        "agent_wait.questions.overdue",
        [counting(store.open_questions_past)],
        unit="{question}",
        description="Open questions whose expires_at has passed.",
    )


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


_WORKER_OUTCOMES = (
    ("acknowledged", "acknowledged"),
    ("retried", "retried"),
    ("dead_lettered", "dead_lettered"),
    ("lost_leases", "lease_lost"),
    ("released", "released"),
)
"""``ServeReport`` fields and the ``agent_wait.outcome`` each is counted under."""


class _Workers:
    """The workers running in this process, read when metrics are collected.

    A stopped worker's counts are kept, so the counters stay monotonic across restarts of the
    loop in one process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: list[ServeStatus] = []
        self._finished: dict[_Key, int] = {}

    def start(self, status: ServeStatus) -> None:
        with self._lock:
            self._live.append(status)

    def stop(self, status: ServeStatus) -> None:
        with self._lock:
            if status not in self._live:
                return
            self._live.remove(status)
            for key, count in _report_counts(status):
                self._finished[key] = self._finished.get(key, 0) + count

    def live(self) -> list[ServeStatus]:
        with self._lock:
            return list(self._live)

    def messages(self, _options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            totals = dict(self._finished)
            live = list(self._live)
        for status in live:
            for key, count in _report_counts(status):
                totals[key] = totals.get(key, 0) + count
        return [
            Observation(total, {"agent_wait.entry": entry, "agent_wait.outcome": outcome})
            for (entry, outcome), total in totals.items()
        ]

    def in_flight(self, _options: CallbackOptions) -> Iterable[Observation]:
        figures: dict[str, int] = {}
        for status in self.live():
            name = status.entry.name
            figures[name] = figures.get(name, 0) + status.in_flight
        return [Observation(value, {"agent_wait.entry": name}) for name, value in figures.items()]

    def ready(self, _options: CallbackOptions) -> Iterable[Observation]:
        figures: dict[str, int] = {}
        for status in self.live():
            name = status.entry.name
            figures[name] = min(figures.get(name, 1), int(status.ready))
        return [Observation(value, {"agent_wait.entry": name}) for name, value in figures.items()]

    def oldest_waiting(self, _options: CallbackOptions) -> Iterable[Observation]:
        figures: dict[str, float] = {}
        for status in self.live():
            try:
                age = status.oldest_waiting()
            except Exception:  # an entry point that cannot be read must not break the export
                logger.exception("agent-wait-opentelemetry: could not read %r", status.entry)
                continue
            if age is not None:
                name = status.entry.name
                figures[name] = max(figures.get(name, 0.0), age)
        return [Observation(value, {"agent_wait.entry": name}) for name, value in figures.items()]


def _report_counts(status: ServeStatus) -> list[tuple[_Key, int]]:
    report = status.report
    return [
        ((status.entry.name, outcome), getattr(report, field))
        for field, outcome in _WORKER_OUTCOMES
    ]
