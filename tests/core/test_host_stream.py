"""stream_message / astream_message: the plan over a host whose runs stream events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from typing import Any

import pytest

from agent_wait.core import MemoryAnnounce, Outcome, StartMessage
from agent_wait.host import Ran, astream_message, stream_message
from tests.core.test_host import Ledger, Result, Thread


class StreamingLedger(Ledger):
    """The in-memory ledger, streaming one event per step of its runs."""

    def __init__(self, *, fail_resume: bool = False, forget_result: bool = False) -> None:
        super().__init__(asks=2)
        self.fail_resume = fail_resume
        self.forget_result = forget_result
        self.closed_early: list[str] = []

    def stream_start(self, thread: Thread, message: StartMessage) -> Iterator[Any]:
        yield {"step": "thinking"}
        result = self.start(thread, message)
        yield {"step": "asked", "pending": list(result.pending)}
        if not self.forget_result:
            yield Ran(result)

    def stream_resume(self, thread: Thread, answers: Mapping[str, Any]) -> Iterator[Any]:
        yield {"step": "resuming"}
        if self.fail_resume:
            raise RuntimeError("the tool choked on the answer")
        yield Ran(self.resume(thread, answers))

    async def astream_start(self, thread: Thread, message: StartMessage) -> AsyncIterator[Any]:
        try:
            for item in self.stream_start(thread, message):
                yield item
        except GeneratorExit:
            self.closed_early.append("start")
            raise

    async def astream_resume(
        self, thread: Thread, answers: Mapping[str, Any]
    ) -> AsyncIterator[Any]:
        for item in self.stream_resume(thread, answers):
            yield item


START = {"thread_id": "t", "input": "go"}


def test_events_then_the_same_outcomes_as_handle_message() -> None:
    host, inbox = StreamingLedger(), MemoryAnnounce()
    run = stream_message(host, START, inbox)
    assert list(run) == [{"step": "thinking"}, {"step": "asked", "pending": ["t-q1"]}]
    assert run.handled.outcome is Outcome.STARTED
    assert run.handled.result == Result("t", ["t-q1"])
    assert inbox.question_ids == ["t-q1"]

    again = stream_message(host, START, inbox)
    assert list(again) == []
    assert again.handled.outcome is Outcome.REPUBLISHED

    answer = {"thread_id": "t", "question_id": "t-q1", "answer": {"ok": True}}
    resumed = stream_message(host, answer, inbox)
    assert list(resumed) == [{"step": "resuming"}]
    assert resumed.handled.outcome is Outcome.RESUMED
    assert resumed.handled.question_ids == ["t-q2"]

    invalid = stream_message(host, {**answer, "question_id": "t-q2", "answer": 1}, inbox)
    assert list(invalid) == []
    assert invalid.handled.outcome is Outcome.INVALID_ANSWER


def test_a_stream_that_fails_mid_resume_is_a_failed_resume() -> None:
    host, inbox = StreamingLedger(fail_resume=True), MemoryAnnounce()
    list(stream_message(host, START, inbox))
    run = stream_message(host, {"thread_id": "t", "question_id": "t-q1", "answer": {}}, inbox)
    assert list(run) == [{"step": "resuming"}]
    assert run.handled.outcome is Outcome.RESUME_FAILED
    assert isinstance(run.handled.error, RuntimeError)


def test_a_stream_without_its_result_is_a_clear_error() -> None:
    run = stream_message(StreamingLedger(forget_result=True), START, MemoryAnnounce())
    with pytest.raises(TypeError, match=r"ended without a Ran\(result\) item"):
        list(run)


class AsyncStreamingLedger:
    """The streaming ledger behind awaitable IO."""

    def __init__(self, ledger: StreamingLedger) -> None:
        self.ledger = ledger
        self.holds_answers = False
        self.waiting = ledger.waiting
        self.check = ledger.check
        self.questions_in = ledger.questions_in
        self.astream_start = ledger.astream_start
        self.astream_resume = ledger.astream_resume

    async def load(self, thread_id: str) -> Thread:
        return self.ledger.load(thread_id)

    async def asked(self, thread: Thread, question_id: str) -> bool:
        return self.ledger.asked(thread, question_id)


async def test_async_events_then_the_outcome() -> None:
    host, inbox = AsyncStreamingLedger(StreamingLedger()), MemoryAnnounce()
    run = astream_message(host, START, inbox)  # pyright: ignore[reportArgumentType]
    assert [e async for e in run] == [{"step": "thinking"}, {"step": "asked", "pending": ["t-q1"]}]
    assert run.handled.outcome is Outcome.STARTED
    assert inbox.question_ids == ["t-q1"]
    with pytest.raises(RuntimeError, match="iterate the streamed run"):
        astream_message(host, START, inbox).handled  # noqa: B018  # pyright: ignore[reportArgumentType]


async def test_an_async_stream_left_early_closes_the_hosts_stream_at_once() -> None:
    ledger, inbox = StreamingLedger(), MemoryAnnounce()
    run = astream_message(AsyncStreamingLedger(ledger), START, inbox)  # pyright: ignore[reportArgumentType]
    async with aclosing(aiter(run)) as events:
        async for _ in events:
            break
    # The host's own clean-up ran before the consumer went on, not at the loop's finalization.
    assert ledger.closed_early == ["start"]
    assert inbox.question_ids == []
