"""The real OpenTelemetry SDK, recording in memory, installed once as the global providers.

The ``opentelemetry`` plugin is autoloaded through its entry point, as in an application, and
uses the global providers: these fixtures are the application's SDK setup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agent_wait.core._plugins import registry
from agent_wait.opentelemetry._plugin import load
from tests.aws_moto import aws, moto_server  # noqa: F401 - fixtures, registered by import
from tests.webhook.conftest import closed_port, receiver  # noqa: F401 - fixtures, registered by import

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture(scope="session")
def active() -> object:
    """The SDK installed as the global providers, and the plugin the entry point then loads.

    One plugin for the session: its instruments are created once on the global meter.
    """
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    return load()


@pytest.fixture(autouse=True)
def sdk(active: object) -> Iterator[TracerProvider]:
    """The plugin an application with this SDK would have, for one test.

    Another suite of the session may have loaded the plugins before this SDK existed, when the
    entry point's plugin stayed inactive (as it does in an application that installs its SDK
    late). It is swapped back afterwards, so the suites that run later see what they expect.
    """
    manager = registry().manager
    original = manager.get_plugin("opentelemetry")
    if original is not None:
        manager.unregister(name="opentelemetry")
    manager.register(active, "opentelemetry")
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    try:
        yield provider
    finally:
        manager.unregister(name="opentelemetry")
        if original is not None:
            manager.register(original, "opentelemetry")


@pytest.fixture
def spans(sdk: TracerProvider) -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def named(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def only_delivery(exporter: InMemorySpanExporter, announcer: str) -> ReadableSpan:
    """The span of a publish that had one delivery: the publish span, with the delivery on it."""
    [publishing] = named(exporter, "agent-wait publish")
    assert not named(exporter, "publish ")  # no child span for a single delivery
    assert publishing.kind is SpanKind.PRODUCER
    assert dict(publishing.attributes or {})["agent_wait.announcer"] == announcer
    return publishing


def traceparent_of(span: ReadableSpan | trace.Span) -> str:
    ctx = span.get_span_context()
    assert ctx is not None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def child_of(span: ReadableSpan, parent: ReadableSpan | trace.Span) -> bool:
    context = parent.get_span_context()
    assert context is not None
    return (
        span.parent is not None
        and span.parent.span_id == context.span_id
        and span.context is not None
        and span.context.trace_id == context.trace_id
    )


@pytest.fixture
def only_plugin(sdk: TracerProvider) -> Iterator[Callable[[object], None]]:
    """Swap the entry point's plugin for another instance (one instance at a time, as documented)."""
    manager = registry().manager
    original = manager.get_plugin("opentelemetry")
    swapped: list[object] = []

    def swap(plugin: object) -> None:
        manager.unregister(name="opentelemetry")
        manager.register(plugin, "opentelemetry")
        swapped.append(plugin)

    yield swap
    if swapped:
        manager.unregister(name="opentelemetry")
        manager.register(original, "opentelemetry")


class Metrics:
    """Cumulative metric points, read before and after the code under test."""

    def __init__(self) -> None:
        self.before = self.read()

    @staticmethod
    def read() -> dict[tuple[str, tuple[tuple[str, Any], ...]], Any]:
        points: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
        data = _READER.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        key = (metric.name, tuple(sorted((point.attributes or {}).items())))
                        points[key] = point
        return points

    def added(self, name: str, **attributes: Any) -> float:
        """How much a counter grew (or how many values a histogram recorded) since the start."""
        key = (name, tuple(sorted(attributes.items())))
        after, before = self.read().get(key), self.before.get(key)

        def amount(point: Any) -> float:
            if point is None:
                return 0
            return point.count if hasattr(point, "count") else point.value

        return amount(after) - amount(before)


@pytest.fixture
def recorded(sdk: TracerProvider) -> Metrics:
    return Metrics()
