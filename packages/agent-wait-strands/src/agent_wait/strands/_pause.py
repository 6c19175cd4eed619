"""The ``agent_wait`` pause as a native Strands tool."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

from agent_wait.core.pause import (
    INPUT_SCHEMA,
    TOOL_NAME,
    PauseLimits,
    PausePolicy,
    apause,
    tool_description,
)
from strands.tools.tools import PythonAgentTool
from strands.types.tools import ToolResult, ToolSpec, ToolUse


def _identity(invocation_state: dict[str, Any]) -> tuple[Any, Any]:
    # The host names the user and the turn when it invokes the agent
    # (`agent(prompt, invocation_state={"user_id": ..., "turn_id": ...})`), never the model.
    user = invocation_state.get("user_id")
    if user is None:
        session_id = getattr(invocation_state.get("agent"), "session_id", None)
        user = f"session:{session_id}" if isinstance(session_id, str) and session_id else None
    return user, invocation_state.get("turn_id")


def pause_tool(
    policy: PausePolicy | None = None,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> PythonAgentTool:
    """The ``agent_wait`` pause tool for a Strands agent (``Agent(tools=[pause_tool()])``).

    The model calls it with ``seconds``, ``user_message`` and optionally ``reason``; the tool
    waits what :class:`~agent_wait.core.pause.PausePolicy` grants and returns its result as
    JSON, or the refusal (``{"refused": code, "message": ...}``, status ``error``) without
    waiting. The user and the turn come from the invocation state: ``agent(prompt,
    invocation_state={"user_id": ..., "turn_id": ...})`` (else the user
    ``session:<agent.session_id>`` and its implicit turn).

    Args:
        policy: The shared policy; None builds one from the ``AGENT_WAIT_*`` environment
            variables (one per process: build it once and pass it to every agent).
        sleep: How the tool waits (async).

    Returns:
        A Strands tool named ``agent_wait`` with the shared argument schema.

    Raises:
        PauseConfigError: ``policy`` is None and an ``AGENT_WAIT_*`` variable is invalid.
    """
    shared = policy if policy is not None else PausePolicy(PauseLimits.from_env())

    async def agent_wait(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        user, turn = _identity(invocation_state)
        arguments = tool_use.get("input")
        result = await apause(
            shared,
            cast("dict[str, object]", arguments) if isinstance(arguments, dict) else None,
            user=user,
            turn=turn,
            sleep=sleep,
        )
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "error" if "refused" in result else "success",
            "content": [{"json": result}],
        }

    spec: ToolSpec = {
        "name": TOOL_NAME,
        "description": tool_description(shared.limits),
        "inputSchema": {"json": INPUT_SCHEMA},
    }
    return PythonAgentTool(TOOL_NAME, spec, agent_wait)
