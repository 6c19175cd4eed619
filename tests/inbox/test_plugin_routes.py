"""Routes a plugin serves inside the inbox (``register_inbox_routes``): mounted at ``/<name>``,
outside the login, answering into the inbox's own store and entry point; a broken one is left out."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from agent_wait.core import SqliteEntry, SqliteQuestionStore, hookimpl
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.inbox import InboxAuth, inbox_app
from agent_wait.testing import registered_plugin
from tests.inbox.conftest import SECRET

built: list[dict[str, Any]] = []


def chat_routes(**arguments: Any) -> list[Route]:
    built.append(arguments)

    async def callback(request: Request) -> JSONResponse:
        return JSONResponse({"store": repr(arguments["store"])})

    return [Route("/callback", callback, methods=["POST"])]


def unconfigured(**arguments: Any) -> list[Route]:
    raise ValueError("chat: no token configured")


class Plugin:
    @hookimpl
    def register_inbox_routes(self, register: RegisterTarget) -> None:
        register("chat", chat_routes)
        register("pager", unconfigured)


def test_plugin_routes_are_mounted_outside_the_login(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "inbox.sqlite3"
    with (
        registered_plugin(Plugin(), "test-inbox-chat"),
        SqliteQuestionStore(path) as store,
        SqliteEntry(path) as entry,
    ):
        app = inbox_app(store, InboxAuth(token=SECRET), entry=entry)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            # No session, no bearer token: the plugin authenticates its own requests.
            done = client.post("/chat/callback")
            assert (done.status_code, done.json()) == (200, {"store": repr(store)})
            assert client.post("/pager/callback").status_code == 404
            # The inbox's own pages still want a login.
            assert client.get("/", follow_redirects=False).status_code == 303
    assert built[-1] == {"store": store, "entry": entry}
    assert "the pager routes are not served: chat: no token configured" in caplog.text
    assert [r.levelno for r in caplog.records if "pager" in r.getMessage()] == [logging.WARNING]
