"""A Pydantic AI refund agent that asks a human before refunds over a threshold, offline.

1. A refund over the threshold raises ``ApprovalRequired`` inside ``@wait``; the run ends with
   ``DeferredToolRequests``, ``handle_message`` stores the thread's history and publishes the
   envelope to the embedded sqlite inbox.
2. An "approver" reads the open question from the inbox (plain sqlite3: a consumer needs no
   agent-wait), approves it by copying ``reply_with`` and setting ``answer``, and sends that
   back to the agent's entry point, ``handle_message``.
3. ``handle_message`` loads the stored history and resumes with ``DeferredToolResults``; the
   refund runs once. The same answer delivered again is a duplicate and runs nothing.
4. A refund under the threshold just runs: no question, no envelope.

Run it with ``python docs/examples/pydantic_ai_refund.py [workdir]``. The model is an offline
stand-in for an LLM (it calls ``issue_refund`` with the order it is given, then reports the
tool's result); with a real one, pass ``"openai:gpt-5"`` or any model to ``Agent`` as usual.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import WaitPolicy, announcer
from agent_wait.pydantic_ai import SqliteHistory, handle_message, wait

THRESHOLD = 1000  # cents
issued: list[str] = []  # every refund the tool body actually made


def refund_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Offline stand-in for an LLM: one tool call, then the tool's result as the answer."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    if results:
        return ModelResponse(parts=[TextPart(" ".join(str(part.content) for part in results))])
    prompt = next(part for part in last.parts if isinstance(part, UserPromptPart))
    order = json.loads(str(prompt.content))
    call_id = f"call_{order['order_id']}_{len(messages)}"
    return ModelResponse(parts=[ToolCallPart("issue_refund", order, tool_call_id=call_id)])


agent = Agent(FunctionModel(refund_model), output_type=[str, DeferredToolRequests])


@agent.tool
@wait(
    WaitPolicy(
        timeout="P3D",
        default={"action": "reject", "reason": "no response within P3D"},
        tags={"approver_group": "finance"},
    ),
    when=lambda order_id, amount: amount > THRESHOLD,
)
def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
    """Refund an order.

    Args:
        ctx: Filled in by Pydantic AI; never shown to the model or the approver.
        order_id: The order.
        amount: The amount in cents.
    """
    issued.append(order_id)
    return f"refunded {amount} on {order_id}"


def main(workdir: Path) -> None:
    """Run the flow in ``workdir`` (the history and the inbox live there)."""
    inbox = workdir / "inbox.sqlite3"
    announce = announcer("sqlite", path=inbox)
    # Pydantic AI has no checkpointer: the host keeps each thread's message history.
    history = SqliteHistory(workdir / "history.sqlite3")

    start = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
    handled = handle_message(agent, start, announce, history=history)
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
            resumed = handle_message(agent, answer, announce, history=history)
            print(f"answer {envelope['question_id']}: {resumed.outcome} -> {resumed.result.output}")
            again = handle_message(agent, answer, announce, history=history)
            print(f"same answer again: {again.outcome} ({again.detail})")
            with db:  # commits
                db.execute(
                    "UPDATE agent_wait_inbox SET status = 'answered' WHERE pk = ? AND sk = ?",
                    (pk, sk),
                )

    small = {"thread_id": "order-4472", "input": {"order_id": "order-4472", "amount": 500}}
    handled = handle_message(agent, small, announce, history=history)
    print(
        f"start order-4472: {handled.outcome} (parked: {handled.parked}) -> {handled.result.output}"
    )
    print(f"refunds issued: {issued}")


if __name__ == "__main__":
    main(
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(tempfile.mkdtemp(prefix="pydantic-ai-refund-"))
    )
