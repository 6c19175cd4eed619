"""A Google ADK refund agent that asks a human before refunds over a threshold, offline.

1. A refund over the threshold parks on an ADK tool confirmation; ``handle_message``
   publishes its envelope to the embedded sqlite inbox.
2. An "approver" reads the open question from the inbox (plain sqlite3: a consumer needs no
   agent-wait) and sends an answer back to the agent's entry point, ``handle_message``.
3. A fresh Runner on the same sqlite sessions resumes the thread; the refund runs once, and
   the same answer sent again runs nothing.
4. A refund under the threshold just runs: no question, no envelope.

Run it with ``python docs/examples/google_adk_refund.py [workdir]``. The model is an offline
stand-in for an LLM (it calls ``issue_refund`` with the order it is given, then reports the
tool's result); with a real one, pass ``model="gemini-2.5-flash"`` to ``LlmAgent`` as usual.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from collections.abc import AsyncGenerator
from contextlib import closing
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.tools import FunctionTool
from google.genai import types

from agent_wait.core import announcer
from agent_wait.google_adk import handle_message

THRESHOLD = 1000  # cents


class RefundModel(BaseLlm):
    """Offline stand-in for an LLM: one tool call, then the tool's result as the answer."""

    model: str = "refund-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = [p for c in llm_request.contents for p in c.parts or ()]
        results = [
            p.function_response.response
            for p in parts
            if p.function_response is not None and p.function_response.name == "issue_refund"
        ]
        if results:
            text = str((results[-1] or {}).get("result", results[-1]))
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        order_id, amount = next(p.text for p in parts if p.text).split()
        call = types.FunctionCall(
            name="issue_refund", args={"order_id": order_id, "amount": int(amount)}, id="call-1"
        )
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


def issue_refund(order_id: str, amount: int) -> str:
    """Refund an order (amount in cents)."""
    return f"refunded {amount} on {order_id}"


def runner(workdir: Path) -> Runner:
    # ADK's own gate: ask only above the threshold.
    tool = FunctionTool(
        issue_refund, require_confirmation=lambda order_id, amount: amount > THRESHOLD
    )
    agent = LlmAgent(name="shop", model=RefundModel(), tools=[tool])
    sessions = DatabaseSessionService(f"sqlite+aiosqlite:///{workdir / 'sessions.sqlite3'}")
    return Runner(app_name="shop", agent=agent, session_service=sessions)


def last_text(handled: object) -> str:
    events = getattr(handled, "result", None) or []
    texts = [
        p.text for e in events for p in (e.content.parts if e.content else None) or () if p.text
    ]
    return texts[-1] if texts else ""


def main(workdir: Path) -> None:
    inbox = workdir / "inbox.sqlite3"
    announce = announcer("sqlite", path=str(inbox))

    started = handle_message(
        runner(workdir), {"thread_id": "order-4471", "input": "order-4471 41000"}, announce
    )
    print(f"start order-4471: {started.outcome.value} (parked on {started.question_ids})")

    # The approver: plain sqlite3 on the inbox, then an answer message to the agent's host.
    with closing(sqlite3.connect(inbox)) as db:
        (envelope_json,) = db.execute(
            "SELECT envelope FROM agent_wait_inbox WHERE status = 'open'"
        ).fetchone()
    envelope = json.loads(envelope_json)
    print(f"envelope: {envelope_json}")
    answer = {
        "thread_id": envelope["thread_id"],
        "question_id": envelope["question_id"],
        "answer": {"action": "approve"},
    }
    resumed = handle_message(runner(workdir), answer, announce)
    print(f"answer {envelope['question_id']}: {resumed.outcome.value} -> {last_text(resumed)}")
    again = handle_message(runner(workdir), answer, announce)
    print(f"the same answer again: {again.outcome.value} (ran: {again.ran})")

    small = handle_message(
        runner(workdir), {"thread_id": "order-4472", "input": "order-4472 500"}, announce
    )
    print(f"start order-4472: {small.outcome.value} (parked: {small.parked}) -> {last_text(small)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
