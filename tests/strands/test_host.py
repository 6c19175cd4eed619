"""handle_message / ahandle_message: the whole Strands host, over real agents and file sessions."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError
from strands import Agent, ToolContext, tool
from strands.session import FileSessionManager

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    CallContext,
    Handled,
    MemoryAnnounce,
    Outcome,
    WaitEnvelope,
    WaitPolicy,
)
from agent_wait.strands import ahandle_message, handle_message, wait
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel

Factory = Callable[[ScriptedModel, Sequence[Any]], Threads]
NOW = datetime(2026, 9, 11, 9, 0, 0, tzinfo=UTC)
REFUND = Call("issue_refund", {"order_id": "order-4471", "amount": 41000})
DELETE = Call("delete_records", {"table": "orders"})


class Tools:
    """Two gated tools that count their executions."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        runs = self.runs

        @tool(context=True)
        @wait(WaitPolicy(timeout="P3D"))
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            runs.append(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        @tool(context=True)
        @wait
        def delete_records(table: str, tool_context: ToolContext) -> str:
            """Delete every record of a table."""
            runs.append(f"delete {table}")
            return f"deleted {table}"

        self.all = [issue_refund, delete_records]


def start(thread_id: str = "order-4471", text: str = "refund order-4471") -> dict[str, Any]:
    return {"thread_id": thread_id, "input": text}


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {**envelope.reply_with.model_dump(), "answer": answer}


def only_envelope(handled: Handled) -> WaitEnvelope:
    [envelope] = handled.report.envelopes
    return envelope


def test_the_whole_loop_with_redelivery_duplicates_and_late_answers(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)

    started = handle_message(threads, start(), inbox)
    assert started.outcome is Outcome.STARTED
    assert started.ran
    assert started.parked
    assert started.result is not None
    assert started.result.stop_reason == "interrupt"
    envelope = only_envelope(started)
    assert envelope.thread_id == "order-4471"
    assert envelope.question == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert envelope.context == CallContext(
        tool="issue_refund", tool_call_id="call_1_0", framework="strands"
    )
    assert tools.runs == []
    assert threads.invocations == ["order-4471"]

    # The start message redelivered (twice): nothing runs, the same question is published again.
    for _ in range(2):
        again = handle_message(threads, start(), inbox)
        assert again.outcome is Outcome.REPUBLISHED
        # Read back from the stored session: the same tool call.
        assert only_envelope(again).context == envelope.context
        assert not again.ran
        assert again.result is None
        assert again.question_ids == [envelope.question_id]
        assert again.detail is not None
    assert threads.invocations == ["order-4471"]
    assert inbox.question_ids == [envelope.question_id] * 3

    resumed = handle_message(threads, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert resumed.result is not None
    assert resumed.result.stop_reason == "end_turn"
    assert not resumed.parked
    assert tools.runs == ["refund order-4471 41000"]

    # The same answer again, then a different one: both late, nothing runs.
    for answer in ({"action": "approve"}, {"action": "reject"}):
        late = handle_message(threads, reply(envelope, answer), inbox)
        assert late.outcome is Outcome.DUPLICATE
        assert late.result is None
        assert late.report.envelopes == ()
    assert tools.runs == ["refund order-4471 41000"]
    assert threads.invocations == ["order-4471", "order-4471"]

    unknown = handle_message(
        threads,
        {"thread_id": "order-4471", "question_id": "v1:tool_call:nope:x", "answer": 1},
        inbox,
    )
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert threads.invocations == ["order-4471", "order-4471"]
    assert len(inbox.envelopes) == 3


def test_stale_answer_while_parked_on_a_later_question(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND], [DELETE]), tools.all)

    first = only_envelope(handle_message(threads, start(), inbox))
    resumed = handle_message(threads, reply(first, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    second = only_envelope(resumed)
    assert second.question == {"function": "delete_records", "args": {"table": "orders"}}
    assert second.question_id != first.question_id
    assert tools.runs == ["refund order-4471 41000"]

    # Strands would raise KeyError for the earlier cycle's id; it was asked, so it is a duplicate.
    stale = handle_message(threads, reply(first, {"action": "approve"}), inbox)
    assert stale.outcome is Outcome.DUPLICATE
    assert tools.runs == ["refund order-4471 41000"]
    assert len(threads.invocations) == 2

    done = handle_message(threads, reply(second, {"action": "approve"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000", "delete orders"]
    for envelope in (first, second):
        assert handle_message(threads, reply(envelope, {"action": "approve"}), inbox).outcome is (
            Outcome.DUPLICATE
        )
    assert tools.runs == ["refund order-4471 41000", "delete orders"]
    assert len(threads.invocations) == 3


def test_duplicate_while_another_question_of_the_cycle_is_pending(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND, DELETE]), tools.all)

    started = handle_message(threads, start(), inbox)
    refund, delete = started.report.envelopes
    assert refund.question["function"] == "issue_refund"
    assert delete.question["function"] == "delete_records"

    partial = handle_message(threads, reply(refund, {"action": "approve"}), inbox)
    assert partial.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000"]
    # The unanswered one is still pending under its same id, and is published again.
    assert partial.question_ids == [delete.question_id]

    # Strands would take this silently (see test_framework_rules); we refuse it without a call.
    duplicate = handle_message(threads, reply(refund, {"action": "reject"}), inbox)
    assert duplicate.outcome is Outcome.DUPLICATE
    assert "no longer pending" in (duplicate.detail or "")
    assert len(threads.invocations) == 2

    redelivered = handle_message(threads, start(), inbox)
    assert redelivered.outcome is Outcome.REPUBLISHED
    assert redelivered.question_ids == [delete.question_id]

    done = handle_message(threads, reply(delete, {"action": "approve"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result is not None
    assert done.result.stop_reason == "end_turn"
    assert tools.runs == ["refund order-4471 41000", "delete orders"]


def test_null_answer_is_refused_and_the_question_stays_open(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    envelope = only_envelope(handle_message(threads, start(), inbox))

    refused = handle_message(threads, reply(envelope, None), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert "null" in (refused.detail or "")
    assert len(threads.invocations) == 1

    assert handle_message(threads, reply(envelope, {"action": "approve"}), inbox).outcome is (
        Outcome.RESUMED
    )
    assert tools.runs == ["refund order-4471 41000"]


def test_answer_to_a_thread_that_never_ran(factory: Factory, inbox: MemoryAnnounce) -> None:
    threads = factory(ScriptedModel([REFUND]), Tools().all)
    handled = handle_message(
        threads,
        {"thread_id": "fresh", "question_id": "q-1", "answer": {"action": "approve"}},
        inbox,
    )
    assert handled.outcome is Outcome.UNKNOWN_QUESTION
    assert threads.invocations == []


def test_bad_messages_and_factories_raise_clear_errors(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    threads = factory(ScriptedModel([REFUND]), Tools().all)
    with pytest.raises(ValidationError, match="thread_id"):
        handle_message(threads, {"input": "refund"}, inbox)
    with pytest.raises(TypeError, match=r"expected a strands\.Agent"):
        handle_message(lambda thread_id: object(), start(), inbox)  # type: ignore[arg-type, return-value]


def test_json_text_messages_and_object_inputs(factory: Factory, inbox: MemoryAnnounce) -> None:
    threads = factory(ScriptedModel([REFUND]), Tools().all)
    message = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
    handled = handle_message(threads, json.dumps(message).encode(), inbox)
    assert handled.outcome is Outcome.STARTED
    # The object input reached the model as its JSON text.
    first = threads("order-4471").messages[0]
    assert json.loads(first["content"][0]["text"]) == message["input"]

    custom = factory(ScriptedModel("ok"), [])
    handle_message(
        custom, {"thread_id": "t-2", "input": {"n": 1}}, inbox, prompt=lambda v: f"n={v['n']}"
    )
    assert custom("t-2").messages[0]["content"][0]["text"] == "n=1"


def test_expires_at_is_measured_from_each_publish(factory: Factory, inbox: MemoryAnnounce) -> None:
    threads = factory(ScriptedModel([REFUND]), Tools().all)
    first = only_envelope(handle_message(threads, start(), inbox, clock=lambda: NOW))
    later = only_envelope(
        handle_message(threads, start(), inbox, clock=lambda: NOW + timedelta(days=1))
    )
    assert first.expires_at == "2026-09-14T09:00:00Z"
    assert later.expires_at == "2026-09-15T09:00:00Z"
    assert later.question_id == first.question_id


class Broken(BaseAnnounce):
    name = "broken"

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("transport down")


def test_announcer_failure_is_reported_and_strict_raises_after_parking(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)

    handled = handle_message(threads, start(), [Broken(), inbox])
    assert handled.outcome is Outcome.STARTED
    assert not handled.report.ok
    [failure] = handled.report.failures
    assert failure.announcer == "broken"
    assert "transport down" in (failure.error or "")
    assert len(inbox.envelopes) == 1

    # strict: the error reaches the host (so it can leave the message unacknowledged) ...
    with pytest.raises(AnnounceFailed, match="broken"):
        handle_message(threads, start(), [Broken()], strict=True)
    # ... and the redelivery publishes the same question again, running nothing.
    again = handle_message(threads, start(), inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == inbox.question_ids[:1]
    assert tools.runs == []
    assert len(threads.invocations) == 1


def test_factory_ignoring_the_thread_id_is_warned_about(
    factory: Factory, inbox: MemoryAnnounce, sessions: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def wrong(thread_id: str) -> Agent:
        return Agent(
            model=ScriptedModel("hi"),
            session_manager=FileSessionManager(session_id="other", storage_dir=str(sessions)),
            callback_handler=None,
        )

    with caplog.at_level(logging.WARNING, logger="agent_wait.strands._host"):
        handled = handle_message(wrong, start("t-1"), inbox)
    assert handled.outcome is Outcome.STARTED
    assert "session_id 'other'" in caplog.text


async def test_ahandle_message_whole_loop_with_async_tools_and_factory(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    runs: list[int] = []

    @tool(context=True)
    @wait(WaitPolicy(timeout="PT1H"))
    async def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return f"refunded {amount}"

    threads = factory(ScriptedModel([REFUND]), [issue_refund])

    async def agent_for(thread_id: str) -> Agent:
        return threads(thread_id)

    started = await ahandle_message(agent_for, start(), inbox, clock=lambda: NOW)
    assert started.outcome is Outcome.STARTED
    envelope = only_envelope(started)
    assert envelope.expires_at == "2026-09-11T10:00:00Z"

    again = await ahandle_message(threads, start(), inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == [envelope.question_id]

    resumed = await ahandle_message(agent_for, reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert runs == [41000]
    duplicate = await ahandle_message(agent_for, reply(envelope, {"action": "approve"}), inbox)
    assert duplicate.outcome is Outcome.DUPLICATE
    assert runs == [41000]
    assert len(threads.invocations) == 2


def batch(first: WaitEnvelope, answer: Any, *more: tuple[WaitEnvelope, Any]) -> dict[str, Any]:
    """One message answering several questions: the first as usual, the rest in more_answers."""
    return {
        **reply(first, answer),
        "more_answers": [{"question_id": e.question_id, "answer": a} for e, a in more],
    }


def test_one_message_answers_both_questions_and_resumes_once(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND, DELETE]), tools.all)
    refund, delete = handle_message(threads, start(), inbox).report.envelopes
    message = batch(refund, {"action": "approve"}, (delete, {"action": "reject"}))
    done = handle_message(threads, message, inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result is not None
    assert done.result.stop_reason == "end_turn"
    assert tools.runs == ["refund order-4471 41000"]
    assert len(threads.invocations) == 2  # the start, and one resume for both answers
    again = handle_message(threads, message, inbox)
    assert again.outcome is Outcome.DUPLICATE
    assert len(threads.invocations) == 2
