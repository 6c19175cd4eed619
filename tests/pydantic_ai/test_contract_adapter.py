"""The adapter conformance kit on Pydantic AI: a real Agent with an offline FunctionModel."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext

from agent_wait.core import Question
from agent_wait.pydantic_ai import deferred_results, publish_interrupts, questions_in, wait
from agent_wait.testing import AdapterContract
from tests.pydantic_ai.scripted import Script, seen_by_model


class TestPydanticAIAdapter(AdapterContract):
    wait = staticmethod(wait)
    questions_in = staticmethod(questions_in)
    publish_interrupts = staticmethod(publish_interrupts)
    hidden_parameter = "ctx"

    def define(self, decorator: Any, body: Any, *, decision: bool) -> Any:
        if decision:

            @decorator
            def issue_refund(
                ctx: RunContext[Any], order_id: str, amount: int, decision: Any = None
            ) -> str:
                return body(order_id, amount, decision)

            return issue_refund

        @decorator
        def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:  # no decision
            return body(order_id, amount)

        return issue_refund

    def start(self, function: Any, args: dict[str, Any], thread_id: str) -> Any:
        self.agent = Agent(
            Script(("issue_refund", args)).model, output_type=[str, DeferredToolRequests]
        )
        self.agent.tool(function)
        # Async mode reads the thread id from the run's deps.
        return self.agent.run_sync("refund", deps={"thread_id": thread_id})

    def resume(self, thread_id: str, parked: Any, question: Question, answer: Any) -> Any:
        message = {"thread_id": thread_id, "question_id": question.question_id, "answer": answer}
        return self.agent.run_sync(
            message_history=parked.all_messages(),
            deferred_tool_results=deferred_results(parked, message),
            deps={"thread_id": thread_id},
        )

    def returned(self, result: Any) -> Any:
        [seen] = seen_by_model(result.output).values()
        return seen["content"]
