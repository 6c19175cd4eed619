"""The adapter conformance kit on LangGraph: a create_agent graph (InMemorySaver, scripted chat)."""

from __future__ import annotations

from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_wait.core import Question
from agent_wait.langgraph import publish_interrupts, questions_in, wait
from agent_wait.testing import AdapterContract
from tests.langgraph.conftest import calls, model


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


class TestLangGraphAdapter(AdapterContract):
    wait = staticmethod(wait)
    questions_in = staticmethod(questions_in)
    publish_interrupts = staticmethod(publish_interrupts)
    hidden_parameter = "tool_call_id"

    def define(self, decorator: Any, body: Any, *, decision: bool) -> Any:
        if decision:

            @decorator
            def issue_refund(
                order_id: str,
                amount: int,
                tool_call_id: Annotated[str, InjectedToolCallId],
                decision: Any = None,
            ) -> str:
                """Refund an order."""
                return body(order_id, amount, decision)

            return issue_refund

        @decorator
        def issue_refund(  # the same tool without a decision parameter
            order_id: str, amount: int, tool_call_id: Annotated[str, InjectedToolCallId]
        ) -> str:
            """Refund an order."""
            return body(order_id, amount)

        return issue_refund

    def start(self, function: Any, args: dict[str, Any], thread_id: str) -> Any:
        chat = model(calls(("issue_refund", args)), AIMessage("done"))
        self.graph = create_agent(chat, [tool(function)], checkpointer=InMemorySaver())
        return self.graph.invoke({"messages": [("user", "refund")]}, _config(thread_id))

    def resume(self, thread_id: str, parked: Any, question: Question, answer: Any) -> Any:
        command = Command(resume={question.question_id: answer})
        return self.graph.invoke(command, _config(thread_id))

    def returned(self, result: Any) -> Any:
        [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        return message.content
