"""A scripted, offline ``strands.models.Model``: test support, not a public API.

Strands 1.62 ships no mock model. This one plays a script of turns and derives which turn to
play from the conversation itself (the assistant messages since the last user prompt), so it
behaves the same for a fresh Agent restored from a session as for the Agent that started the
thread.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands.models import Model


@dataclass(frozen=True)
class Call:
    """One tool call the model emits."""

    name: str
    input: dict[str, Any] = field(default_factory=dict[str, Any])


Turn = Sequence[Call] | str
"""A turn: tool calls (in one assistant message) or a final text."""


def _turn_index(messages: Sequence[Any]) -> int:
    # The script restarts at every user prompt (a user message that is not tool results), so a
    # redelivered start message on the same thread plays the same turns again.
    index = 0
    for message in messages:
        if message["role"] == "assistant":
            index += 1
        elif any("toolResult" not in block for block in message["content"]):
            index = 0
    return index


class ScriptedModel(Model):
    """Plays ``turns`` in order; after the last one it answers with the tool results it saw.

    Tool use ids are ``<call_prefix>_<history length>_<position>``: give each agent of a
    multi-agent run its own prefix, as real providers' ids differ across agents.

    Attributes:
        tool_results: Every tool result the model was shown, in order (``toolUseId``, status,
            text), so tests can check what the model saw.
        calls: How many times the model was streamed.
    """

    def __init__(self, *turns: Turn, call_prefix: str = "call") -> None:
        self.turns = list(turns)
        self.call_prefix = call_prefix
        self.tool_results: list[dict[str, Any]] = []
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        del model_config

    def get_config(self) -> dict[str, Any]:
        return {"model_id": "scripted"}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not do structured output")

    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls += 1
        last = messages[-1]["content"] if messages else []
        seen = [
            {
                "toolUseId": block["toolResult"]["toolUseId"],
                "status": block["toolResult"]["status"],
                "text": "".join(
                    c.get("text", json.dumps(c.get("json"))) for c in block["toolResult"]["content"]
                ),
            }
            for block in last
            if "toolResult" in block
        ]
        self.tool_results.extend(seen)
        index = _turn_index(messages)
        turn: Turn = self.turns[index] if index < len(self.turns) else ""
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            text = turn or "done: " + " | ".join(r["text"] for r in seen)
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for position, call in enumerate(turn):
            # Unique within the thread (its history only grows) and the same for a fresh Agent.
            tool_use_id = f"{self.call_prefix}_{len(messages)}_{position}"
            yield {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": tool_use_id, "name": call.name}}
                }
            }
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.input)}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}
