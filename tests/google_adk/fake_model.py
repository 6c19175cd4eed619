"""An offline ADK model: scripted tool calls, one per model turn, then a text answer."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.genai import types
from pydantic import Field

CONFIRMATION = "adk_request_confirmation"


class ScriptedModel(BaseLlm):
    """Calls ``calls[n]`` (a ``(tool, args)`` pair) once ``n`` tool results are in the request.

    The turn is read from the request (ADK sends the whole session each time), so a fresh
    model in another process continues where the session left off. Call ids are
    ``call-<n>``; after the last call it answers ``"done"``.
    """

    model: str = "scripted"
    calls: list[tuple[str, dict[str, Any]]] = Field(
        default_factory=list[tuple[str, dict[str, Any]]]
    )

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        done = sum(
            1
            for content in llm_request.contents
            for part in content.parts or ()
            if part.function_response is not None and part.function_response.name != CONFIRMATION
        )
        if done < len(self.calls):
            name, args = self.calls[done]
            call = types.FunctionCall(name=name, args=args, id=f"call-{done}")
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
