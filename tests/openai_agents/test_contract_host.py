"""The host conformance kit on the OpenAI Agents SDK: a real Agent, an offline model, RunState."""

from __future__ import annotations

from typing import Any

from agents import Agent

from agent_wait.openai_agents import InMemoryRuns, ahandle_message, handle_message, wait
from agent_wait.testing import HostContract
from tests.openai_agents.scripted import ScriptedModel


class TestOpenAIAgentsHost(HostContract):
    wait = staticmethod(wait)

    def define(self, decorator: Any, body: Any) -> Any:
        @decorator
        def issue_refund(order_id: str, amount: int) -> str:
            return body(order_id, amount)

        return issue_refund

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        agent = Agent("refunds", model=ScriptedModel("issue_refund", turns), tools=[function])
        return agent, InMemoryRuns()

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        agent, runs = app
        return handle_message(agent, message, announce, runs=runs, **options)

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        agent, runs = app
        return await ahandle_message(agent, message, announce, runs=runs, **options)
