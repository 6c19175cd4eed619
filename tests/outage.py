"""One check for network entry points: workers behind a proxy that takes the broker away twice
for 5 s ride it out. Every message's effect happens once, each thread's in send order, and no
worker stops before it is told to."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agent_wait.core import EntryPoint
from agent_wait.host import ServeReport, serve_entry
from tests.proxy import Proxy

THREADS = 12
PER_THREAD = 4
OUTAGE = 5.0


class Effects:
    """A host with duplicate handling: a message seen again (its acknowledgement was lost) runs
    nothing, as a framework host reports a redelivered answer as a duplicate."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done: dict[str, list[int]] = {}
        self.runs = 0
        self.duplicates = 0
        self.count_changed = threading.Condition(self.lock)

    def __call__(self, message: dict[str, Any]) -> str:
        time.sleep(0.02)  # a little work, so that the drops find messages in hand
        with self.lock:
            seen = self.done.setdefault(message["thread_id"], [])
            if message["n"] in seen:
                self.duplicates += 1
                return "duplicate"
            seen.append(message["n"])
            self.runs += 1
            self.count_changed.notify_all()
        return "handled"

    def wait_for(self, runs: int, workers: list[threading.Thread], timeout: float = 90.0) -> None:
        """Until ``runs`` messages took effect; fails at once when a worker stopped."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.runs < runs:
                assert all(w.is_alive() for w in workers), "a worker stopped during the outage"
                assert time.monotonic() < deadline, f"only {self.runs} of {runs} messages handled"
                self.count_changed.wait(0.5)


def check_rides_out_outages(
    target: int,
    make_entry: Callable[[int], EntryPoint],
    caplog: pytest.LogCaptureFixture,
    *,
    workers_count: int = 2,
) -> None:
    """``make_entry(port)`` builds the entry point with the server at 127.0.0.1:``port``."""
    total = THREADS * PER_THREAD
    with make_entry(target) as sender:
        for n in range(PER_THREAD):
            for t in range(THREADS):
                sender.send({"thread_id": f"outage-{t}", "input": None, "n": n})
    effects = Effects()
    stop = threading.Event()
    reports: list[ServeReport] = []
    errors: list[BaseException] = []

    def work(entry: EntryPoint) -> None:
        try:
            reports.append(serve_entry(effects, entry, concurrency=3, wait=0.5, stop=stop))
        except BaseException as error:  # the check is that none gets here
            errors.append(error)
            raise

    with Proxy(target) as proxy, caplog.at_level(logging.WARNING, logger="agent_wait"):
        entries = [make_entry(proxy.port) for _ in range(workers_count)]
        workers = [threading.Thread(target=work, args=(entry,)) for entry in entries]
        try:
            for worker in workers:
                worker.start()
            for share in (4, 2):
                effects.wait_for(total // share, workers)
                proxy.cut()
                time.sleep(OUTAGE)  # the outage's length: the faults being tested
                proxy.restore()
            effects.wait_for(total, workers)
            assert all(w.is_alive() for w in workers), errors
        finally:
            stop.set()
            for worker in workers:
                worker.join(timeout=120)
            for entry in entries:
                entry.close()
    assert errors == []
    assert len(reports) == workers_count
    assert proxy.cuts == 2
    for t in range(THREADS):
        assert effects.done[f"outage-{t}"] == list(range(PER_THREAD))
    assert effects.runs == total
    # Nothing left behind, nothing dead-lettered, no acknowledgement counted twice.
    with make_entry(target) as sender:
        assert sender.receive(10) == []
        assert sender.dead_letters() == []
    assert sum(r.acknowledged for r in reports) <= total + effects.duplicates
    outages = [r for r in caplog.records if "unreachable while" in r.getMessage()]
    back = [r for r in caplog.records if "reachable again after" in r.getMessage()]
    assert outages, "no outage was noticed"
    assert len(back) >= 1
    # Once per outage and worker, not once per failed call.
    assert len(outages) <= 2 * workers_count
