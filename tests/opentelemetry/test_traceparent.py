"""The traceparent an answer brings back is the answerer's data: only a well-formed one is used."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agent_wait.core import Answer
from agent_wait.opentelemetry import TRACEPARENT, asking_span_context
from agent_wait.opentelemetry._telemetry import traceparent

GOOD = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def answer(**extra: Any) -> Answer:
    return Answer.model_validate({"thread_id": "t", "question_id": "q", "answer": "ok", **extra})


def test_a_well_formed_traceparent_names_the_asking_span() -> None:
    context = asking_span_context(answer(**{TRACEPARENT: GOOD}))
    assert context is not None
    assert (context.trace_id, context.span_id) == (
        0x4BF92F3577B34DA6A3CE929D0E0E4736,
        0x00F067AA0BA902B7,
    )
    assert context.is_remote
    assert context.trace_flags.sampled


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        ["00", "x"],
        "",
        GOOD + " ",
        GOOD.upper(),
        "ff" + GOOD[2:],
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47_6-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
    ],
)
def test_anything_else_is_no_link(value: object) -> None:
    assert asking_span_context(answer(**{TRACEPARENT: value})) is None


def test_an_answer_without_it_is_no_link() -> None:
    assert asking_span_context(answer()) is None


@pytest.mark.parametrize("flags", [TraceFlags.DEFAULT, TraceFlags.SAMPLED])
def test_the_traceparent_written_is_the_w3c_propagators(flags: int) -> None:
    context = SpanContext(
        0x00F067AA0BA902B74BF92F3577B34DA6, 0x000000000000002A, False, TraceFlags(flags)
    )
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(
        carrier, trace.set_span_in_context(NonRecordingSpan(context))
    )
    assert traceparent(context) == carrier[TRACEPARENT]
