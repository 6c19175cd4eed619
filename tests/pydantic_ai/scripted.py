"""A scripted offline model for the Pydantic AI tests (a real ``FunctionModel``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel


class Script:
    """A real ``FunctionModel`` that calls the given tools on every prompt, then reports.

    Each user prompt gets one response calling ``calls`` (``(tool_name, args)`` pairs) with
    fresh ids ``<tool>-<turn>-<index>``, as a provider would mint them; once the tools
    returned, the model answers with the JSON of what each call returned, so a test can read
    exactly what the model saw.

    Attributes:
        model: The ``FunctionModel`` to give the agent.
        turns: How many prompts the model has seen.
        schemas: The parameter JSON schema of each tool, as the model last saw them.
    """

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = list(calls)
        self.turns = 0
        self.schemas: dict[str, dict[str, Any]] = {}
        self.model = FunctionModel(self._respond, stream_function=self._stream)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.schemas = {tool.name: tool.parameters_json_schema for tool in info.function_tools}
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            self.turns += 1
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"{name}-{self.turns}-{index}")
                    for index, (name, args) in enumerate(self.calls)
                ]
            )
        seen = {
            part.tool_call_id: {"content": part.content, "outcome": part.outcome}
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        }
        return ModelResponse(parts=[TextPart(json.dumps(seen, sort_keys=True, default=str))])

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        # The same turns, streamed as a provider would: text deltas or whole tool-call deltas.
        for index, part in enumerate(self._respond(messages, info).parts):
            if isinstance(part, TextPart):
                yield part.content
            elif isinstance(part, ToolCallPart):
                yield {
                    index: DeltaToolCall(
                        part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id
                    )
                }


def seen_by_model(output: str) -> dict[str, Any]:
    """What a :class:`Script` model reported seeing, by tool call id."""
    return json.loads(output)
