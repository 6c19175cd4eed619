"""A LangGraph worker process for test_chaos.py: ``serve`` over an entry point, killed at random.

``python chaos_app.py SETTINGS_JSON``: settings ``{"entry": {"use": ..., **options},
"checkpoints": path, "effects": path}``; the announcers (and so the execution ledger beside
them) come from ``AGENT_WAIT_ANNOUNCE``. The graph: ``refund`` (a gated ``issue_refund`` whose
body appends one line to the effects file, then takes a moment) -> ``settle`` (a step after the
tool, as a model call would be) -> end. Every process shares one sqlite checkpointer file.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import time
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import WaitPolicy, entry
from agent_wait.langgraph import serve, wait

# Wide enough that a kill every second lands inside a body or between steps now and then.
BODY_SECONDS = 0.2
STEP_SECONDS = 0.2


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any
    settled: str


def build(checkpoints: str, effects: str) -> Any:
    """The compiled graph on the shared checkpointer file."""

    @wait(WaitPolicy(timeout="PT1H"))
    def issue_refund(order_id: str, amount: int) -> str:
        # One write with O_APPEND: each run of the body is one whole line, whoever is killed.
        descriptor = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, f"refund {order_id} {amount}\n".encode())
        finally:
            os.close(descriptor)
        time.sleep(BODY_SECONDS)
        return f"refunded {amount}"

    def settle(state: State) -> State:
        time.sleep(STEP_SECONDS)
        return {"settled": f"settled {state['result']}"}

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_node("settle", settle)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", "settle")
    # A long busy timeout: two processes write the file, and a kill can leave a lock to expire.
    connection = sqlite3.connect(checkpoints, timeout=120, check_same_thread=False)
    return builder.compile(checkpointer=SqliteSaver(connection))


def main(settings: dict[str, Any]) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    graph = build(settings["checkpoints"], settings["effects"])
    options = dict(settings["entry"])
    messages = entry(options.pop("use"), **options)
    print("serving", flush=True)
    serve(graph, messages, None, concurrency=4, wait=0.2)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
