"""A refund graph checkpointed in a SqliteSaver file: one process per run of ``main``.

Used by test_restart.py: ``python refund_app.py CHECKPOINTS INBOX RUNS MESSAGE...`` handles each
message (JSON) in turn and prints one JSON line per message.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import WaitPolicy, announcer
from agent_wait.langgraph import handle_message, wait


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def main(checkpoints: str, inbox: str, runs: str, messages: list[str]) -> None:
    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int) -> str:
        with Path(runs).open("a") as log:  # the side effect, counted across processes
            log.write(f"{order_id} {amount}\n")
        return f"refunded {amount} on {order_id}"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(connection))
    announce = announcer("sqlite", path=inbox)
    for message in messages:
        handled = handle_message(graph, json.loads(message), announce)
        result = handled.result.get("result") if isinstance(handled.result, dict) else None
        line = {"outcome": str(handled.outcome), "question_ids": handled.question_ids}
        print(json.dumps({**line, "result": result}), flush=True)
    connection.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
