"""The generic worker loop: acknowledgement rules, per-thread exclusion, bounded concurrency, stop."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import SqliteEntry, hookimpl, parse_message
from agent_wait.host import ServeStatus, aserve_entry, serve_entry
from agent_wait.testing import registered_plugin
from tests.serving import probe, until


def make_entry(path: Path, **options: Any) -> SqliteEntry:
    return SqliteEntry(path, poll_interval=0.02, retry_delay=0.0, **options)


class Recorder:
    """A handler that records overlaps per thread and overall."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.active: Counter[str] = Counter()
        self.total = 0
        self.max_total = 0
        self.max_per_thread = 0
        self.order: dict[str, list[int]] = {}

    def enter(self, message: dict[str, Any]) -> None:
        with self.lock:
            thread = message["thread_id"]
            self.active[thread] += 1
            self.total += 1
            self.max_total = max(self.max_total, self.total)
            self.max_per_thread = max(self.max_per_thread, self.active[thread])
            self.order.setdefault(thread, []).append(message["n"])

    def leave(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.active[message["thread_id"]] -= 1
            self.total -= 1

    def __call__(self, message: dict[str, Any]) -> str:
        self.enter(message)
        time.sleep(self.delay)
        self.leave(message)
        return "ok"


def stop_when(condition: Any, stop: threading.Event | asyncio.Event, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()


def test_one_thread_at_a_time_threads_in_parallel_up_to_the_bound(tmp_path: Path) -> None:
    entry = make_entry(tmp_path / "inbox.sqlite3")
    for n in range(24):
        entry.send({"thread_id": f"t{n % 6}", "input": None, "n": n})
    recorder = Recorder()
    stop = threading.Event()
    watcher = threading.Thread(
        target=stop_when, args=(lambda: sum(map(len, recorder.order.values())) == 24, stop)
    )
    watcher.start()
    report = serve_entry(recorder, entry, concurrency=3, wait=0.05, stop=stop)
    watcher.join()
    assert report.acknowledged == 24
    assert recorder.max_per_thread == 1
    assert 1 < recorder.max_total <= 3
    for thread, order in recorder.order.items():
        assert order == sorted(order), f"thread {thread} out of order: {order}"
    assert entry.receive(10) == []


def test_failures_are_retried_then_dead_lettered_and_malformed_at_once(tmp_path: Path) -> None:
    entry = make_entry(tmp_path / "inbox.sqlite3", max_attempts=3)
    entry.send({"thread_id": "flaky", "input": None, "n": 0})
    entry.send({"thread_id": "broken", "input": None, "n": 0})
    entry.send({"thread_id": "bad", "question_id": "q", "answer": 1})
    calls: Counter[str] = Counter()

    def handle(message: dict[str, Any]) -> object:
        calls[message["thread_id"]] += 1
        if message["thread_id"] == "bad":
            return parse_message({"thread_id": "bad", "question_id": ""})  # a ValidationError
        if message["thread_id"] == "broken" or calls["flaky"] < 2:
            raise ConnectionError("transport down")
        return "ok"

    stop = threading.Event()
    watcher = threading.Thread(
        target=stop_when,
        args=(lambda: len(entry.dead_letters()) == 2 and calls["flaky"] >= 2, stop),
    )
    watcher.start()
    report = serve_entry(handle, entry, wait=0.05, stop=stop)
    watcher.join()
    assert calls == {"flaky": 2, "broken": 3, "bad": 1}
    dead = {d.thread_id: d for d in entry.dead_letters()}
    assert dead["broken"].error == "ConnectionError: transport down"
    assert dead["broken"].attempts == 3
    assert dead["bad"].attempts == 1
    assert dead["bad"].error.startswith("ValidationError")
    assert (report.acknowledged, report.dead_lettered, report.retried) == (1, 2, 3)


@pytest.mark.parametrize("serve", ["sync", "async"])
def test_poison_in_a_batch_is_dead_lettered_and_the_rest_is_handled(
    tmp_path: Path, serve: str
) -> None:
    path = tmp_path / "inbox.sqlite3"
    entry = make_entry(path)
    entry.send({"thread_id": "a", "input": None, "n": 0})
    entry.send({"thread_id": "b", "input": None, "n": 0})
    entry.dead_letters()  # the table exists
    connection = sqlite3.connect(path)
    with connection:
        for thread, body in [("a", b"not json{"), ("c", b"[1, 2]"), ("b", b"\xff")]:
            connection.execute(
                "INSERT INTO agent_wait_messages (thread_id, body, state, attempts, visible_at, "
                "sent_at) VALUES (?, ?, 'ready', 0, 0, '2026-01-01T00:00:00Z')",
                (thread, body),
            )
    connection.close()
    for n in (1, 2):
        entry.send({"thread_id": "a", "input": None, "n": n})
    entry.send({"thread_id": "c", "input": None, "n": 0})
    recorder = Recorder(delay=0.0)
    if serve == "sync":
        stop = threading.Event()
        watcher = threading.Thread(
            target=stop_when, args=(lambda: sum(map(len, recorder.order.values())) == 5, stop)
        )
        watcher.start()
        report = serve_entry(recorder, entry, concurrency=2, wait=0.05, stop=stop)
        watcher.join()
    else:

        async def handle(message: dict[str, Any]) -> str:
            return recorder(message)

        async def main() -> Any:
            stop = asyncio.Event()

            async def watch() -> None:
                while sum(map(len, recorder.order.values())) < 5:
                    await asyncio.sleep(0.02)
                stop.set()

            watcher = asyncio.create_task(watch())
            served = await aserve_entry(handle, entry, concurrency=2, wait=0.05, stop=stop)
            await watcher
            return served

        report = asyncio.run(main())
    assert recorder.order == {"a": [0, 1, 2], "b": [0], "c": [0]}
    assert report.acknowledged == 5
    dead = {d.thread_id: d for d in entry.dead_letters()}
    assert {thread: (d.attempts, d.body) for thread, d in dead.items()} == {
        "a": (1, "not json{"),
        "b": (1, "\\xff"),
        "c": (1, "[1, 2]"),
    }
    assert all(d.error.startswith("PoisonMessage: ") for d in dead.values())
    entry.close()


def test_async_loop(tmp_path: Path) -> None:
    entry = make_entry(tmp_path / "inbox.sqlite3")
    for n in range(12):
        entry.send({"thread_id": f"t{n % 4}", "input": None, "n": n})
    recorder = Recorder()

    async def handle(message: dict[str, Any]) -> str:
        recorder.enter(message)
        await asyncio.sleep(0.05)
        recorder.leave(message)
        return "ok"

    async def main() -> Any:
        stop = asyncio.Event()

        async def watch() -> None:
            while sum(map(len, recorder.order.values())) < 12 or recorder.total:
                await asyncio.sleep(0.02)
            stop.set()

        watcher = asyncio.create_task(watch())
        report = await aserve_entry(handle, entry, concurrency=2, wait=0.05, stop=stop)
        await watcher
        return report

    report = asyncio.run(main())
    assert report.acknowledged == 12
    assert recorder.max_per_thread == 1
    assert 1 < recorder.max_total <= 2


WORKER = """
import sys, time
from pathlib import Path
from agent_wait.core import SqliteEntry
from agent_wait.host import serve_entry
path, log = sys.argv[1], Path(sys.argv[2])
def handle(message):
    with log.open("a") as out:
        out.write("start\\n")
    time.sleep(1.5)
    with log.open("a") as out:
        out.write("end\\n")
report = serve_entry(handle, SqliteEntry(path, poll_interval=0.02), wait=0.1)
print(report.acknowledged)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_finishes_the_message_in_hand(tmp_path: Path, sig: signal.Signals) -> None:
    path, log = tmp_path / "inbox.sqlite3", tmp_path / "log.txt"
    with make_entry(path) as entry:
        entry.send({"thread_id": "t", "input": None})
        entry.send({"thread_id": "t", "input": None, "second": True})
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 30
    while not (log.exists() and "start" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    worker.send_signal(sig)
    out, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0
    assert out.strip() == "1"
    assert log.read_text() == "start\nend\n"
    with make_entry(path) as entry:
        [left] = entry.receive(10)
    assert json.loads(json.dumps(left.message)) == {"thread_id": "t", "input": None, "second": True}
    assert left.attempt == 1


def test_bad_concurrency_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="concurrency: expected a whole number >= 1, got 0"):
        serve_entry(lambda m: None, make_entry(tmp_path / "x.sqlite3"), concurrency=0)


def test_failures_log_no_content_at_info_or_above(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = make_entry(tmp_path / "inbox.sqlite3", max_attempts=2)
    entry.send({"thread_id": "t", "question_id": "q", "answer": {"note": "SECRET-NOTE"}})

    def handle(message: dict[str, Any]) -> object:
        raise RuntimeError(f"cannot apply {message['answer']['note']}")

    stop = threading.Event()
    watcher = threading.Thread(target=stop_when, args=(lambda: entry.dead_letters(), stop))
    watcher.start()
    with caplog.at_level("DEBUG", logger="agent_wait"):
        serve_entry(handle, entry, wait=0.05, stop=stop)
    watcher.join()
    [dead] = entry.dead_letters()
    assert dead.error == "RuntimeError: cannot apply SECRET-NOTE"  # kept for whoever looks
    loud = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert any("RuntimeError" in r.getMessage() for r in loud)
    assert not any("SECRET-NOTE" in caplog.handler.format(r) for r in loud)
    assert any("SECRET-NOTE" in caplog.handler.format(r) for r in caplog.records)  # at DEBUG


class GatedEntry(SqliteEntry):
    """Renewing a message of thread ``a`` waits for ``gate`` (after setting ``renewing``)."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, poll_interval=0.02, retry_delay=0.0, **options)
        self.renewing = threading.Event()
        self.gate = threading.Event()
        self.acked: dict[str, bool] = {}
        self.all_acked = threading.Event()

    def extend(self, received: Any) -> bool:
        if received.thread_id == "a" and not self.renewing.is_set():
            self.renewing.set()
            assert self.gate.wait(60), "the gate was never opened"
        return super().extend(received)

    def ack(self, received: Any) -> bool:
        acknowledged = super().ack(received)
        self.acked[received.thread_id] = acknowledged
        if received.thread_id == "b":
            self.gate.set()
        if len(self.acked) == 2:
            self.all_acked.set()
        return acknowledged


LOST = "its lease ran out before it was settled"


def test_a_renewal_pass_leaves_a_message_acknowledged_during_it_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Renewing a blocks until b was acknowledged; the same pass then comes to b, which was
    # in flight when it began: it must not be extended, and no lease was lost.
    entry = GatedEntry(tmp_path / "inbox.sqlite3", visibility_timeout=9.0)
    entry.send({"thread_id": "a", "input": None})
    entry.send({"thread_id": "b", "input": None})

    def handle(message: dict[str, Any]) -> str:
        if message["thread_id"] == "b":
            assert entry.renewing.wait(60), "no renewal pass began"
        else:
            assert entry.gate.wait(60), "b never settled"
        return "ok"

    stop = threading.Event()
    watcher = threading.Thread(target=stop_when, args=(entry.all_acked.is_set, stop, 60.0))
    watcher.start()
    with caplog.at_level("WARNING", logger="agent_wait"):
        report = serve_entry(handle, entry, concurrency=2, wait=0.05, stop=stop)
    watcher.join()
    assert entry.acked == {"a": True, "b": True}
    assert (report.acknowledged, report.lost_leases) == (2, 0)
    assert not [r for r in caplog.records if LOST in r.getMessage()]


def test_a_lease_really_lost_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Renewing a blocks until another receiver took a over (its lease lapsed meanwhile).
    path = tmp_path / "inbox.sqlite3"
    entry = GatedEntry(path, visibility_timeout=3.0)
    entry.send({"thread_id": "a", "input": None})
    taken: list[Any] = []

    def take_over() -> None:
        assert entry.renewing.wait(60), "no renewal pass began"
        with SqliteEntry(path, poll_interval=0.02) as other:
            taken.extend(other.receive(1, wait=60.0))
        entry.gate.set()

    def handle(message: dict[str, Any]) -> str:
        assert entry.gate.wait(60), "a was never taken over"
        return "ok"

    stop = threading.Event()
    thief = threading.Thread(target=take_over)
    thief.start()
    watcher = threading.Thread(target=stop_when, args=(lambda: "a" in entry.acked, stop, 60.0))
    watcher.start()
    with caplog.at_level("WARNING", logger="agent_wait"):
        report = serve_entry(handle, entry, concurrency=1, wait=0.05, stop=stop)
    thief.join()
    watcher.join()
    [again] = taken
    assert again.attempt == 2
    assert entry.acked == {"a": False}
    assert report.lost_leases == 1
    assert [r for r in caplog.records if LOST in r.getMessage()]


class FlakyEntry(SqliteEntry):
    """Every receive raises ConnectionError while ``down`` is set, as a broker gone away."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, poll_interval=0.02)
        self.down = threading.Event()

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Any]:
        if self.down.is_set():
            raise ConnectionError("broker at 127.0.0.1:1: Connection refused")
        return super().receive(max_messages, wait)


def test_health_endpoints_follow_the_loop_and_the_entry_point(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = FlakyEntry(tmp_path / "inbox.sqlite3")
    statuses: list[ServeStatus] = []

    class Started:
        @hookimpl
        def worker_started(self, status: ServeStatus) -> None:
            statuses.append(status)

    stop = threading.Event()
    seen: dict[str, tuple[int, dict[str, Any]]] = {}

    def operator() -> None:
        try:
            [status] = until(lambda: statuses, "the worker started")
            address = status.health_address
            assert address is not None
            until(lambda: probe(address, "/readyz")[0] == 200, "ready")
            seen["healthz"] = probe(address, "/healthz")
            seen["ready"] = probe(address, "/readyz")
            seen["missing"] = probe(address, "/metrics")
            entry.down.set()
            seen["outage"] = until(
                lambda: (r := probe(address, "/readyz"))[0] == 503 and r, "not ready"
            )
            seen["alive in the outage"] = probe(address, "/healthz")
            entry.down.clear()
            until(lambda: probe(address, "/readyz")[0] == 200, "ready again")
        finally:
            stop.set()

    watcher = threading.Thread(target=operator)
    watcher.start()
    with (
        registered_plugin(Started(), "test-started"),
        caplog.at_level("WARNING", logger="agent_wait"),
    ):
        serve_entry(lambda m: None, entry, wait=0.05, stop=stop, health="127.0.0.1:0")
    watcher.join()
    assert seen["healthz"] == (200, {"status": "ok"})
    assert seen["ready"] == (200, {"status": "ready", "entry": "sqlite", "in_flight": 0})
    assert seen["missing"][0] == 404  # the two paths only
    code, body = seen["outage"]
    assert code == 503
    assert body["status"] == "unavailable"
    assert body["unreachable_for_s"] >= 0
    assert seen["alive in the outage"][0] == 200
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if "unreachable while receiving" in line]) == 1
    assert len([line for line in lines if "reachable again after" in line]) == 1
    # The endpoints are gone with the worker.
    with pytest.raises(OSError):
        probe(statuses[0].health_address or ("", 0), "/healthz")


@pytest.mark.parametrize("ready", [lambda: None, {"checkpointer": "sqlite"}, {1: lambda: None}])
def test_bad_readiness_checks_name_the_option(tmp_path: Path, ready: Any) -> None:
    with pytest.raises(TypeError, match=r"ready: expected a mapping of names to callables, got"):
        serve_entry(lambda m: None, make_entry(tmp_path / "x.sqlite3"), ready=ready)


@pytest.mark.parametrize("health", ["nowhere", "127.0.0.1:99999", True])
def test_a_bad_health_address_names_the_option(tmp_path: Path, health: Any) -> None:
    with pytest.raises(ValueError, match=r"health: expected a port or 'host:port', got"):
        serve_entry(lambda m: None, make_entry(tmp_path / "x.sqlite3"), health=health)


def test_a_failure_logs_where_it_was_raised_and_the_traceback_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = make_entry(tmp_path / "inbox.sqlite3", max_attempts=1)
    entry.send({"thread_id": "t", "input": None})

    def charge(message: dict[str, Any]) -> None:
        try:
            {}["card"]
        except KeyError as error:
            raise RuntimeError("payment failed") from error

    stop = threading.Event()
    watcher = threading.Thread(target=stop_when, args=(lambda: entry.dead_letters(), stop))
    watcher.start()
    with caplog.at_level("DEBUG", logger="agent_wait"):
        serve_entry(charge, entry, wait=0.05, stop=stop)
    watcher.join()
    [failed] = [r for r in caplog.records if "failed:" in r.getMessage()]
    assert failed.levelno == logging.WARNING
    assert failed.getMessage().startswith(
        "message 1 of thread t (attempt 1) failed: RuntimeError in charge (test_worker.py:"
    )
    assert "raised from KeyError in charge (test_worker.py:" in failed.getMessage()
    assert "\n" not in failed.getMessage()
    assert failed.exc_info is None
    assert [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]


def test_the_async_loop_rides_out_an_outage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = FlakyEntry(tmp_path / "inbox.sqlite3")
    entry.send({"thread_id": "t", "input": None, "n": 0})
    handled: list[int] = []

    async def handle(message: dict[str, Any]) -> None:
        handled.append(message["n"])
        if message["n"] == 0:
            entry.down.set()  # the broker goes away while the first message is in hand

    async def main() -> Any:
        stop = asyncio.Event()

        async def operator() -> None:
            while not [r for r in caplog.records if "unreachable while" in r.getMessage()]:
                await asyncio.sleep(0.02)
            entry.send({"thread_id": "t", "input": None, "n": 1})
            entry.down.clear()
            while handled != [0, 1]:
                await asyncio.sleep(0.02)
            stop.set()

        watcher = asyncio.create_task(operator())
        report = await asyncio.wait_for(aserve_entry(handle, entry, wait=0.05, stop=stop), 60)
        await watcher
        return report

    with caplog.at_level("WARNING", logger="agent_wait"):
        report = asyncio.run(main())
    assert handled == [0, 1]
    assert report.acknowledged == 2
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if "unreachable while receiving" in line]) == 1
    assert len([line for line in lines if "reachable again after" in line]) == 1
