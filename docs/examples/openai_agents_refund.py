"""An OpenAI Agents SDK refund agent that asks a human before refunds over a threshold, offline.

1. A refund over the threshold parks on the SDK's own tool approval (a ``needs_approval``
   callable, under ``@wait`` for the policy); ``handle_message`` stores the run's ``RunState``
   in SQLite and publishes its envelope to the embedded sqlite inbox.
2. An "approver" reads the open question from the inbox (plain sqlite3: a consumer needs no
   agent-wait), approves it by copying ``reply_with`` and setting ``answer``, and sends that
   back to the agent's entry point, ``handle_message``.
3. A fresh agent and store restore the run (``RunState.from_string``), approve the call and
   resume; the refund runs once. The same answer sent again runs nothing.
4. A refund under the threshold just runs: no question, no envelope.

Run it with ``python docs/examples/openai_agents_refund.py [workdir]``. The model is an offline
stand-in for an LLM (it calls ``issue_refund`` with the order it is given, then reports the
tool's result); with a real one, leave ``model=`` out of ``Agent`` as usual.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from agents import Agent, RunContextWrapper, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage

from agent_wait.core import WaitPolicy, announcer
from agent_wait.openai_agents import SqliteRuns, handle_message, wait

THRESHOLD = 1000  # cents


class RefundModel(Model):
    """Offline stand-in for an LLM: one tool call, then the tool's result as the answer."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        given = args[1] if len(args) > 1 else kwargs["input"]
        items = [{"role": "user", "content": given}] if isinstance(given, str) else given
        results = [i["output"] for i in items if i.get("type") == "function_call_output"]
        if results:
            output = [assistant_message(" ".join(results))]
        else:
            order = json.loads(items[-1]["content"])
            output = [function_call("issue_refund", order, call_id=f"call_{order['order_id']}")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def over_threshold(ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
    """The SDK's own needs_approval callable: only large refunds ask."""
    return params["amount"] > THRESHOLD


@wait(
    WaitPolicy(
        timeout="P3D",
        default={"action": "reject", "reason": "no response within P3D"},
        tags={"approver_group": "finance"},
    )
)
@function_tool(needs_approval=over_threshold)
def issue_refund(order_id: str, amount: int) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount: The amount in cents.
    """
    return f"refunded {amount} on {order_id}"


def agent() -> Agent[Any]:
    """A fresh agent, as each process of a real deployment builds it."""
    return Agent("refunds", model=RefundModel(), tools=[issue_refund])


def main(workdir: Path) -> None:
    """Run the flow in ``workdir`` (the runs and the inbox live there)."""
    inbox = workdir / "inbox.sqlite3"
    announce = announcer("sqlite", path=inbox)
    runs = workdir / "runs.sqlite3"

    start = {
        "thread_id": "order-4471",
        "input": json.dumps({"order_id": "order-4471", "amount": 41000}),
    }
    with SqliteRuns(runs) as store:
        handled = handle_message(agent(), start, announce, runs=store)
    print(f"start order-4471: {handled.outcome} (parked on {handled.question_ids})")

    # The approver's side: the open questions are rows of the inbox table.
    with closing(sqlite3.connect(inbox)) as db:
        rows = db.execute(
            "SELECT pk, sk, envelope FROM agent_wait_inbox WHERE status = 'open'"
        ).fetchall()
        for pk, sk, text in rows:
            envelope = json.loads(text)
            print("envelope:", json.dumps(envelope, indent=2))
            answer = {**envelope["reply_with"], "answer": {"action": "approve"}}
            with SqliteRuns(runs) as store:  # another process: a fresh agent and connection
                resumed = handle_message(agent(), answer, announce, runs=store)
                again = handle_message(agent(), answer, announce, runs=store)
            final = resumed.result.final_output
            print(f"answer {envelope['question_id']}: {resumed.outcome} -> {final}")
            print(f"the same answer again: {again.outcome}")
            with db:  # commits
                db.execute(
                    "UPDATE agent_wait_inbox SET status = 'answered' WHERE pk = ? AND sk = ?",
                    (pk, sk),
                )

    small = {
        "thread_id": "order-4472",
        "input": json.dumps({"order_id": "order-4472", "amount": 500}),
    }
    with SqliteRuns(runs) as store:
        handled = handle_message(agent(), small, announce, runs=store)
    print(
        f"start order-4472: {handled.outcome} (parked: {handled.parked}) -> "
        f"{handled.result.final_output}"
    )


if __name__ == "__main__":
    # Offline: no request is ever made, and no trace is exported.
    os.environ.setdefault("OPENAI_API_KEY", "sk-offline-example")
    set_tracing_disabled(True)
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
