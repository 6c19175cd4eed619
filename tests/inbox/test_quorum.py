"""A question with a quorum in the inbox: the JSON API, the form and a real Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from starlette.testclient import TestClient

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.inbox import InboxAuth, inbox_app
from tests.inbox.browser import chromium, chromium_path, log_in
from tests.inbox.conftest import SECRET, Server, ask, csrf_of, login, sent

THREAD = {"thread": "order-4471"}


@pytest.fixture
def people(inbox: Path) -> Iterator[dict[str, TestClient]]:
    """alice, bob and carol, each signed in to one inbox app in their own session."""
    ask(inbox, "warmup", thread_id="warmup")
    store, entry = SqliteQuestionStore(inbox), SqliteEntry(inbox)
    app = inbox_app(store, InboxAuth(token=SECRET), entry=entry)
    clients = {
        name: TestClient(app, base_url="http://127.0.0.1") for name in ("alice", "bob", "carol")
    }
    for name, client in clients.items():
        client.__enter__()
        login(client, name)
    yield clients
    for client in clients.values():
        client.__exit__(None, None, None)
    entry.close()
    store.close()


def api_vote(client: TestClient, action: str) -> tuple[int, dict[str, object]]:
    page = client.get("/questions/q1", params=THREAD)
    response = client.post(
        "/api/questions/q1/answer",
        params=THREAD,
        headers={"X-CSRF-Token": csrf_of(page.text)},
        json={"action": action},
    )
    return response.status_code, response.json()


def test_two_of_three_in_the_inbox_counts_then_sends_once(
    people: dict[str, TestClient], inbox: Path
) -> None:
    ask(inbox, "q1", args={"amount": 41000}, quorum=2, tags={"approver_group": "finance"})
    status, body = api_vote(people["alice"], "approve")
    assert status == 200, body
    assert body["status"] == "open"
    assert body["tally"] == "1 of 2 approvals, waiting for finance"
    assert sent(inbox) == []
    listing = people["bob"].get("/").text
    assert "1 of 2 approvals, waiting for finance" in listing
    page = people["bob"].get("/questions/q1", params=THREAD)
    assert "alice (shared-secret) at " in page.text
    status, body = api_vote(people["alice"], "approve")
    assert status == 409
    assert "alice already voted" in str(body["error"])
    form = people["bob"].post(
        "/questions/q1/answer",
        params=THREAD,
        data={"csrf": csrf_of(page.text), "action": "approve"},
        follow_redirects=False,
    )
    assert form.status_code == 303
    assert "Answer sent." in people["bob"].get(form.headers["location"]).text
    status, body = api_vote(people["carol"], "approve")
    assert status == 409
    assert str(body["error"]).startswith("already answered by bob")
    [message] = sent(inbox)
    assert (message["answer"], message["answered_by"]) == ({"action": "approve"}, "bob")
    audited = people["carol"].get("/questions/q1", params=THREAD).text
    assert 'id="audit-heading"' in audited
    assert 'id="audit-verified"' in audited
    for kind in ("asked", "delivered", "vote", "answered"):
        assert f"<td>{kind}</td>" in audited


def test_a_reject_in_the_inbox_vetoes(people: dict[str, TestClient], inbox: Path) -> None:
    ask(inbox, "q1", args={"amount": 41000}, quorum=2)
    assert api_vote(people["alice"], "approve")[0] == 200
    status, body = api_vote(people["carol"], "reject")
    assert status == 200, body
    assert (body["status"], body["answered_by"]) == ("answered", "carol")
    [message] = sent(inbox)
    assert message["answer"] == {"action": "reject"}


@pytest.mark.integration
@pytest.mark.skipif(chromium_path() is None, reason="needs the system Chromium")
def test_chromium_shows_the_count_and_the_second_approval_sends(served: Server) -> None:
    ask(
        default_inbox_path(),
        "q1",
        args={"amount": 10},
        quorum=2,
        tags={"approver_group": "finance"},
    )
    with chromium() as browser:
        _approve_in_turn(browser, served.url)
    with SqliteEntry() as entry:
        answers = [(r.message["answer"], r.message["answered_by"]) for r in entry.receive(10)]
    assert answers == [({"action": "approve"}, "bob")]


def _approve_in_turn(browser: Browser, url: str) -> None:
    alice_context, bob_context = browser.new_context(), browser.new_context()
    alice, bob = alice_context.new_page(), bob_context.new_page()
    try:
        log_in(alice, url, "alice", SECRET)
        log_in(bob, url, "bob", SECRET)
        alice.goto(f"{url}/questions/q1?thread=order-4471")
        alice.click("button[value=approve]")
        expect(alice.locator("#result")).to_have_text(
            "Vote recorded: 1 of 2 approvals, waiting for finance."
        )
        bob.goto(f"{url}/")
        expect(bob.locator(".votes")).to_have_text("1 of 2 approvals, waiting for finance")
        bob.goto(f"{url}/questions/q1?thread=order-4471")
        expect(bob.locator("#votes")).to_contain_text("alice (shared-secret) at")
        bob.click("button[value=approve]")
        expect(bob.locator("#result")).to_have_text("Answer sent.")
    finally:
        alice_context.close()
        bob_context.close()
