"""A LangGraph worker process for test_serve.py: ``serve`` over the embedded entry point.

``python serve_app.py CHECKPOINTS RUNS [BLOCK_MARKER]``: two gated steps (``issue_refund``,
then ``notify_customer``), checkpointed in a SqliteSaver file, questions in the default inbox.
With BLOCK_MARKER, publishing the ``notify_customer`` question writes that file and hangs, so
the test can kill the worker mid-message.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import BaseAnnounce, SqliteAnnounce, SqliteEntry, WaitEnvelope, WaitPolicy
from agent_wait.langgraph import serve, wait


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any
    notified: Any


class HangOnNotify(BaseAnnounce):
    name = "hang"

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def deliver(self, envelope: WaitEnvelope) -> None:
        if envelope.source is not None and envelope.source.function == "notify_customer":
            self.marker.write_text(envelope.question_id)
            time.sleep(3600)


def main(checkpoints: str, runs: str, marker: str | None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)

    def log(line: str) -> None:
        with Path(runs).open("a") as out:  # the side effect, counted across processes
            out.write(line + "\n")

    @wait(WaitPolicy(timeout="P3D"))
    def issue_refund(order_id: str, amount: int) -> str:
        log(f"refund {order_id} {amount}")
        return f"refunded {amount} on {order_id}"

    @wait(WaitPolicy(timeout="P3D"))
    def notify_customer(order_id: str) -> str:
        log(f"notify {order_id}")
        return "notified"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_node("notify", lambda s: {"notified": notify_customer(s["order_id"])})
    builder.add_edge(START, "refund")
    builder.add_edge("refund", "notify")
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(connection))
    announce: list[BaseAnnounce] = [SqliteAnnounce()]
    if marker:
        announce.append(HangOnNotify(Path(marker)))
    entry = SqliteEntry(visibility_timeout=2.0, poll_interval=0.05, retry_delay=0.0)
    report = serve(graph, entry, announce, wait=0.2)
    print(f"acknowledged={report.acknowledged} dead={report.dead_lettered}", flush=True)
    connection.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
