"""The adapter conformance kit on Strands: real Agents on a FileSessionManager, scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from strands import ToolContext, tool

from agent_wait.core import Question
from agent_wait.strands import interrupt_responses, publish_interrupts, questions_in, wait
from agent_wait.testing import AdapterContract
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel


class TestStrandsAdapter(AdapterContract):
    wait = staticmethod(wait)
    questions_in = staticmethod(questions_in)
    publish_interrupts = staticmethod(publish_interrupts)
    hidden_parameter = "tool_context"

    @pytest.fixture(autouse=True)
    def _sessions(self, tmp_path: Path) -> None:
        self.sessions = tmp_path / "sessions"

    def define(self, decorator: Any, body: Any, *, decision: bool) -> Any:
        if decision:

            @decorator
            def issue_refund(
                order_id: str, amount: int, tool_context: ToolContext, decision: Any = None
            ) -> str:
                """Refund an order."""
                return body(order_id, amount, decision)

            return issue_refund

        @decorator
        def issue_refund(
            order_id: str, amount: int, tool_context: ToolContext
        ) -> str:  # no decision
            """Refund an order."""
            return body(order_id, amount)

        return issue_refund

    def start(self, function: Any, args: dict[str, Any], thread_id: str) -> Any:
        self.model = ScriptedModel([Call("issue_refund", args)])
        # Resuming uses a fresh Agent on the thread's session, as a host process would.
        self.threads = Threads(self.model, [tool(context=True)(function)], self.sessions)
        return self.threads(thread_id)("refund")

    def resume(self, thread_id: str, parked: Any, question: Question, answer: Any) -> Any:
        responses = interrupt_responses({"question_id": question.question_id, "answer": answer})
        return self.threads(thread_id)(responses)

    def returned(self, result: Any) -> Any:
        return self.model.tool_results[-1]["text"]
