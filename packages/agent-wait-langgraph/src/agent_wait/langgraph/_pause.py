"""The ``agent_wait`` pause as a native LangChain tool, for LangGraph and ``create_agent``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool

from agent_wait.pause import (
    INPUT_SCHEMA,
    TOOL_NAME,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    apause,
    pause,
    tool_description,
)
from langgraph.runtime import get_runtime


def _identity(config: RunnableConfig) -> tuple[Any, Any]:
    # The host names the user and the turn in the run's config, never the model in the call:
    # a model could otherwise dodge the per-turn caps with a fresh turn id on every call.
    configurable = config.get("configurable") or {}
    user = configurable.get("user_id")
    if user is None and configurable.get("thread_id") is not None:
        user = f"thread:{configurable['thread_id']}"
    return user, configurable.get("turn_id")


def _heartbeat() -> Callable[[PauseHeartbeat], None] | None:
    """Where the wait's heartbeats go when it runs in a graph.

    The ``custom`` stream, and the node's ``runtime.heartbeat()`` (so an ``idle_timeout``
    counts the wait as progress).
    """
    try:
        runtime = get_runtime()
    except RuntimeError:
        return None  # called outside a graph run (a bare tool.invoke): nobody streams
    # Typed as always there, but get_runtime reads it with .get(): a config without one.
    if runtime is None:  # pyright: ignore[reportUnnecessaryComparison]
        return None

    def send(beat: PauseHeartbeat) -> None:
        runtime.heartbeat()
        runtime.stream_writer(beat.as_event())

    return send


def pause_tool(
    policy: PausePolicy | None = None,
    *,
    sleep: Callable[[float], object] = time.sleep,
    asleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> StructuredTool:
    """The ``agent_wait`` pause tool for a LangChain or LangGraph agent.

    The model calls it with ``seconds``, ``user_message`` and optionally ``reason``; the tool
    waits what :class:`~agent_wait.pause.PausePolicy` grants and returns its result, or
    the refusal (``{"refused": code, "message": ...}``) without waiting. The user and the turn
    come from the run's config: ``configurable["user_id"]`` (else ``thread:<thread_id>``, else
    ``"anonymous"``) and ``configurable["turn_id"]`` (else the user's implicit turn).

    Run in a graph (``create_agent``, a ``ToolNode``, a node calling it), the wait writes a
    heartbeat to LangGraph's ``custom`` stream right away and then every
    ``AGENT_WAIT_HEARTBEAT_INTERVAL_MS``: ``{"type": "agent_wait.heartbeat", "message",
    "progress", "total", "remaining_seconds", "wait_until"}`` (see
    :class:`~agent_wait.pause.PauseHeartbeat`), which ``graph.stream(...,
    stream_mode="custom")`` yields as the wait goes. Each beat also calls the node's
    ``runtime.heartbeat()``: a node under ``TimeoutPolicy(idle_timeout=...)`` counts the wait as
    progress instead of timing it out.

    Args:
        policy: The shared policy; None builds one from the ``AGENT_WAIT_*`` environment
            variables (one per process: build it once and pass it to every agent).
        sleep: How the sync tool waits (e.g. a cancellable ``Event.wait``).
        asleep: How the async tool waits.

    Returns:
        A ``StructuredTool`` named ``agent_wait``, sync and async.

    Raises:
        PauseConfigError: ``policy`` is None and an ``AGENT_WAIT_*`` variable is invalid.
    """
    shared = policy if policy is not None else PausePolicy(PauseLimits.from_env())

    def run(config: RunnableConfig, **arguments: Any) -> dict[str, Any]:
        user, turn = _identity(config)
        return pause(shared, arguments, user=user, turn=turn, sleep=sleep, heartbeat=_heartbeat())

    async def arun(config: RunnableConfig, **arguments: Any) -> dict[str, Any]:
        user, turn = _identity(config)
        return await apause(
            shared, arguments, user=user, turn=turn, sleep=asleep, heartbeat=_heartbeat()
        )

    return StructuredTool(
        name=TOOL_NAME,
        description=tool_description(shared.limits),
        args_schema=INPUT_SCHEMA,
        func=run,
        coroutine=arun,
    )
