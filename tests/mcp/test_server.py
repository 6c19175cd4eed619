"""The real ``agent-wait-mcp`` process, driven by the real MCP client over stdio and HTTP.

Every test runs on both transports. Over stdio each test spawns its own server; over HTTP the
tests share one server process (on a free port of 127.0.0.1) and stay apart by using their own
``agent-wait/user_id``, which is also how a chat runtime keeps users apart.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from agent_wait.mcp import PauseLimits, PausePolicy, build_server

pytestmark = pytest.mark.integration

SCRIPT = str(Path(sys.executable).with_name("agent-wait-mcp"))
LIMITS = {
    "AGENT_WAIT_HEARTBEAT_INTERVAL_MS": "100",
    "AGENT_WAIT_MAX_SECONDS_PER_CALL": "2",
    "AGENT_WAIT_MAX_SECONDS_PER_TURN": "3",
    "AGENT_WAIT_MAX_CALLS_PER_TURN": "3",
    "AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE": "4",
}
MESSAGE = "Waiting for the webhook queue to drain before fetching results."


def _server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_WAIT_") and k != "CHAT_AGENT_TURN_TIMEOUT_MS"
    }
    return env | extra


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _http_server(env: dict[str, str], log: Path, *options: str) -> Iterator[str]:
    port = _free_port()
    with log.open("w") as err:
        proc = subprocess.Popen(
            [SCRIPT, "--http", "--port", str(port), *options],
            env=_server_env(env),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "HTTP server did not start: " + log.read_text()
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Server:
    """How a test reaches one server: a client factory plus the server's stderr (audit log)."""

    def __init__(
        self, connect: Callable[..., AbstractAsyncContextManager[Client]], log: Path
    ) -> None:
        self.connect = connect
        self.log = log

    def audit(self, user: str) -> list[str]:
        return [
            line
            for line in self.log.read_text().splitlines()
            if "agent_wait audit" in line and f"user={user!r}" in line
        ]

    async def wait_for_audit(self, user: str, fragment: str) -> str:
        with anyio.fail_after(10):
            while True:
                for line in self.audit(user):
                    if fragment in line:
                        return line
                await anyio.sleep(0.05)


def _stdio(env: dict[str, str], log: Path) -> Server:
    @asynccontextmanager
    async def connect(**options: Any) -> AsyncIterator[Client]:
        # errlog must be a real file: the server's stderr is handed to the child process.
        with log.open("a") as err:
            params = StdioServerParameters(command=SCRIPT, env=env)
            async with Client(stdio_client(params, errlog=err), **options) as client:
                yield client

    return Server(connect, log)


def _http(url: str, log: Path) -> Server:
    @asynccontextmanager
    async def connect(**options: Any) -> AsyncIterator[Client]:
        async with Client(url, **options) as client:
            yield client

    return Server(connect, log)


@pytest.fixture(scope="module")
def shared_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("http") / "stderr.log"
    with _http_server(LIMITS, log) as url:
        yield _http(url, log)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Server:
    if request.param == "stdio":
        return _stdio(LIMITS, tmp_path / "stderr.log")
    return request.getfixturevalue("shared_http")


@pytest.fixture(params=["stdio", "http"])
def disabled_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    env = LIMITS | {"AGENT_WAIT_ENABLED": "false"}
    log = tmp_path / "stderr.log"
    if request.param == "stdio":
        yield _stdio(env, log)
    else:
        # The shared server relies on the default bind address; this one names it.
        with _http_server(env, log, "--host", "127.0.0.1") as url:
            yield _http(url, log)


def ids() -> tuple[str, str]:
    return f"user-{uuid.uuid4().hex[:8]}", f"turn-{uuid.uuid4().hex[:8]}"


class Heartbeats:
    """Collects the progress notifications of one client, with their ``_meta``."""

    def __init__(self) -> None:
        self.beats: list[types.ProgressNotificationParams] = []

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ProgressNotification):
            self.beats.append(message.params)


async def call(
    client: Client,
    seconds: object,
    *,
    user: str,
    turn: str,
    progress: Callable[[float, float | None, str | None], Any] | None = None,
    **extra: object,
) -> types.CallToolResult:
    """Call the tool as a chat runtime would; heartbeats are requested only with ``progress``."""
    return await client.call_tool(
        "agent_wait",
        {"seconds": seconds, "user_message": MESSAGE, **extra},
        progress_callback=progress,
        meta={"agent-wait/user_id": user, "agent-wait/turn_id": turn},
    )


def refusal(result: types.CallToolResult) -> str:
    assert result.is_error, result
    assert result.meta is not None
    return str(result.meta["agent-wait/refusal"])


def text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def parse_utc(value: str) -> datetime:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value), value
    return datetime.fromisoformat(value)


async def test_caps_clip_with_heartbeats_then_refuse(server: Server) -> None:
    """Per-call clip with its heartbeats, then per-turn clip, then the turn budget refusal."""
    user, turn = ids()
    heartbeats = Heartbeats()
    seen: list[tuple[float, float | None, str | None]] = []
    results: dict[str, types.CallToolResult] = {}
    admitted = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        admitted.set()

    async with server.connect(message_handler=heartbeats) as client:

        async def long_wait() -> None:
            results["first"] = await call(
                client, 30, user=user, turn=turn, progress=on_progress, reason="queue drain"
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_wait)
            await admitted.wait()  # 2 of the turn's 3 s are charged from here on
            results["second"] = await call(client, 2, user=user, turn=turn)
            results["third"] = await call(client, 1, user=user, turn=turn)

    first = results["first"]
    assert not first.is_error, text(first)
    data = first.structured_content
    assert data is not None
    assert json.loads(text(first)) == data
    assert data["requested_seconds"] == 30
    assert data["granted_seconds"] == 2
    assert data["cap_seconds"] == 2
    assert data["clipped_by"] == "per_call"
    assert data["waited_seconds"] >= 2
    assert data["turn_seconds_remaining"] == 1
    assert data["turn_calls_remaining"] == 2

    beats = heartbeats.beats  # only the first call asked for progress
    # ~20 at 100 ms over 2 s; the bound only guards against "hardly any heartbeats".
    assert len(beats) >= 5
    remaining = [b.meta["agent-wait/remaining_seconds"] for b in beats if b.meta]
    assert len(remaining) == len(beats)
    assert remaining == sorted(remaining, reverse=True)
    assert len(set(remaining)) == len(remaining)
    assert 0 < remaining[-1] < remaining[0] <= 2
    assert [b.progress for b in beats] == sorted({b.progress for b in beats})
    assert {b.total for b in beats} == {2.0}
    assert {b.message for b in beats} == {MESSAGE}
    (wait_until,) = {b.meta["agent-wait/wait_until"] for b in beats if b.meta}
    assert parse_utc(data["resume_at"]) >= parse_utc(wait_until)
    # The progress callback sees the same stream (progress, total, message). Closing the client
    # right after the result may drop the very last callback or handler task, hence the prefix.
    common = min(len(beats), len(seen))
    assert [(b.progress, b.total, b.message) for b in beats][:common] == seen[:common]
    assert abs(len(beats) - len(seen)) <= 1

    second = results["second"].structured_content
    assert second is not None
    assert (second["granted_seconds"], second["clipped_by"], second["cap_seconds"]) == (
        1,
        "per_turn",
        1,
    )
    assert second["turn_seconds_remaining"] == 0
    assert refusal(results["third"]) == "turn_budget_exhausted"
    assert "AGENT_WAIT_MAX_SECONDS_PER_TURN" in text(results["third"])

    lines = server.audit(user)
    assert len(lines) == 3
    (line,) = [line for line in lines if "requested=30" in line]
    assert "outcome=completed" in line
    assert f"turn={turn!r}" in line
    assert "requested=30 granted=2 clipped_by=per_call" in line
    assert "reason='queue drain'" in line
    assert any("code=turn_budget_exhausted" in line for line in lines)
    assert MESSAGE not in server.log.read_text()


async def test_calls_per_turn_cap_refuses_the_extra_call(server: Server) -> None:
    user, turn = ids()
    results: list[types.CallToolResult] = []

    async with server.connect() as client:

        async def one() -> None:
            results.append(await call(client, 1, user=user, turn=turn))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
        extra = await call(client, 1, user=user, turn=turn)

    data = [r.structured_content for r in results]
    assert all(d is not None and not r.is_error for d, r in zip(data, results, strict=True))
    assert sorted(d["turn_calls_remaining"] for d in data if d) == [0, 1, 2]
    assert all("clipped_by" not in d and "cap_seconds" not in d for d in data if d)
    assert refusal(extra) == "calls_per_turn"
    assert "AGENT_WAIT_MAX_CALLS_PER_TURN=3" in text(extra)


async def test_rate_limit_is_per_user(server: Server) -> None:
    user, _ = ids()
    other, _ = ids()
    results: list[types.CallToolResult] = []
    callers = [user] * 4 + [other]
    admitted = [anyio.Event() for _ in callers]

    async with server.connect() as client:

        async def one(who: str, started: anyio.Event) -> None:
            async def beat(progress: float, total: float | None, message: str | None) -> None:
                started.set()

            # A fresh turn per call: only the per-user rate can refuse.
            results.append(await call(client, 1, user=who, turn=uuid.uuid4().hex, progress=beat))

        async with anyio.create_task_group() as tg:
            for who, started in zip(callers, admitted, strict=True):
                tg.start_soon(one, who, started)
            for started in admitted:
                await started.wait()
            limited = await call(client, 1, user=user, turn=uuid.uuid4().hex)

    assert [r.is_error for r in results] == [False] * 5
    assert refusal(limited) == "rate_limited"
    assert limited.meta is not None
    assert 1 <= limited.meta["agent-wait/retry_after_seconds"] <= 60
    assert "AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE=4" in text(limited)


async def test_cancelling_the_call_ends_the_wait_and_refunds_the_turn(server: Server) -> None:
    user, turn = ids()
    started = anyio.Event()

    async def first_beat(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with server.connect() as client:
        async with anyio.create_task_group() as tg:

            async def doomed() -> None:
                await call(client, 2, user=user, turn=turn, progress=first_beat)
                pytest.fail("the cancelled call returned")

            tg.start_soon(doomed)
            await started.wait()
            tg.cancel_scope.cancel()

        line = await server.wait_for_audit(user, "outcome=cancelled")
        waited = float(re.search(r"waited=([0-9.]+)", line)[1])  # type: ignore[index]
        # Granted 2 s; the server saw the cancellation long before that.
        assert waited < 1.5
        after = await call(client, 1, user=user, turn=turn)

    data = after.structured_content
    assert data is not None
    # Without the refund the cancelled call would keep 2 of the 3 s and leave 0 after this one.
    assert data["turn_seconds_remaining"] == 1
    assert data["turn_calls_remaining"] == 1  # the cancelled call still counted


INVALID = [
    ({"seconds": -3, "user_message": MESSAGE}, "seconds"),
    ({"seconds": 0, "user_message": MESSAGE}, "seconds"),
    ({"seconds": 1.5, "user_message": MESSAGE}, "seconds"),
    ({"seconds": "5", "user_message": MESSAGE}, "seconds"),
    ({"user_message": MESSAGE}, "seconds"),
    ({"seconds": 5}, "user_message"),
    ({"seconds": 5, "user_message": ""}, "user_message"),
    ({"seconds": 5, "user_message": MESSAGE, "reason": 42}, "reason"),
]


async def test_listing_and_input_errors(server: Server) -> None:
    user, turn = ids()
    meta = {"agent-wait/user_id": user, "agent-wait/turn_id": turn}
    async with server.connect() as client:
        (tool,) = (await client.list_tools()).tools
        results = [await client.call_tool("agent_wait", args, meta=meta) for args, _ in INVALID]
        bad_turn = await client.call_tool(
            "agent_wait", {"seconds": 1, "user_message": MESSAGE}, meta={"agent-wait/turn_id": 5}
        )
        with pytest.raises(MCPError, match="unknown tool 'sleep'"):
            await client.call_tool("sleep", {"seconds": 1})

    assert tool.name == "agent_wait"
    assert tool.input_schema["required"] == ["seconds", "user_message"]
    assert tool.input_schema["properties"]["seconds"]["type"] == "integer"
    assert tool.input_schema["properties"]["seconds"]["maximum"] == 1_000_000_000
    assert tool.output_schema is not None
    assert "at most 2 s per call, 3 s and 3 calls per turn" in (tool.description or "")

    for result, (args, field) in zip(results, INVALID, strict=True):
        assert refusal(result) == "invalid_input", args
        assert text(result).startswith(field), (args, text(result))
    assert refusal(bad_turn) == "invalid_input"
    assert "'agent-wait/turn_id'" in text(bad_turn)
    fields = [re.search(r"field=(\S+)", line)[1] for line in server.audit(user)]  # type: ignore[index]
    assert fields == [field for _, field in INVALID]


async def test_seconds_beyond_any_cap_are_refused_before_anything_is_charged(
    server: Server,
) -> None:
    user, turn = ids()
    async with server.connect() as client:
        result = await call(client, 10**9 + 1, user=user, turn=turn)
        after = await call(client, 1, user=user, turn=turn)

    assert refusal(result) == "invalid_input"
    assert text(result) == "seconds must be a whole number from 1 to 1000000000, got 1000000001"
    data = after.structured_content
    assert data is not None, text(after)
    # Nothing of the refused call was charged: the turn lost one call and one second, for `after`.
    assert (data["turn_calls_remaining"], data["turn_seconds_remaining"]) == (2, 2)
    lines = server.audit(user)
    assert len(lines) == 2, lines
    assert "outcome=invalid field=seconds" in lines[0]
    assert "outcome=completed" in lines[1]


@pytest.mark.parametrize("seconds", [10**5000, -(10**5000)], ids=["huge", "negative-huge"])
async def test_an_unprintable_seconds_gets_exactly_one_audit_line(
    seconds: int, caplog: pytest.LogCaptureFixture
) -> None:
    # In process: the arguments reach the server as Python objects. Over stdio or HTTP the SDK's
    # JSON reader never hands an integer of more than 4300 digits to the server at all.
    policy = PausePolicy(PauseLimits(max_seconds_per_call=1))
    user, turn = ids()
    with caplog.at_level(logging.INFO, logger="agent_wait.mcp"):
        async with Client(build_server(policy)) as client:
            result = await call(client, seconds, user=user, turn=turn)
            after = await call(client, 1, user=user, turn=turn)

    assert refusal(result) == "invalid_input"
    assert text(result) == (
        "seconds must be a whole number from 1 to 1000000000, got a 5001-digit number"
    )
    assert after.structured_content is not None, text(after)
    assert after.structured_content["turn_calls_remaining"] == 4  # the refused call cost nothing
    audit = [r.getMessage() for r in caplog.records if "agent_wait audit" in r.getMessage()]
    assert len(audit) == 2, audit
    assert audit[0] == f"agent_wait audit outcome=invalid field=seconds user={user!r} turn={turn!r}"
    assert "outcome=completed" in audit[1]
    assert "Logging error" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_kill_switch_refuses(disabled_server: Server) -> None:
    user, turn = ids()
    async with disabled_server.connect() as client:
        result = await call(client, 1, user=user, turn=turn)
    assert refusal(result) == "disabled"
    assert "AGENT_WAIT_ENABLED=false" in text(result)
    assert "code=disabled" in disabled_server.audit(user)[0]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_handshake_era_client_without_ids(
    transport: str, tmp_path: Path, shared_http: Server
) -> None:
    """A 2025-11-25 client that sends no ids: charged to its HTTP session, or anonymous on stdio."""
    log = tmp_path / "stderr.log"
    target = _stdio(LIMITS, log) if transport == "stdio" else shared_http
    heartbeats = Heartbeats()

    async def ignore(progress: float, total: float | None, message: str | None) -> None:
        return None

    async with target.connect(mode="legacy", message_handler=heartbeats) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool(
            "agent_wait", {"seconds": 1, "user_message": MESSAGE}, progress_callback=ignore
        )
    data = result.structured_content
    assert data is not None
    assert (data["granted_seconds"], data["waited_seconds"] >= 1) == (1, True)
    assert heartbeats.beats
    lines = target.log.read_text().splitlines()
    if transport == "stdio":
        assert any("user='anonymous' turn=None" in line for line in lines)
    else:
        assert any(re.search(r"user='session:[0-9a-f]+' turn=None", line) for line in lines)


# --- the console script itself -------------------------------------------------------------


def test_invalid_env_fails_at_startup() -> None:
    proc = subprocess.run(
        [SCRIPT],
        env=_server_env({"AGENT_WAIT_MAX_CALLS_PER_TURN": "five"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "AGENT_WAIT_MAX_CALLS_PER_TURN='five' is not valid" in proc.stderr


def test_host_and_port_need_http() -> None:
    proc = subprocess.run(
        [SCRIPT, "--port", "8123"], env=_server_env({}), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "--host and --port apply only with --http" in proc.stderr


def test_a_request_the_sdk_cannot_parse_is_answered_not_dropped_over_stdio() -> None:
    # The SDK's parser refuses integers over 4,300 digits; unanswered, the client would wait
    # for ever. Over HTTP the SDK itself answers such a body 400.
    def request(request_id: int | str, method: str, params: str) -> str:
        return f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"{method}","params":{params}}}'

    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    huge = "9" * 4301
    lines = [
        request(1, "initialize", json.dumps(initialize)),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        request(2, "tools/call", f'{{"name":"agent_wait","arguments":{{"seconds":{huge}}}}}'),
        request("three", "tools/call", f'{{"name":"agent_wait","arguments":{{"x":{huge}}}}}'),
    ]
    proc = subprocess.run(
        [SCRIPT],
        env=_server_env({}),
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
    )
    answers = {answer["id"]: answer for answer in map(json.loads, proc.stdout.splitlines())}
    assert sorted(answers, key=str) == [1, 2, "three"]
    for refused in (answers[2], answers["three"]):
        assert refused["error"]["code"] == -32700
        assert "number out of range" in refused["error"]["message"]
    assert "Traceback" not in proc.stderr
