"""One check for network entry points: the core serve loop over a real server keeps each thread
in send order, never runs two messages of a thread at once, and dead-letters what keeps failing."""

from __future__ import annotations

import threading
import time
from typing import Any

from agent_wait.core import EntryPoint
from agent_wait.host import serve_entry


def check_serve_loop(entry: EntryPoint, threads: int = 4, per_thread: int = 3) -> None:
    seen: list[tuple[str, int]] = []
    running: set[str] = set()
    overlaps: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    expected = threads * per_thread

    def handle(message: dict[str, Any]) -> None:
        thread = message["thread_id"]
        with lock:
            if thread in running:
                overlaps.append(thread)
            running.add(thread)
        try:
            time.sleep(0.05)  # long enough for a second message of the thread to overlap
            if message["answer"] == "poison":
                raise RuntimeError("cannot handle this one")
            with lock:
                seen.append((thread, message["answer"]))
                if len(seen) == expected:
                    stop.set()
        finally:
            with lock:
                running.discard(thread)

    for t in range(threads):
        for n in range(per_thread):
            entry.send({"thread_id": f"serve-{t}", "question_id": f"q{n}", "answer": n})
            if t == 0 and n == 0:
                entry.send({"thread_id": "serve-0", "question_id": "bad", "answer": "poison"})
    timer = threading.Timer(30.0, stop.set)
    timer.start()
    try:
        report = serve_entry(handle, entry, concurrency=4, wait=0.2, stop=stop)
    finally:
        timer.cancel()
    assert overlaps == [], "two messages of one thread were handled at once"
    for t in range(threads):
        assert [n for thread, n in seen if thread == f"serve-{t}"] == list(range(per_thread))
    assert report.acknowledged == expected
    assert report.dead_lettered == 1
    [dead] = entry.dead_letters()
    assert dead.message["answer"] == "poison"
