"""A Strands refund agent that asks a human before refunds over a threshold, offline.

1. A refund over the threshold parks on a Strands interrupt; ``handle_message`` publishes
   its envelope to the embedded sqlite inbox.
2. An "approver" reads the open question from the inbox (plain sqlite3: a consumer needs no
   agent-wait), approves it by copying ``reply_with`` and setting ``answer``, and sends that
   back to the agent's entry point, ``handle_message``.
3. A fresh Agent restores the thread from its FileSessionManager session and resumes; the
   refund runs once.
4. A refund under the threshold just runs: no question, no envelope.

Run it with ``python docs/examples/strands_refund.py [workdir]``. The model is an offline
stand-in for an LLM (it calls ``issue_refund`` with the order it is given, then reports the
tool's result); with a real one, pass ``model=...`` to ``Agent`` as usual.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

from strands import Agent, ToolContext, tool
from strands.models import Model
from strands.session import FileSessionManager

from agent_wait.core import WaitPolicy, announcer
from agent_wait.strands import handle_message, wait

THRESHOLD = 1000  # cents


class RefundModel(Model):
    """Offline stand-in for an LLM: one tool call, then the tool's result as the answer."""

    def update_config(self, **model_config: Any) -> None:
        del model_config

    def get_config(self) -> dict[str, Any]:
        return {"model_id": "offline-refund"}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        last = messages[-1]["content"]
        yield {"messageStart": {"role": "assistant"}}
        results = [block["toolResult"] for block in last if "toolResult" in block]
        if results:
            text = " ".join(c.get("text", "") for r in results for c in r["content"])
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        order = json.loads(last[0]["text"])
        tool_use = {"toolUseId": f"tooluse_{len(messages)}", "name": "issue_refund"}
        yield {"contentBlockStart": {"start": {"toolUse": tool_use}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(order)}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@tool(context=True)
@wait(
    WaitPolicy(
        timeout="P3D",
        default={"action": "reject", "reason": "no response within P3D"},
        tags={"approver_group": "finance"},
    ),
    when=lambda order_id, amount: amount > THRESHOLD,
)
def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount: The amount in cents.
        tool_context: Filled in by Strands; never shown to the model or the approver.
    """
    return f"refunded {amount} on {order_id}"


def main(workdir: Path) -> None:
    """Run the flow in ``workdir`` (sessions and the inbox live there)."""
    inbox = workdir / "inbox.sqlite3"
    announce = announcer("sqlite", path=inbox)

    def agent_for(thread_id: str) -> Agent:
        # A fresh Agent per message: the session manager is the thread's persistence.
        return Agent(
            model=RefundModel(),
            tools=[issue_refund],
            session_manager=FileSessionManager(session_id=thread_id, storage_dir=str(workdir)),
            callback_handler=None,
        )

    start = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
    handled = handle_message(agent_for, start, announce)
    print(f"start order-4471: {handled.outcome} (parked on {handled.question_ids})")

    # The approver's side: the open questions are rows of the inbox table.
    with closing(sqlite3.connect(inbox)) as db:
        rows = db.execute(
            "SELECT pk, sk, envelope FROM agent_wait_inbox WHERE status = 'open'"
        ).fetchall()
        for pk, sk, text in rows:
            envelope = json.loads(text)
            print("envelope:", json.dumps(envelope, indent=2))
            answer = {**envelope["reply_with"], "answer": {"action": "approve", "note": "auto"}}
            resumed = handle_message(agent_for, answer, announce)
            print(f"answer {envelope['question_id']}: {resumed.outcome} -> {resumed.result}")
            with db:  # commits
                db.execute(
                    "UPDATE agent_wait_inbox SET status = 'answered' WHERE pk = ? AND sk = ?",
                    (pk, sk),
                )

    small = {"thread_id": "order-4472", "input": {"order_id": "order-4472", "amount": 500}}
    handled = handle_message(agent_for, small, announce)
    print(f"start order-4472: {handled.outcome} (parked: {handled.parked}) -> {handled.result}")


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="strands-refund-"))
    )
