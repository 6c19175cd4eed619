"""The worker on the SQS entry point (real moto server): batches of up to ten messages, several
of one thread among them, are handled one thread message at a time, in order; held messages keep
their leases, go back behind a failure, and go back at once when the worker stops."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agent_wait.core import parse_message
from agent_wait.host import ServeReport, aserve_entry, serve_entry
from agent_wait.sqs import SqsEntry
from tests.aws_moto import Aws, count_requests
from tests.sqs.test_entry import fifo_with_dead_letters

pytestmark = pytest.mark.integration

Handle = Callable[[dict[str, Any]], object]


class Handled:
    """What the handler saw: per thread, (n, attempt) in handling order, and any overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[str, list[int]] = {}
        self.running: set[str] = set()
        self.overlaps: list[str] = []
        self.count = 0

    def enter(self, message: dict[str, Any]) -> None:
        with self.lock:
            thread = message["thread_id"]
            if thread in self.running:
                self.overlaps.append(thread)
            self.running.add(thread)
            self.order.setdefault(thread, []).append(message["answer"]["n"])

    def leave(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.running.discard(message["thread_id"])
            self.count += 1


def answer(thread: str, n: int) -> dict[str, Any]:
    return {"thread_id": thread, "question_id": f"q{n}", "answer": {"n": n}}


def serve(
    mode: str,
    entry: SqsEntry,
    handled: Handled,
    *,
    until: Callable[[], bool],
    concurrency: int,
    check: Callable[[dict[str, Any]], None] = lambda message: None,
    delay: Callable[[dict[str, Any]], float] = lambda message: 0.01,
) -> ServeReport:
    """``serve_entry`` or ``aserve_entry`` with a recording handler, stopped once ``until()``.

    ``check`` raises to make the handler fail.
    """
    if mode == "sync":
        stop = threading.Event()

        def handle(message: dict[str, Any]) -> None:
            handled.enter(message)
            try:
                time.sleep(delay(message))
                check(message)
            finally:
                handled.leave(message)
                if until():
                    stop.set()

        timer = threading.Timer(60.0, stop.set)
        timer.start()
        try:
            return serve_entry(handle, entry, concurrency=concurrency, wait=0.2, stop=stop)
        finally:
            timer.cancel()

    async def main() -> ServeReport:
        stop = asyncio.Event()

        async def ahandle(message: dict[str, Any]) -> None:
            handled.enter(message)
            try:
                await asyncio.sleep(delay(message))
                check(message)
            finally:
                handled.leave(message)
                if until():
                    stop.set()

        timer = asyncio.get_running_loop().call_later(60.0, stop.set)
        try:
            return await aserve_entry(ahandle, entry, concurrency=concurrency, wait=0.2, stop=stop)
        finally:
            timer.cancel()

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batches_of_mixed_threads_are_handled_in_order_one_per_thread(aws: Aws, mode: str) -> None:
    url = fifo_with_dead_letters(aws, f"order-{mode}", 3)
    client = aws.client("sqs")
    receives = count_requests(client, "sqs", "ReceiveMessage")
    sizes: list[int] = []
    client.meta.events.register(
        "after-call.sqs.ReceiveMessage",
        lambda parsed, **_: sizes.append(len(parsed.get("Messages", []))),
    )
    handled = Handled()
    at_last: list[int] = []
    with SqsEntry(url, client=client) as messages:
        # Four threads of five answers each, interleaved: every batch mixes threads and holds
        # several answers of one thread.
        for n in range(5):
            for t in range(4):
                messages.send(answer(f"t{t}", n))

        def until() -> bool:
            if handled.count == 20 and not at_last:
                at_last.append(len(sizes))
            return handled.count == 20

        report = serve(mode, messages, handled, until=until, concurrency=3)
        assert messages.receive(10, wait=0) == []
    assert handled.overlaps == [], "two answers of one thread were handled at once"
    assert handled.order == {f"t{t}": [0, 1, 2, 3, 4] for t in range(4)}
    assert (report.acknowledged, report.retried, report.released, report.lost_leases) == (
        20,
        0,
        0,
        0,
    )
    # Ten answers per request, not one: the twenty came in at most three receives (and empty
    # short polls while only held answers' threads had more).
    assert sum(sizes[: at_last[0]]) == 20
    assert len([size for size in sizes[: at_last[0]] if size]) <= 3
    assert receives[0]["MaxNumberOfMessages"] == 10


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_failure_mid_batch_gives_back_its_thread_which_goes_on_in_order_after_the_retry(
    aws: Aws, mode: str
) -> None:
    url = fifo_with_dead_letters(aws, f"retry-{mode}", 3)
    handled = Handled()
    failed: list[int] = []
    with SqsEntry(url, retry_delay=0, **aws.options) as messages:
        for n in range(4):
            messages.send(answer("a", n))
        for n in range(4):
            messages.send(answer("b", n))

        def check(message: dict[str, Any]) -> None:
            if message == answer("a", 1) and not failed:
                failed.append(1)
                raise RuntimeError("cannot handle it now")

        report = serve(
            mode, messages, handled, until=lambda: handled.count == 9, concurrency=2, check=check
        )
        assert messages.receive(10, wait=0) == []
        assert messages.dead_letters() == []
    assert handled.overlaps == []
    # a1 failed; a2 and a3, received with it, waited and went back: handled after its retry.
    assert handled.order == {"a": [0, 1, 1, 2, 3], "b": [0, 1, 2, 3]}
    assert (report.acknowledged, report.retried, report.dead_lettered) == (8, 1, 0)
    assert report.released == 2


def test_a_dead_lettered_message_lets_its_thread_go_on_with_the_held_ones(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "poison", 3)
    handled = Handled()

    def check(message: dict[str, Any]) -> None:
        if message == answer("a", 0):
            parse_message({"question_id": "no thread"})  # malformed: dead-lettered at once

    with SqsEntry(url, **aws.options) as messages:
        for n in range(3):
            messages.send(answer("a", n))
        report = serve(
            "sync", messages, handled, until=lambda: handled.count == 3, concurrency=2, check=check
        )
        [dead] = messages.dead_letters()
    assert dead.message == answer("a", 0)
    assert handled.order == {"a": [0, 1, 2]}
    assert (report.acknowledged, report.dead_lettered, report.released) == (2, 1, 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_held_messages_keep_their_lease_while_they_wait(aws: Aws, mode: str) -> None:
    url = fifo_with_dead_letters(aws, f"lease-{mode}", 3)
    handled = Handled()
    # Leases are renewed before they run out: 4 s leaves a moto request slowed by a loaded
    # machine time to land.
    with SqsEntry(url, visibility_timeout=4, **aws.options) as messages:
        messages.send(answer("a", 0))
        messages.send(answer("a", 1))  # waits behind a0, its thread's
        messages.send(answer("b", 0))  # waits for the only slot
        report = serve(
            mode,
            messages,
            handled,
            until=lambda: handled.count == 3,
            concurrency=1,
            # More than twice the visibility timeout: only renewed leases keep the held ones.
            delay=lambda message: 9.0 if message == answer("a", 0) else 0.01,
        )
        assert messages.receive(10, wait=0) == []
    assert handled.order == {"a": [0, 1], "b": [0]}
    assert (report.acknowledged, report.lost_leases, report.released) == (3, 0, 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stop_gives_back_the_held_messages_at_once(aws: Aws, mode: str) -> None:
    url = fifo_with_dead_letters(aws, f"stop-{mode}", 5)
    handled = Handled()
    with SqsEntry(url, visibility_timeout=300, **aws.options) as messages:
        for thread, n in [("a", 0), ("a", 1), ("a", 2), ("b", 0)]:
            messages.send(answer(thread, n))
        report = serve(mode, messages, handled, until=lambda: handled.count == 1, concurrency=1)
        # Visible again now, not in five minutes, in send order; the receive counted.
        back = messages.receive(10, wait=0)
        assert [(r.thread_id, r.message["answer"]["n"], r.attempt) for r in back] == [
            ("a", 1, 2),
            ("a", 2, 2),
            ("b", 0, 2),
        ]
    assert handled.order == {"a": [0]}
    assert (report.acknowledged, report.released) == (1, 3)
