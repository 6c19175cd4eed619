"""OpenTelemetry for agent-wait: spans, metrics and log correlation, installed and on.

Installing ``agent-wait-opentelemetry`` is the whole setup: its entry point registers hooks
that use the OpenTelemetry API, which records nothing until the application installs an SDK
(``opentelemetry-sdk``, ``logfire.configure()``, ``opentelemetry-instrument``...)::

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)

What it records:

- an ``agent-wait publish`` PRODUCER span per ``publish``/``apublish``, a child of the span that
  published (the tool call), with each delivery's announcer, outcome, attempts, duration, the
  transport's message id and messaging semantic-convention attributes
  (``messaging.destination.name`` included): on that span when the publish has one delivery,
  else on a ``publish <announcer>`` child span per delivery
  (``AGENT_WAIT_OTEL_DELIVERY_SPANS=1``: child spans always);
- ``agent-wait answer`` and ``agent-wait sweep`` spans;
- the publish span's W3C ``traceparent`` in each envelope's ``reply_with`` and in the
  transport's own headers (SQS/SNS message attributes, HTTP, NATS and RabbitMQ headers, Redis
  fields): a consumer that copies ``reply_with`` into its answer brings it back, and the
  ``agent-wait handle_message`` span of that answer links to the asking span; lifecycle events
  and the answers ``answer()`` / ``agent-wait answer`` and the sweeper send carry the
  ``traceparent`` of the span sending them in the transport's headers;
- counters ``agent_wait.questions.published``, ``agent_wait.deliveries`` (announcer, outcome),
  ``agent_wait.answers`` (outcome), the histogram ``agent_wait.delivery.duration`` (s), and with
  :func:`observe_store` the gauges ``agent_wait.questions.open`` and
  ``agent_wait.questions.overdue``;
- for every running worker (``serve``), ``agent_wait.worker.messages`` (entry point, outcome:
  acknowledged, retried, dead-lettered, lease lost, released), ``agent_wait.worker.in_flight``,
  ``agent_wait.worker.ready`` and ``agent_wait.worker.oldest_waiting`` (s, where the entry
  point tells);
- ``otelTraceID`` / ``otelSpanID`` on every ``agent_wait`` log record.

No question content, answer or error message is recorded: ids, names and outcomes only.
``AGENT_WAIT_OTEL_RECORD_QUESTION=1`` adds the question to a delivery's attributes.
``AGENT_WAIT_OTEL_DISABLED=1`` or ``OTEL_SDK_DISABLED=true`` turns the plugin off, and so does
the absence of an SDK when agent-wait loads its plugins (its first publish): install the SDK at
start-up.
Details: docs/observability.md.
"""

from __future__ import annotations

from agent_wait.opentelemetry._telemetry import (
    TRACEPARENT,
    OpenTelemetryPlugin,
    asking_span_context,
    observe_store,
)

__all__ = ["TRACEPARENT", "OpenTelemetryPlugin", "asking_span_context", "observe_store"]
