"""``agent-wait inbox serve``: the app on a real uvicorn server, over the default inbox."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from tests.inbox.conftest import AGENT_WAIT, SECRET, Server, ask, csrf_of

pytestmark = pytest.mark.integration


def test_inbox_serve_is_a_subcommand_of_inbox() -> None:
    shown = subprocess.run(
        [AGENT_WAIT, "inbox", "--help"], capture_output=True, text=True, check=True
    )
    assert "serve" in shown.stdout
    assert "Serve the approvals web app" in shown.stdout


def test_login_answer_and_history_over_http(served: Server) -> None:
    ask(default_inbox_path(), "q1", args={"order_id": "order-4471", "amount": 41000})
    with httpx.Client(base_url=served.url, follow_redirects=True) as browser:
        page = browser.get("/login")
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "server" not in page.headers
        logged_in = browser.post(
            "/login", data={"csrf": csrf_of(page.text), "name": "alice", "token": SECRET}
        )
        assert logged_in.status_code == 200
        assert "/questions/q1?" in logged_in.text
        detail = browser.get("/questions/q1", params={"thread": "order-4471"})
        done = browser.post(
            "/questions/q1/answer",
            params={"thread": "order-4471"},
            data={
                "csrf": csrf_of(detail.text),
                "action": "approve",
                "arg.amount": "35000",
                "arg.order_id": "order-4471",
            },
        )
        assert "Answer sent." in done.text
        assert "answered by alice (shared-secret) at" in done.text
        assert "alice" in browser.get("/history").text
    with SqliteEntry() as entry:
        [received] = entry.receive(10)
    assert received.message["answer"] == {
        "action": "approve",
        "args": {"order_id": "order-4471", "amount": 35000},
    }
    assert SECRET not in served.stop()


def test_events_over_http(served: Server) -> None:
    with (
        httpx.Client(base_url=served.url) as client,
        client.stream(
            "GET", "/events", headers={"Authorization": f"Bearer {SECRET}"}, timeout=30
        ) as stream,
    ):
        lines = stream.iter_lines()
        assert next(lines).startswith("retry:")
        ask(default_inbox_path(), "fresh")
        assert "event: changed" in lines


def test_no_auth_on_loopback_needs_no_login() -> None:
    ask(default_inbox_path(), "q1")
    server = Server("--no-auth")
    try:
        listed = httpx.get(f"{server.url}/api/questions").json()
        assert [q["envelope"]["question_id"] for q in listed["questions"]] == ["q1"]
    finally:
        server.stop()


def test_no_auth_refuses_a_public_address_and_no_secret_is_an_error() -> None:
    public = subprocess.run(
        [AGENT_WAIT, "inbox", "serve", "--no-auth", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert public.returncode == 2
    assert "--no-auth serves a loopback --host only, got '0.0.0.0'" in public.stderr
    env = {k: v for k, v in os.environ.items() if k != "AGENT_WAIT_INBOX_TOKEN"}
    missing = subprocess.run(
        [AGENT_WAIT, "inbox", "serve"], capture_output=True, text=True, timeout=60, env=env
    )
    assert missing.returncode == 2
    assert "set AGENT_WAIT_INBOX_TOKEN" in missing.stderr


def test_store_option_serves_another_file(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite3"
    ask(other, "elsewhere")
    server = Server("--no-auth", "--store", str(other))
    try:
        listed = httpx.get(f"{server.url}/api/questions").json()
        assert [q["envelope"]["question_id"] for q in listed["questions"]] == ["elsewhere"]
    finally:
        server.stop()
    with SqliteQuestionStore(other) as store:
        assert store.find("elsewhere")[0].is_open


def test_forwarded_headers_from_this_host_are_not_believed() -> None:
    # Anyone on this host could otherwise name the trusted proxy in X-Forwarded-For and the
    # person in X-Forwarded-User.
    ask(default_inbox_path(), "q1")
    server = Server("--trusted-proxy", "10.9.9.9", env={"AGENT_WAIT_INBOX_TOKEN": SECRET})
    try:
        forged = {"X-Forwarded-For": "10.9.9.9", "X-Forwarded-User": "mallory"}
        assert httpx.get(f"{server.url}/api/questions", headers=forged).status_code == 401
        page = httpx.get(f"{server.url}/", headers=forged)
        assert page.status_code == 303
        assert page.headers["location"].startswith("/login")
    finally:
        server.stop()


def test_a_proxy_on_this_host_named_trusted_identifies_people() -> None:
    ask(default_inbox_path(), "q1")
    server = Server("--trusted-proxy", "127.0.0.1", env={"AGENT_WAIT_INBOX_TOKEN": SECRET})
    # What nginx or oauth2-proxy sends: the client's own X-Forwarded-For with the address the
    # proxy was reached from appended.
    relayed = {"X-Forwarded-For": "203.0.113.9, 198.51.100.7", "X-Forwarded-User": "carol"}
    try:
        with httpx.Client(base_url=server.url, headers=relayed) as proxy:
            listed = proxy.get("/api/questions")
            assert listed.status_code == 200
            assert [q["envelope"]["question_id"] for q in listed.json()["questions"]] == ["q1"]
            detail = proxy.get("/questions/q1", params={"thread": "order-4471"})
            done = proxy.post(
                "/questions/q1/answer",
                params={"thread": "order-4471"},
                data={"csrf": csrf_of(detail.text), "action": "approve"},
                follow_redirects=True,
            )
            assert "answered by carol (proxy) at" in done.text
            # Without the user header nobody is named, and the failed login is logged with
            # the client's address: the nearest one the trusted proxy did not add itself.
            anonymous = httpx.Client(
                base_url=server.url, headers={"X-Forwarded-For": relayed["X-Forwarded-For"]}
            )
            with anonymous:
                login = anonymous.get("/login")
                failed = anonymous.post(
                    "/login", data={"csrf": csrf_of(login.text), "name": "x", "token": "guess"}
                )
                assert failed.status_code == 401
    finally:
        logged = server.stop()
    with SqliteQuestionStore(default_inbox_path()) as store:
        assert store.find("q1")[0].answered_by == "carol"
    assert "failed inbox login from 198.51.100.7" in logged


def test_no_auth_refuses_a_request_a_local_proxy_relays_from_elsewhere() -> None:
    server = Server("--no-auth")
    try:
        relayed = {"X-Forwarded-For": "198.51.100.7"}
        assert httpx.get(f"{server.url}/api/questions", headers=relayed).status_code == 403
        local = {"X-Forwarded-For": "127.0.0.1"}
        assert httpx.get(f"{server.url}/api/questions", headers=local).status_code == 200
    finally:
        server.stop()
