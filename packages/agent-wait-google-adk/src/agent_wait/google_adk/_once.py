"""ADK's own confirmed tool calls run at most once, across crashes.

ADK runs a confirmed call again whenever the session ends on its answer (a worker killed inside
the tool, a redelivered answer): ``FunctionTool(..., require_confirmation=...)`` and a tool that
calls ``tool_context.request_confirmation(...)`` keep no record of having run. :class:`AtMostOnce`
keeps the record a ``@wait`` body keeps: ``executing`` under a fencing token in the execution
ledger before a confirmed call runs, ``done`` with its result after. A run that finds ``done``
answers with the recorded result and runs nothing; one that finds ``executing`` runs nothing and
asks a person whether the call happened (a new confirmation of the same call: ``yes`` records it
done, ``no`` runs it once more).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import weakref
from collections.abc import Mapping
from typing import Any, cast

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools import BaseTool, ToolContext
from google.adk.tools.tool_confirmation import ToolConfirmation

from agent_wait.core import (
    ExecutionLedger,
    WaitPolicy,
    configured_ledger,
    derive_question_id,
    to_jsonable,
)
from agent_wait.google_adk._adapter import DOUBT, PARKED, in_doubt_of
from agent_wait.host.adapter import in_doubt_payload

logger = logging.getLogger(__name__)

NAME = "agent_wait_at_most_once"
"""The plugin's name in a runner's plugin manager."""

_INSTALL_LOCK = threading.Lock()


def _waits(tool: BaseTool) -> bool:
    # A @wait tool keeps its own record (or none, with once=False).
    return getattr(getattr(tool, "func", None), "__agent_wait__", None) is not None


def _response(result: Any) -> dict[str, Any]:
    """A recorded result as the tool's response: ADK's own ``{"result": ...}`` for a non-dict."""
    if isinstance(result, Mapping):
        return dict(cast("Mapping[str, Any]", result))
    return {"result": result}


class AtMostOnce(BasePlugin):
    """An ADK plugin that keeps a confirmed call of an ADK-gated tool to one run.

    The host adds one (over the configured ledger) to every runner it is given that has none;
    list your own in ``App(plugins=[AtMostOnce(ledger=...)])`` to choose the ledger. A call is
    recorded when it runs on an approving ``ToolConfirmation`` (``confirmed`` true); ``@wait``
    tools keep their own record and are left alone. The record's key is the session, the tool
    and ADK's function call id, which ADK keeps in every run of the call.

    Args:
        ledger: The execution ledger (None: ``agent_wait.core.configured_ledger()``).
    """

    def __init__(self, ledger: ExecutionLedger | None = None) -> None:
        if ledger is not None and not isinstance(ledger, ExecutionLedger):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"ledger: expected an ExecutionLedger or None, got {ledger!r}")
        super().__init__(name=NAME)
        self._ledger = ledger
        # The claims of calls running now, by their call's context (the one ADK hands every
        # callback of the call): the ledger claimed in, the record key, attempt and fencing
        # token. The claim's ledger is the one finished or released in, even if the
        # configuration changed while the call ran (and it is looked up once per call).
        self._running: weakref.WeakKeyDictionary[
            ToolContext, tuple[ExecutionLedger, str, int, str]
        ] = weakref.WeakKeyDictionary()

    @property
    def ledger(self) -> ExecutionLedger:
        """The ledger the records are kept in."""
        return self._ledger if self._ledger is not None else configured_ledger()

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Claim a confirmed call before it runs, or answer it without running it."""
        given = tool_context.tool_confirmation
        if given is None or _waits(tool):
            return None
        doubt = in_doubt_of(given.payload)
        approval = given if doubt is None else ToolConfirmation.model_validate(doubt["approval"])
        if not approval.confirmed:
            return None
        key = execution_key(tool_context.session.id, tool.name, tool_context.function_call_id)
        ledger = self.ledger
        attempt = 0
        while True:
            token = secrets.token_hex(16)
            found = await asyncio.to_thread(ledger.claim, key, attempt, token)
            if found is None:
                self._running[tool_context] = (ledger, key, attempt, token)
                # After an in-doubt "no" the call runs on the approval it was given.
                tool_context.tool_confirmation = approval
                return None
            if found.done:
                return _response(found.result)
            if doubt is None or doubt["attempt"] < attempt:
                return _ask(tool, tool_args, tool_context, approval, attempt)
            if doubt["attempt"] == attempt and given.confirmed:
                reply = cast("Mapping[str, Any]", given.payload)
                record = await asyncio.to_thread(
                    ledger.finish, key, attempt, found.token, reply.get("result")
                )
                return _response(record.result)
            # Answered "no" (this attempt, or an earlier one when a later one is answered).
            attempt += 1

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Record a claimed call done with its result (released if it asked again instead)."""
        claimed = self._running.pop(tool_context, None)
        if claimed is None:
            return None
        ledger, key, attempt, token = claimed
        if tool_context.function_call_id in tool_context.actions.requested_tool_confirmations:
            # The tool asked again rather than ran: nothing happened yet.
            await asyncio.to_thread(ledger.release, key, attempt, token)
            return None
        try:
            recorded = to_jsonable(result, f"{tool.name}()")
        except TypeError as error:
            # No record then: a later run of the same call runs it again.
            logger.warning("confirmed call %r: no record of its run is kept: %s", tool.name, error)
            await asyncio.to_thread(ledger.release, key, attempt, token)
            return None
        await asyncio.to_thread(ledger.finish, key, attempt, token, recorded)
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        """Release a claimed call that raised (or was cancelled): a retry may run it."""
        claimed = self._running.pop(tool_context, None)
        if claimed is not None:
            ledger, key, attempt, token = claimed
            await asyncio.to_thread(ledger.release, key, attempt, token)
        return None


def execution_key(session_id: str, tool: str, function_call_id: str | None) -> str:
    """The record of ADK's call ``function_call_id`` of ``tool`` in session ``session_id``."""
    return derive_question_id(session_id, tool, {"function_call_id": function_call_id})


def _ask(
    tool: BaseTool,
    tool_args: Mapping[str, Any],
    tool_context: ToolContext,
    approval: ToolConfirmation,
    attempt: int,
) -> dict[str, Any]:
    """Request the in-doubt confirmation of run ``attempt``; the placeholder response."""
    args = to_jsonable(dict(tool_args), f"{tool.name}()")
    payload = in_doubt_payload(tool.name, args, WaitPolicy(), attempt)
    # The approval rides along: ADK hands the call only its latest confirmation.
    asked = {"attempt": attempt, "approval": approval.model_dump(mode="json")}
    tool_context.request_confirmation(
        hint=str(payload["question"]["text"]), payload={**payload, DOUBT: asked}
    )
    tool_context.actions.skip_summarization = True
    return dict(PARKED)


def install(runner: Runner) -> None:
    """Give ``runner`` an :class:`AtMostOnce` (first, so no plugin answers a call before it)."""
    manager = runner.plugin_manager
    with _INSTALL_LOCK:
        if manager.get_plugin(NAME) is None:
            manager.plugins.insert(0, AtMostOnce())
