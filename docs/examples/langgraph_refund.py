"""A LangGraph refund agent that asks a human before refunds over a threshold, offline.

    python docs/examples/langgraph_refund.py [--interactive] [--db PATH]

1. A refund under the threshold just runs: no question, no envelope.
2. A refund over the threshold parks on LangGraph's ``interrupt()`` inside the ``issue_refund``
   tool; ``handle_message`` publishes its envelope to the embedded sqlite inbox
   (``announcer("sqlite")``: ``$AGENT_WAIT_HOME/inbox.sqlite3`` unless ``--db`` says otherwise)
   and the envelope is printed.
3. The approver reads the open question from the inbox (``SqliteInbox``), approves it (or,
   with ``--interactive``, approves or rejects as you type), and sends the answer back to the
   agent's entry point, ``handle_message``: copy ``reply_with``, set ``answer``.
4. The graph resumes from its checkpoint; the refund runs once, or not at all if rejected.

The graph is the classic agent loop (a model node, then the prebuilt ``ToolNode``). The model
is an offline stand-in for an LLM: it calls ``issue_refund`` with the order it is given, then
reports the tool's result. With a real chat model, bind the tools and call it in ``agent``.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agent_wait.core import Handled, SqliteAnnounce, SqliteInbox, WaitPolicy, announcer
from agent_wait.langgraph import handle_message, wait

THRESHOLD = 1000  # euros: larger refunds need a human

POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    tags={"approver_group": "finance"},
)


@tool
@wait(POLICY, when=lambda order_id, amount: amount > THRESHOLD)
def issue_refund(order_id: str, amount: int) -> str:
    """Refund an order.

    Args:
        order_id: The order.
        amount: The amount in euros.
    """
    return f"refunded {amount} EUR on {order_id}"


def offline_model(messages: list[Any]) -> AIMessage:
    """Stand-in for an LLM: "refund <amount> on <order>" -> a tool call; a tool result -> a reply."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Refund request done: {last.content}")
    match = re.search(r"refund (\d+) on (\S+)", str(last.content))
    if not match:
        return AIMessage("I only handle 'refund <amount> on <order>'.")
    args = {"order_id": match.group(2), "amount": int(match.group(1))}
    call = {
        "name": "issue_refund",
        "args": args,
        "id": f"call_{len(messages)}",
        "type": "tool_call",
    }
    return AIMessage("", tool_calls=[call])


def build_graph() -> Any:
    """The agent loop: model -> ToolNode -> model, checkpointed (parked threads resume)."""

    def agent(state: MessagesState) -> MessagesState:
        return {"messages": [offline_model(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([issue_refund]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def reply(handled: Handled) -> str:
    """The agent's last message."""
    return str(handled.result["messages"][-1].content)


def decide(envelope: dict[str, Any], interactive: bool) -> dict[str, Any]:
    """The approver's decision: approve, unless --interactive and the human says otherwise."""
    if not interactive:
        return {"action": "approve", "note": "auto-approved by the demo"}
    args = envelope["question"]["args"]
    choice = input(
        f"approve refund of {args['amount']} EUR on {args['order_id']}? [approve/reject] "
    )
    if choice.strip().lower() in ("a", "approve", "y", "yes"):
        return {"action": "approve", "note": "approved at the terminal"}
    return {"action": "reject", "reason": "rejected at the terminal"}


def main(argv: list[str] | None = None) -> None:
    """Run the demo."""
    parser = argparse.ArgumentParser(
        description="An offline LangGraph refund agent with approvals."
    )
    parser.add_argument("--interactive", action="store_true", help="choose approve/reject yourself")
    parser.add_argument("--db", type=Path, help="the sqlite inbox (default: the embedded one)")
    options = parser.parse_args(argv)

    graph = build_graph()
    announce = announcer("sqlite", path=options.db) if options.db else announcer("sqlite")
    assert isinstance(announce, SqliteAnnounce)
    run = secrets.token_hex(3)  # fresh thread ids, so reruns on one inbox never collide
    print(f"inbox: {announce.path}")

    small = {
        "thread_id": f"order-1002-{run}",
        "input": {"messages": [HumanMessage("refund 120 on order-1002")]},
    }
    handled = handle_message(graph, small, announce)
    print(f"\n== refund 120 EUR on order-1002 (threshold {THRESHOLD}): {handled.outcome}")
    print(f"questions published: {len(handled.question_ids)}")
    print(f"agent: {reply(handled)}")

    big = {
        "thread_id": f"order-4471-{run}",
        "input": {"messages": [HumanMessage("refund 41000 on order-4471")]},
    }
    handled = handle_message(graph, big, announce)
    print(f"\n== refund 41000 EUR on order-4471 (threshold {THRESHOLD}): {handled.outcome}")
    print(f"parked on: {handled.question_ids}")

    # The approver's side: open questions from the inbox, answered through the entry point.
    with SqliteInbox(announce.path) as inbox:
        for item in inbox.open_questions():
            envelope = item.envelope.to_dict()
            if envelope["question_id"] not in handled.question_ids:
                continue  # an older question in a shared inbox
            print("envelope:", json.dumps(envelope, indent=2))
            decision = decide(envelope, options.interactive)
            print(f"approver: {decision['action']} question {envelope['question_id']}")
            resumed = handle_message(
                graph, {**envelope["reply_with"], "answer": decision}, announce
            )
            inbox.mark(envelope["thread_id"], envelope["question_id"], "answered")
            print(f"resume: {resumed.outcome}")
            print(f"agent: {reply(resumed)}")


if __name__ == "__main__":
    main()
