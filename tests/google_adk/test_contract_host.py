"""The host conformance kit on Google ADK: a Runner on an in-memory session service."""

from __future__ import annotations

from typing import Any

from google.adk.tools import ToolContext

from agent_wait.google_adk import ahandle_message, handle_message, wait
from agent_wait.testing import HostContract
from tests.google_adk.conftest import runner_for


class TestGoogleAdkHost(HostContract):
    wait = staticmethod(wait)

    def define(self, decorator: Any, body: Any) -> Any:
        @decorator
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            return body(order_id, amount)

        return issue_refund

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        return runner_for([function], [("issue_refund", args) for args in turns])

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return handle_message(app, message, announce, **options)

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return await ahandle_message(app, message, announce, **options)
