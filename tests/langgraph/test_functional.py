"""LangGraph's functional API: a question asked in a ``@task`` names that task, not the entrypoint."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import ahandle_message, handle_message, wait
from tests.langgraph.conftest import answer, namespace


@wait
def approve_refund(order_id: str, amount: int) -> str:
    return f"refunded {amount} on {order_id}"


@task
def refund(order: dict[str, Any]) -> str:
    return approve_refund(order["order_id"], order["amount"])


@task
def shout(text: str) -> str:
    return text.upper()


@task
def review(text: str) -> Any:
    return interrupt({"review": text})


@task
def outer(text: str) -> Any:
    # A task calling a task: the innermost one asked.
    return review(text).result()


def refund_workflow() -> Any:
    @entrypoint(checkpointer=InMemorySaver())
    def workflow(order: dict[str, Any]) -> str:
        loud = shout(order["order_id"]).result()
        return f"{loud}: {refund(order).result()}"

    return workflow


def nested_workflow() -> Any:
    @entrypoint(checkpointer=InMemorySaver())
    def workflow(text: str) -> Any:
        return outer(text).result()

    return workflow


def test_a_wait_call_in_a_task_names_the_task(inbox: MemoryAnnounce) -> None:
    workflow = refund_workflow()
    start = {"thread_id": "f-1", "input": {"order_id": "o-1", "amount": 5}}
    started = handle_message(workflow, start, inbox)
    [envelope] = started.report.envelopes
    assert envelope.context is not None
    assert envelope.context.node == "refund"
    assert envelope.context.namespace is not None
    assert namespace("workflow", "refund").fullmatch(envelope.context.namespace)
    # Published again on a redelivered start, from the checkpoint alone: the same context.
    again = handle_message(workflow, start, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.report.envelopes[0].context == envelope.context
    done = handle_message(workflow, answer(envelope, {"action": "approve"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result == "O-1: refunded 5 on o-1"


@pytest.mark.parametrize("run_async", [False, True])
async def test_a_bare_interrupt_in_a_nested_task_names_the_innermost_task(
    inbox: MemoryAnnounce, run_async: bool
) -> None:
    workflow = nested_workflow()
    start = {"thread_id": "f-2", "input": "ship it"}
    if run_async:
        started = await ahandle_message(workflow, start, inbox)
    else:
        started = handle_message(workflow, start, inbox)
    [envelope] = started.report.envelopes
    assert envelope.question == {"review": "ship it"}
    assert envelope.context is not None
    assert envelope.context.node == "review"
    assert envelope.context.namespace is not None
    assert namespace("workflow", "outer", "review").fullmatch(envelope.context.namespace)
    done = handle_message(workflow, answer(envelope, "ok"), inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result == "ok"
