"""The ``agent_wait`` pause as a native Pydantic AI tool."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent_wait.pause import (
    HEARTBEAT_TYPE,
    INPUT_SCHEMA,
    TOOL_NAME,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    apause,
    tool_description,
)
from pydantic_ai import CustomEvent, RunContext, Tool

Identity = Callable[[RunContext[Any]], tuple[str | None, str | None]]
"""Names ``(user, turn)`` from the run context (the host's, never the model's)."""


@dataclass(kw_only=True)
class PauseHeartbeatEvent(CustomEvent, name=HEARTBEAT_TYPE):
    """A heartbeat of the ``agent_wait`` pause tool, in the run's event stream.

    Emitted right away and then every ``AGENT_WAIT_HEARTBEAT_INTERVAL_MS`` while the tool waits;
    ``tool_call_id`` and ``tool_name`` name the call. The fields are those of
    :class:`~agent_wait.pause.PauseHeartbeat`.
    """

    message: str
    progress: float
    total: int
    remaining_seconds: float
    wait_until: str


def _run_identity(ctx: RunContext[Any]) -> tuple[str | None, str | None]:
    # One agent run answers one user message: its run id is the turn.
    return None, ctx.run_id


def pause_tool(
    policy: PausePolicy | None = None,
    *,
    identity: Identity = _run_identity,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> Tool[Any]:
    """The ``agent_wait`` pause tool for a Pydantic AI agent (``Agent(tools=[pause_tool()])``).

    The model calls it with ``seconds``, ``user_message`` and optionally ``reason``; the tool
    waits what :class:`~agent_wait.pause.PausePolicy` grants and returns its result, or
    the refusal (``{"refused": code, "message": ...}``) without waiting. While it waits, it
    emits a :class:`PauseHeartbeatEvent` into the run's event stream right away and then every
    ``AGENT_WAIT_HEARTBEAT_INTERVAL_MS`` (``run_stream_events``, ``iter``, an
    ``event_stream_handler`` and the UI adapters see them as the wait goes).

    Args:
        policy: The shared policy; None builds one from the ``AGENT_WAIT_*`` environment
            variables (one per process: build it once and pass it to every agent).
        identity: ``identity(ctx)`` names the user and the turn, e.g. from ``ctx.deps``.
            Default: the ``"anonymous"`` user, and the run's ``ctx.run_id`` as the turn.
        sleep: How the tool waits (async).

    Returns:
        A ``pydantic_ai.Tool`` named ``agent_wait`` with the shared argument schema.

    Raises:
        PauseConfigError: ``policy`` is None and an ``AGENT_WAIT_*`` variable is invalid.
    """
    shared = policy if policy is not None else PausePolicy(PauseLimits.from_env())

    async def agent_wait(ctx: RunContext[Any], **arguments: Any) -> dict[str, Any]:
        user, turn = identity(ctx)

        async def heartbeat(beat: PauseHeartbeat) -> None:
            fields = beat.as_event()
            del fields["type"]  # the event's name
            await ctx.emit(PauseHeartbeatEvent(**fields))

        return await apause(
            shared, arguments, user=user, turn=turn, sleep=sleep, heartbeat=heartbeat
        )

    # from_schema: the arguments are checked by the shared policy (the same refusals as the
    # MCP tool), not by a schema Pydantic AI would derive from a signature.
    return Tool.from_schema(
        agent_wait,
        name=TOOL_NAME,
        description=tool_description(shared.limits),
        json_schema=INPUT_SCHEMA,
        takes_ctx=True,
    )
