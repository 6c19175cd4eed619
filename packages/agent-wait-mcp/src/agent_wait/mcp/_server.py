"""The ``agent_wait`` MCP server: tool definition, heartbeats, audit log and the console script."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import logging
import math
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any, cast

import anyio
from pydantic import ValidationError

import mcp.types as types
from agent_wait.core import format_utc
from agent_wait.pause import (
    ANONYMOUS_USER,
    INPUT_SCHEMA,
    TOOL_NAME,
    InvalidPauseRequest,
    PauseConfigError,
    PauseGrant,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    PauseRefused,
    PauseRequest,
    audit_finished,
    audit_invalid,
    audit_refused,
    await_grant,
    checked_id,
    pause_result,
    tool_description,
)
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)
_MAX_ID_DIGITS = 20
MULTI_ROUND_TRIP_VERSION = "2026-07-28"
"""From this protocol version on, a pause is rounds of ``InputRequiredResult`` (see below)."""


class _IntegerText(str):
    """A JSON integer kept as its text."""

    __slots__ = ()


# `_meta` keys. The host (chat runtime), not the model, names the user and the turn: a model
# could otherwise dodge the per-turn caps by inventing a fresh turn id on every call.
META_USER = "agent-wait/user_id"
META_TURN = "agent-wait/turn_id"
META_REMAINING = "agent-wait/remaining_seconds"
META_WAIT_UNTIL = "agent-wait/wait_until"
META_REFUSAL = "agent-wait/refusal"
META_RETRY_AFTER = "agent-wait/retry_after_seconds"

_INSTRUCTIONS = (
    "agent_wait pauses inside the current tool loop for a bounded number of seconds, showing "
    "the user a status message, then returns so you can call the next tool. Use it for short "
    "gaps (a rate limit, a queue draining, an external system catching up), not to end the turn "
    "and not instead of a tool that itself waits for a job to finish."
)


def caller_identity(
    meta: Mapping[str, Any] | None, session_id: str | None
) -> tuple[str, str | None]:
    """Resolve who a call is charged to, and which turn it belongs to.

    Args:
        meta: The request's ``_meta``; ``agent-wait/user_id`` and ``agent-wait/turn_id`` are read.
        session_id: The transport session id (streamable HTTP with sessions), if any.

    Returns:
        ``(user, turn)``: the user is the ``_meta`` user id, else ``session:<id>``, else
        ``"anonymous"``; the turn is the ``_meta`` turn id or ``None`` (the user's implicit turn).

    Raises:
        InvalidPauseRequest: A ``_meta`` id is present but not a non-empty string of at most
            200 characters.
    """
    found = meta or {}
    user = _meta_id(found, META_USER)
    turn = _meta_id(found, META_TURN)
    if user is None:
        user = f"session:{session_id}" if session_id else ANONYMOUS_USER
    return user, turn


def _meta_id(meta: Mapping[str, Any], key: str) -> str | None:
    return checked_id(f"_meta.{key}", meta.get(key), label=f"_meta {key!r}")


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    # Streamable HTTP in the handshake era carries the session in a header; stdio and the
    # 2026-07-28 per-request era have none.
    headers: object = getattr(ctx.request, "headers", None)
    if isinstance(headers, Mapping):
        value = cast("Mapping[str, object]", headers).get("mcp-session-id")
        if isinstance(value, str) and value:
            return value
    return None


def _tool(limits: PauseLimits) -> types.Tool:
    return types.Tool(
        name=TOOL_NAME,
        title="Pause",
        description=tool_description(limits),
        input_schema=INPUT_SCHEMA,
        output_schema={
            "type": "object",
            "properties": {
                "waited_seconds": {"type": "number", "description": "Time actually waited."},
                "resume_at": {"type": "string", "format": "date-time"},
                "requested_seconds": {"type": "integer"},
                "granted_seconds": {"type": "integer"},
                "cap_seconds": {"type": "integer", "description": "Present when clipped."},
                "clipped_by": {"enum": ["per_call", "per_turn", "turn_timeout"]},
                "turn_seconds_remaining": {"type": "integer"},
                "turn_calls_remaining": {"type": "integer"},
            },
            "required": [
                "waited_seconds",
                "resume_at",
                "requested_seconds",
                "granted_seconds",
                "turn_seconds_remaining",
                "turn_calls_remaining",
            ],
        },
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, open_world_hint=False
        ),
    )


def _refusal(message: str, code: str, retry_after: float | None = None) -> types.CallToolResult:
    meta: dict[str, Any] = {META_REFUSAL: code}
    if retry_after is not None:
        meta[META_RETRY_AFTER] = math.ceil(retry_after)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True, _meta=meta
    )


class _AgentWaitHandlers:
    """The ``tools/list`` and ``tools/call`` handlers bound to one policy."""

    def __init__(self, policy: PausePolicy) -> None:
        self._policy = policy
        self._tool = _tool(policy.limits)

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self._tool])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != TOOL_NAME:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}; this server offers only {TOOL_NAME!r}",
            )
        meta: Mapping[str, Any] = ctx.meta or {}
        user: str | None = None
        turn: str | None = None
        try:
            user, turn = caller_identity(meta, _session_id(ctx))
            request = PauseRequest.from_arguments(params.arguments)
        except InvalidPauseRequest as exc:
            audit_invalid(exc.field, user, turn, logger)
            return _refusal(str(exc), "invalid_input")
        # Protocol versions are dates (YYYY-MM-DD): their text sorts in time order. A call that
        # asks for progress is held open with heartbeats, as before that version.
        multi_round_trip = (
            ctx.protocol_version >= MULTI_ROUND_TRIP_VERSION and meta.get("progress_token") is None
        )
        if multi_round_trip and params.request_state is not None:
            return await self._next_round(request, params.request_state)
        try:
            grant = self._policy.admit(request, user=user, turn=turn)
        except PauseRefused as exc:
            audit_refused(exc, request, user, turn, logger)
            return _refusal(str(exc), exc.code, exc.retry_after_seconds)
        if multi_round_trip:
            now = self._policy.now()
            state = {"grant": dataclasses.asdict(grant), "start": now}
            return await self._round(request, grant, state)
        return await self._wait(ctx, meta.get("progress_token"), request, grant)

    async def _next_round(
        self, request: PauseRequest, request_state: str
    ) -> types.CallToolResult | types.InputRequiredResult:
        # The SDK's request-state boundary sealed this state and has verified it: it is ours,
        # unchanged, and younger than its time limit. Admission ran on the first round.
        state = json.loads(request_state)
        grant = PauseGrant(**state["grant"])
        return await self._round(request, grant, state)

    async def _round(
        self, request: PauseRequest, grant: PauseGrant, state: dict[str, Any]
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Wait one heartbeat interval (or the rest), then ask to be called again or finish."""
        start: float = state["start"]
        deadline = start + grant.granted_seconds
        now = self._policy.now()
        await anyio.sleep(max(0.0, min(deadline - now, self._policy.limits.heartbeat_interval)))
        now = self._policy.now()
        if now < deadline:
            remaining = deadline - now
            return types.InputRequiredResult(
                request_state=json.dumps(state),
                _meta={META_REMAINING: math.ceil(remaining), META_WAIT_UNTIL: _wall(remaining)},
            )
        waited = now - start
        self._policy.finish(grant, waited)
        audit_finished("completed", grant, waited, request.reason, logger)
        result = pause_result(grant, waited)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result,
        )

    async def _wait(
        self,
        ctx: ServerRequestContext[Any, Any],
        progress_token: object,
        request: PauseRequest,
        grant: PauseGrant,
    ) -> types.CallToolResult:
        # Core's schedule: beats on the start + k * interval grid, a failed beat logged and the
        # rest dropped, a cancelled request audited as cancelled with the unwaited part refunded.
        token = progress_token if isinstance(progress_token, str | int) else None

        async def notify(beat: PauseHeartbeat) -> None:
            assert token is not None
            await ctx.session.send_notification(
                _progress(token, beat), related_request_id=ctx.request_id
            )

        result = await await_grant(
            self._policy,
            request,
            grant,
            sleep=anyio.sleep,
            heartbeat=None if token is None else notify,
            log=logger,
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=result,
        )


def _wall(remaining: float) -> str:
    """The wall-clock time ``remaining`` seconds from now, as the heartbeats state it."""
    return format_utc(datetime.now(UTC) + timedelta(seconds=remaining))


def _progress(token: str | int, beat: PauseHeartbeat) -> types.ProgressNotification:
    """A heartbeat as the MCP progress notification of the ``tools/call`` it reports on."""
    return types.ProgressNotification(
        params=types.ProgressNotificationParams(
            progress_token=token,
            progress=beat.progress,
            total=beat.total,
            message=beat.message,
            _meta={META_REMAINING: beat.remaining_seconds, META_WAIT_UNTIL: beat.wait_until},
        )
    )


def build_server(policy: PausePolicy) -> Server:
    """Build the MCP server offering the ``agent_wait`` tool under ``policy``.

    Args:
        policy: The caps and the state of budgets and rate counters (one per process).

    Under protocol 2026-07-28 a call without a ``progressToken`` is answered in rounds of
    ``InputRequiredResult`` carrying a sealed ``requestState``; any other call is held open
    for the whole wait, with progress heartbeats when asked for.

    Returns:
        A low-level MCP server; run it with ``Server.run`` over stdio or mount
        ``Server.streamable_http_app()`` in an ASGI server.
    """
    handlers = _AgentWaitHandlers(policy)
    server = Server(
        "agent-wait",
        version=_version(),
        title="agent-wait pause",
        instructions=_INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    # Seals the multi round-trip state (a key of this process, a time limit): a client cannot
    # forge a grant, and a state outlives neither the process nor the limit.
    security = RequestStateSecurity.ephemeral(ttl=_STATE_TTL_SECONDS, audience="agent-wait")
    server.middleware.append(RequestStateBoundary(security, default_audience="agent-wait"))
    return server


# A round lasts a heartbeat interval (at most a minute); an hour covers a slow client's retry.
_STATE_TTL_SECONDS = 3600.0


def _version() -> str:
    try:
        return version("agent-wait-mcp")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0"


class _ScreenedStdin:
    """The lines of stdin for the SDK, less the requests it cannot read.

    The SDK's stdio transport drops a line its parser refuses (an integer of more than 4,300
    digits, say) without answering, so the client would wait for ever. Such a request is kept
    from it here and answered with a JSON-RPC error naming the reason instead, before the next
    line is read.
    """

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._send: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._ready = anyio.Event()

    def answer_with(self, send: Callable[[SessionMessage], Awaitable[None]]) -> None:
        """Write refusals with ``send`` (the transport's output, known once it is open)."""
        self._send = send
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            refusal = _unreadable(line)
            if refusal is None:
                yield line
                continue
            await self._ready.wait()
            assert self._send is not None
            await self._send(SessionMessage(refusal))


def _unreadable(line: str) -> types.JSONRPCError | None:
    """The error answering a request the SDK cannot read; None if it can, or it has no id."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as error:
        problem = error.errors()[0]
    else:
        return None
    try:
        # Integers as text: this read must not fail on the number the SDK's parser refused.
        raw: Any = json.loads(line, parse_int=_IntegerText, parse_float=str)
    except ValueError:
        return None  # not JSON: no id to answer (the SDK logs it)
    if not isinstance(raw, dict) or "method" not in raw:
        return None  # a notification or a response: nothing waits for an answer
    request_id = cast("dict[str, Any]", raw).get("id")
    if isinstance(request_id, _IntegerText):
        if len(request_id) > _MAX_ID_DIGITS:
            return None  # an id no answer could name
        request_id = int(request_id)
    elif not isinstance(request_id, str):
        return None
    code = types.PARSE_ERROR if problem["type"] == "json_invalid" else types.INVALID_REQUEST
    logger.warning("agent-wait-mcp: a request could not be read: %s", problem["msg"])
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(
            code=code, message=f"the request could not be read: {problem['msg']}"
        ),
    )


async def _serve_stdio(server: Server) -> None:
    lines = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    screened = _ScreenedStdin(lines)
    # The SDK only iterates its stdin.
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", screened)) as streams:
        read_stream, write_stream = streams
        screened.answer_with(write_stream.send)
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(server: Server, host: str, port: int, log_level: str) -> None:
    import uvicorn  # only the HTTP transport needs it

    # The SDK turns on DNS-rebinding protection when `host` is a loopback name.
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level.lower(), access_log=False
    )
    await uvicorn.Server(config).serve()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-wait-mcp",
        description="Serve the agent_wait pause tool over MCP (stdio by default). Limits come "
        "from the AGENT_WAIT_* and CHAT_AGENT_TURN_TIMEOUT_MS environment variables.",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp"
    )
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default 8000)")
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default INFO; audit lines are INFO)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``agent-wait-mcp`` console script.

    Args:
        argv: Command-line arguments; ``sys.argv[1:]`` when omitted.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.http and (args.host is not None or args.port is not None):
        parser.error("--host and --port apply only with --http")
    # stdout carries the protocol on stdio, so logs go to stderr.
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        limits = PauseLimits.from_env()
    except PauseConfigError as exc:
        print(f"agent-wait-mcp: invalid configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    logger.info("agent-wait-mcp starting with %s", limits)
    server = build_server(PausePolicy(limits))
    try:
        if args.http:
            host = args.host if args.host is not None else "127.0.0.1"
            if host not in ("127.0.0.1", "localhost", "::1"):
                logger.warning(
                    "agent-wait-mcp listens on %s without authentication; put it behind an "
                    "authenticating proxy",
                    host,
                )
            port = args.port if args.port is not None else 8000
            anyio.run(_serve_http, server, host, port, args.log_level)
        else:
            anyio.run(_serve_stdio, server)
    except KeyboardInterrupt:
        pass
