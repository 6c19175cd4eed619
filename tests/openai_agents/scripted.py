"""An offline model for the OpenAI Agents SDK: scripted tool calls, then a text answer.

It decides from the input it is given, not from how often it was called, so a run restored
from its stored ``RunState`` in another process sees the same script.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from agents import set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import ModelStep, assistant_message, function_call
from agents.testing.model import _stream_events_for_step  # pyright: ignore[reportPrivateUsage]
from agents.usage import Usage

# Offline: a dummy key (no request is ever made) and no trace export.
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-tests")
set_tracing_disabled(True)


def _outputs(input: Any) -> int:
    if not isinstance(input, list):
        return 0
    return sum(1 for i in input if isinstance(i, dict) and i.get("type") == "function_call_output")


class ScriptedModel(Model):
    """Calls ``tool`` with ``turns[n]`` once ``n`` calls have returned, then answers ``done``.

    ``per_turn`` calls are made in one response (call ids ``call-<n>``); ``inputs`` is what
    the model was given on each call.
    """

    def __init__(self, tool: str, turns: list[dict[str, Any]], *, per_turn: int = 1) -> None:
        self.tool = tool
        self.turns = turns
        self.per_turn = per_turn
        self.inputs: list[Any] = []

    def _output(self, given: Any) -> list[Any]:
        self.inputs.append(given)
        made = _outputs(given)
        if made < len(self.turns):
            batch = self.turns[made : made + self.per_turn]
            return [
                function_call(self.tool, args, call_id=f"call-{made + n}")
                for n, args in enumerate(batch)
            ]
        return [assistant_message("done")]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        output = self._output(args[1] if len(args) > 1 else kwargs["input"])
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        output = self._output(args[1] if len(args) > 1 else kwargs["input"])
        # The SDK's own test model turns a response into the stream events a real one sends.
        for event in _stream_events_for_step(ModelStep(output=output), preserve_raw_usage=False):
            yield event
