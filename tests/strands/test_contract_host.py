"""The host conformance kit on Strands: fresh Agents on a FileSessionManager, scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from strands import ToolContext, tool

from agent_wait.strands import ahandle_message, handle_message, wait
from agent_wait.testing import HostContract
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel


class TestStrandsHost(HostContract):
    wait = staticmethod(wait)
    # Strands refuses only a null answer before resuming (it reads null as no answer).
    invalid_answer = None

    @pytest.fixture(autouse=True)
    def _sessions(self, tmp_path: Path) -> None:
        self.sessions = tmp_path / "sessions"

    def define(self, decorator: Any, body: Any) -> Any:
        @decorator
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            return body(order_id, amount)

        return issue_refund

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        scripted = ScriptedModel(*([Call("issue_refund", args)] for args in turns), "done")
        return Threads(scripted, [tool(context=True)(function)], self.sessions)

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return handle_message(app, message, announce, **options)

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Any:
        return await ahandle_message(app, message, announce, **options)
