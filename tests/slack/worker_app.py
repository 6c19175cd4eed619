"""A LangGraph worker process for the Slack end-to-end test: ``serve`` on the embedded entry point.

``python worker_app.py RUNS``: one gated step (``issue_refund``, tagged for the finance
approvers); questions go to the configured announcers (``AGENT_WAIT_ANNOUNCE``: the inbox and
Slack). The body appends a line to RUNS, the side effect counted across processes.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from agent_wait.core import SqliteEntry, WaitPolicy
from agent_wait.langgraph import serve, wait


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def main(runs: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)

    @wait(
        WaitPolicy(timeout="P3D", default={"action": "reject"}, tags={"approver_group": "finance"})
    )
    def issue_refund(order_id: str, amount: int) -> str:
        with Path(runs).open("a") as out:
            out.write(f"refund {order_id} {amount}\n")
        return f"refunded {amount} on {order_id}"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    report = serve(graph, SqliteEntry(poll_interval=0.05), wait=0.2)
    print(f"acknowledged={report.acknowledged} dead={report.dead_lettered}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
