"""The ``agent_wait`` pause as a native Strands tool."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, cast

from agent_wait.pause import (
    INPUT_SCHEMA,
    TOOL_NAME,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    apause,
    tool_description,
)
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse


def _identity(invocation_state: dict[str, Any]) -> tuple[Any, Any]:
    # The host names the user and the turn when it invokes the agent
    # (`agent(prompt, invocation_state={"user_id": ..., "turn_id": ...})`), never the model.
    user = invocation_state.get("user_id")
    if user is None:
        session_id = getattr(invocation_state.get("agent"), "session_id", None)
        user = f"session:{session_id}" if isinstance(session_id, str) and session_id else None
    return user, invocation_state.get("turn_id")


class _PauseTool(AgentTool):
    """A tool whose stream yields the wait's heartbeats, then its result.

    Strands streams what a tool's ``stream`` yields before its ``ToolResultEvent`` as
    ``tool_stream`` events, as the tool runs (the mechanism of its async-generator tools).
    """

    def __init__(self, policy: PausePolicy, sleep: Callable[[float], Awaitable[object]]) -> None:
        super().__init__()
        self._policy = policy
        self._sleep = sleep
        self._spec: ToolSpec = {
            "name": TOOL_NAME,
            "description": tool_description(policy.limits),
            "inputSchema": {"json": INPUT_SCHEMA},
        }

    @property
    def tool_name(self) -> str:
        return TOOL_NAME

    @property
    def tool_spec(self) -> ToolSpec:
        return self._spec

    @property
    def tool_type(self) -> str:
        return "python"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        beats: asyncio.Queue[PauseHeartbeat | None] = asyncio.Queue()
        run = asyncio.ensure_future(self._run(tool_use, invocation_state, beats.put_nowait))
        run.add_done_callback(lambda _: beats.put_nowait(None))
        try:
            while (beat := await beats.get()) is not None:
                yield beat.as_event()
            yield ToolResultEvent(run.result())
        finally:
            # The run was stopped (the stream closed, the task cancelled): so is the wait, which
            # hands back what it did not wait.
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run

    async def _run(
        self,
        tool_use: ToolUse,
        invocation_state: dict[str, Any],
        heartbeat: Callable[[PauseHeartbeat], object],
    ) -> ToolResult:
        user, turn = _identity(invocation_state)
        arguments = tool_use.get("input")
        result = await apause(
            self._policy,
            cast("dict[str, object]", arguments) if isinstance(arguments, dict) else None,
            user=user,
            turn=turn,
            sleep=self._sleep,
            heartbeat=heartbeat,
        )
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "error" if "refused" in result else "success",
            "content": [{"json": result}],
        }


def pause_tool(
    policy: PausePolicy | None = None,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> AgentTool:
    """The ``agent_wait`` pause tool for a Strands agent (``Agent(tools=[pause_tool()])``).

    The model calls it with ``seconds``, ``user_message`` and optionally ``reason``; the tool
    waits what :class:`~agent_wait.pause.PausePolicy` grants and returns its result as
    JSON, or the refusal (``{"refused": code, "message": ...}``, status ``error``) without
    waiting. The user and the turn come from the invocation state: ``agent(prompt,
    invocation_state={"user_id": ..., "turn_id": ...})`` (else the user
    ``session:<agent.session_id>`` and its implicit turn).

    While it waits, the tool streams a heartbeat right away and then every
    ``AGENT_WAIT_HEARTBEAT_INTERVAL_MS``: ``stream_async`` yields each as a ``tool_stream``
    event whose ``tool_stream_event["data"]`` is ``{"type": "agent_wait.heartbeat", "message",
    "progress", "total", "remaining_seconds", "wait_until"}`` (see
    :class:`~agent_wait.pause.PauseHeartbeat`), and a ``callback_handler`` gets the same.

    Args:
        policy: The shared policy; None builds one from the ``AGENT_WAIT_*`` environment
            variables (one per process: build it once and pass it to every agent).
        sleep: How the tool waits (async).

    Returns:
        A Strands tool named ``agent_wait`` with the shared argument schema.

    Raises:
        PauseConfigError: ``policy`` is None and an ``AGENT_WAIT_*`` variable is invalid.
    """
    return _PauseTool(policy if policy is not None else PausePolicy(PauseLimits.from_env()), sleep)
