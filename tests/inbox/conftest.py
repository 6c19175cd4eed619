"""Questions in a real sqlite inbox, and the inbox app over it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_wait.core import (
    Question,
    Source,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.inbox import InboxAuth, inbox_app

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
            )
        ],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=(lambda: asked) if asked else None,
    )


def sent(path: Path) -> list[dict[str, Any]]:
    with SqliteEntry(path) as messages:
        return [r.message for r in messages.receive(100)]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the page"
    return found.group(1)


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite3"


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
