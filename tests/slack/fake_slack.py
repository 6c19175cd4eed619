"""A local HTTP server that plays Slack's Web API for slack-sdk's real ``WebClient`` (``base_url``).

It records every call (``chat.postMessage``, ``chat.update``, ``views.open``,
``chat.postEphemeral``, ``auth.test``) with its JSON arguments, keeps the messages posted and
updated per conversation and the replies in each message's thread (``thread_ts``), and answers
as Slack does: ``{"ok": true, ...}``, or ``{"ok": false,
"error": ...}`` for a wrong token, an unknown channel or an unknown message; ``outage`` makes
a method's next calls answer HTTP 500, as Slack does when it is down. It also posts
interactivity payloads the way Slack does: form-encoded ``payload=<JSON>``, signed with v0
HMAC-SHA256 of ``v0:<timestamp>:<body>``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from tests.webhook.conftest import uvicorn_serving

TOKEN = "xoxb-1-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
USERS = {"U0ALICE": "alice", "U0BOB": "bob"}
TEAM = "T0AGENT"


@dataclass
class Call:
    """One Web API call: the method and its JSON arguments."""

    method: str
    arguments: dict[str, Any]


@dataclass
class FakeSlack:
    """What the fake received, and the messages as Slack would now show them."""

    url: str = ""
    calls: list[Call] = field(default_factory=list[Call])
    # channel ID -> ts -> the message's latest {"text", "blocks"}
    messages: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=dict[str, dict[str, dict[str, Any]]]
    )
    # channel ID -> thread ts -> the replies posted in that thread, in order
    replies: dict[str, dict[str, list[dict[str, Any]]]] = field(
        default_factory=dict[str, dict[str, list[dict[str, Any]]]]
    )
    refuse: dict[str, str] = field(default_factory=dict[str, str])
    # method -> how many of its next calls answer HTTP 500 (Slack down), for fault injection
    outage: dict[str, int] = field(default_factory=dict[str, int])
    lock: threading.Lock = field(default_factory=threading.Lock)
    _clock: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def base_url(self) -> str:
        return f"{self.url}/api/"

    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        with self.lock:
            return self.messages[channel][ts]

    def thread(self, channel: str, ts: str) -> list[str]:
        """The texts of the replies in the thread of the message ``ts``, in order."""
        with self.lock:
            return [r["text"] for r in self.replies.get(channel, {}).get(ts, [])]

    def only_message(self) -> tuple[str, str, dict[str, Any]]:
        """The one message posted: its channel, ts and latest content."""
        with self.lock:
            [(channel, by_ts)] = self.messages.items()
            [(ts, content)] = by_ts.items()
            return channel, ts, content

    def answer(self, method: str, arguments: dict[str, Any]) -> dict[str, Any]:
        refused = self.refuse.get(method)
        if refused:
            return {"ok": False, "error": refused}
        if method == "chat.postMessage" and arguments.get("thread_ts"):
            channel, thread = str(arguments["channel"]), str(arguments["thread_ts"])
            if thread not in self.messages.get(channel, {}):
                return {"ok": False, "error": "thread_not_found"}
            ts = f"1765000000.{next(self._clock):06d}"
            self.replies.setdefault(channel, {}).setdefault(thread, []).append(
                {"ts": ts, "text": arguments.get("text")}
            )
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.postMessage":
            target = str(arguments["channel"])
            if target in ("C0MISSING", "#missing"):
                return {"ok": False, "error": "channel_not_found"}
            # A #name resolves to its channel's ID, a user to the app's DM with them.
            channel = (
                "C0" + target[1:].upper().replace("-", "")
                if target.startswith("#")
                else "D" + target[1:]
                if target.startswith("U")
                else target
            )
            ts = f"1765000000.{next(self._clock):06d}"
            self.messages.setdefault(channel, {})[ts] = {
                "text": arguments.get("text"),
                "blocks": arguments.get("blocks"),
            }
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.update":
            channel, ts = str(arguments["channel"]), str(arguments["ts"])
            if ts not in self.messages.get(channel, {}):
                return {"ok": False, "error": "message_not_found"}
            self.messages[channel][ts] = {
                "text": arguments.get("text"),
                "blocks": arguments.get("blocks"),
            }
            return {"ok": True, "channel": channel, "ts": ts}
        if method == "views.open":
            return {"ok": True, "view": {**arguments["view"], "id": "V0MODAL"}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1765000000.{next(self._clock):06d}"}
        if method == "auth.test":
            return {"ok": True, "team_id": TEAM, "user_id": "U0AGENTBOT"}
        return {"ok": False, "error": "unknown_method"}

    def app(self) -> Starlette:
        async def api(request: Request) -> JSONResponse:
            method = request.path_params["method"]
            if request.headers.get("authorization") != f"Bearer {TOKEN}":
                return JSONResponse({"ok": False, "error": "invalid_auth"})
            body = await request.body()
            arguments = json.loads(body) if body else {}
            with self.lock:
                self.calls.append(Call(method, arguments))
                if self.outage.get(method):
                    self.outage[method] -= 1
                    return PlainTextResponse("upstream unavailable", status_code=500)
                return JSONResponse(self.answer(method, arguments))

        return Starlette(routes=[Route("/api/{method}", api, methods=["POST"])])


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    """The fake on a free 127.0.0.1 port, in a thread of this process."""
    slack = FakeSlack()
    config = uvicorn.Config(slack.app(), log_level="warning", lifespan="off")
    with uvicorn_serving(config) as port:
        slack.url = f"http://127.0.0.1:{port}"
        yield slack


def signed(body: str, secret: str = SIGNING_SECRET, at: int | None = None) -> dict[str, str]:
    """The headers Slack sends with ``body``: its timestamp and v0 signature."""
    timestamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest.hexdigest()}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def form(payload: dict[str, Any]) -> str:
    """The request body Slack posts: ``payload=<JSON>``, form-encoded."""
    return urlencode({"payload": json.dumps(payload)})


def click(
    message: dict[str, Any], channel: str, ts: str, action_id: str, user: str = "U0ALICE"
) -> dict[str, Any]:
    """The ``block_actions`` payload of a click on the button ``action_id`` of a message."""
    [button] = [
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if element["action_id"] == action_id
    ]
    return {
        "type": "block_actions",
        "user": {"id": user, "username": USERS[user], "name": USERS[user], "team_id": TEAM},
        "team": {"id": TEAM},
        "api_app_id": "A0AGENTWAIT",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel},
        "channel": {"id": channel},
        "message": {"ts": ts, "blocks": message["blocks"]},
        "trigger_id": "1234.5678.abcdef",
        "response_url": "https://hooks.slack.com/actions/T0AGENT/1/xyz",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "agent_wait_answer",
                "value": button["value"],
                "action_ts": "1765000001.000000",
            }
        ],
    }


def submission(view: dict[str, Any], values: dict[str, Any], user: str = "U0ALICE") -> Any:
    """The ``view_submission`` payload of a modal sent with ``values`` (``state.values``)."""
    return {
        "type": "view_submission",
        "user": {"id": user, "username": USERS[user], "name": USERS[user], "team_id": TEAM},
        "team": {"id": TEAM},
        "view": {**view, "id": "V0MODAL", "state": {"values": values}},
    }


def post(url: str, payload: dict[str, Any], **signing: Any) -> httpx.Response:
    """Post a payload to an Interactivity Request URL as Slack does."""
    body = form(payload)
    return httpx.post(url, content=body, headers=signed(body, **signing), timeout=60)
