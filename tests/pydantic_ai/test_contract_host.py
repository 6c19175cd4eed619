"""The host conformance kit on Pydantic AI: a real Agent, an offline FunctionModel, history."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.pydantic_ai import InMemoryHistory, ahandle_message, handle_message, wait
from agent_wait.testing import HostContract


class TestPydanticAIHost(HostContract):
    wait = staticmethod(wait)

    def define(self, decorator: Any, body: Any) -> Any:
        @decorator
        def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
            return body(order_id, amount)

        return issue_refund

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            # One call per turn: the next one once every earlier call has returned.
            made = sum(len(m.tool_calls) for m in messages if isinstance(m, ModelResponse))
            if made < len(turns):
                return ModelResponse([ToolCallPart("issue_refund", turns[made], f"refund-{made}")])
            return ModelResponse([TextPart("done")])

        agent = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])
        agent.tool(function)
        return agent, InMemoryHistory()

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        agent, history = app
        return handle_message(agent, message, announce, history=history, **options)

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        agent, history = app
        return await ahandle_message(agent, message, announce, history=history, **options)
