"""The host conformance kit on LangGraph: create_agent on an InMemorySaver, scripted chat."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver

from agent_wait.langgraph import ahandle_message, handle_message, wait
from agent_wait.testing import HostContract
from tests.langgraph.conftest import model


class TestLangGraphHost(HostContract):
    wait = staticmethod(wait)
    start_input: ClassVar[Any] = {"messages": [{"role": "user", "content": "refund"}]}

    def define(self, decorator: Any, body: Any) -> Any:
        @decorator
        def issue_refund(
            order_id: str, amount: int, tool_call_id: Annotated[str, InjectedToolCallId]
        ) -> str:
            """Refund an order."""
            return body(order_id, amount)

        return issue_refund

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        calls = [
            AIMessage("", tool_calls=[{"name": "issue_refund", "args": args, "id": f"call_{i}"}])
            for i, args in enumerate(turns)
        ]
        chat = model(*calls, AIMessage("done"))
        return create_agent(chat, [tool(function)], checkpointer=InMemorySaver())

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return handle_message(app, message, announce, **options)

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return await ahandle_message(app, message, announce, **options)
