"""Questions in a real sqlite inbox, and the inbox app over it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from agent_wait.core import (
    CallContext,
    EntryPoint,
    Question,
    QuestionStore,
    Source,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.inbox import InboxAuth, inbox_app
from tests.aws_moto import free_port

AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))

SECRET = "correct horse battery staple"


def ask(
    path: Path,
    question_id: str,
    *,
    thread_id: str = "order-4471",
    function: str = "issue_refund",
    args: dict[str, Any] | None = None,
    asked: datetime | None = None,
    question: Any = None,
    context: CallContext | None = None,
    **policy: Any,
) -> None:
    body = question if question is not None else {"function": function, "args": args or {}}
    publish(
        [
            Question(
                question_id=question_id,
                question=body,
                policy=WaitPolicy(**policy),
                source=Source(function=function),
                context=context,
            )
        ],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=(lambda: asked) if asked else None,
    )


def sent(path: Path) -> list[dict[str, Any]]:
    """The first message of each thread the entry point holds (each thread hands out its head)."""
    with SqliteEntry(path) as messages:
        return [r.message for r in messages.receive(100)]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the page"
    return found.group(1)


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite3"


def app_client(store: QuestionStore, entry: EntryPoint) -> TestClient:
    """A test client of the inbox app over ``store`` and ``entry``, its token ``SECRET``."""
    return TestClient(
        inbox_app(store, InboxAuth(token=SECRET), entry=entry), base_url="http://127.0.0.1"
    )


def make_client(path: Path, **auth: Any) -> Iterator[TestClient]:
    store = SqliteQuestionStore(path)
    entry = SqliteEntry(path)
    app = inbox_app(store, InboxAuth(**({"token": SECRET} | auth)), entry=entry, poll_interval=0.05)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client
    entry.close()
    store.close()


def login(client: TestClient, name: str = "alice") -> None:
    page = client.get("/login")
    response = client.post(
        "/login",
        data={"csrf": csrf_of(page.text), "name": name, "token": SECRET, "next": "/"},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text


@pytest.fixture
def client(inbox: Path) -> Iterator[TestClient]:
    ask(inbox, "warmup", thread_id="warmup")  # creates the table
    yield from make_client(inbox)


@pytest.fixture
def alice(client: TestClient) -> TestClient:
    login(client)
    return client


class Server:
    """``agent-wait inbox serve`` in its own process, on a free port of 127.0.0.1."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [AGENT_WAIT, "inbox", "serve", "--port", str(self.port), *argv],
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"inbox serve exited: {self.process.communicate()[1]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("inbox serve did not start within 30 s")

    def stop(self) -> str:
        """Stop it (SIGTERM) and return what it wrote to stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.communicate(timeout=30)[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    """The inbox app over the default inbox ($AGENT_WAIT_HOME), with the login secret set."""
    ask(default_inbox_path(), "warmup", thread_id="warmup", function="warmup")
    server = Server(env={"AGENT_WAIT_INBOX_TOKEN": SECRET})
    yield server
    server.stop()
