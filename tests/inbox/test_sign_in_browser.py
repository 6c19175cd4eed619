"""OpenID Connect sign-in and approver routing, in Chromium against a real provider and server.

The provider is a real OpenID Connect server on loopback (``oidc-provider-mock``: discovery,
authorization form, code exchange, signed ID tokens); the inbox is ``agent-wait inbox serve
--oidc-issuer`` in its own process; people sign in through the provider's form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from agent_wait.core import SqliteQuestionStore, started_by
from agent_wait.core._sqlite import default_inbox_path
from tests.inbox.browser import chromium, chromium_path
from tests.inbox.conftest import Server, ask
from tests.serving import all_sent

oidc_provider_mock = pytest.importorskip("oidc_provider_mock")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="browser tests need the system Chromium: apt-get install -y chromium",
    ),
]

PEOPLE: dict[str, dict[str, Any]] = {
    "alice@example.com": {"email": "alice@example.com", "name": "Alice", "groups": ["finance"]},
    "bob@example.com": {"email": "bob@example.com", "name": "Bob", "groups": ["support"]},
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def issuer() -> Iterator[str]:
    with oidc_provider_mock.run_server_in_thread(require_nonce=True) as server:
        url = f"http://localhost:{server.server_port}"
        for subject, claims in PEOPLE.items():
            put = httpx.put(f"{url}/users/{quote(subject)}", json=claims, timeout=30)
            assert put.status_code == 204, put.text
        yield url


@pytest.fixture
def inbox_server(issuer: str) -> Iterator[Server]:
    inbox = default_inbox_path()
    ask(inbox, "refund", thread_id="order-1", args={"amount": 900}, approvers=["group:finance"])
    ask(
        inbox, "reset", thread_id="acct-7", function="reset_password", approvers=["bob@example.com"]
    )
    with started_by("alice@example.com"):
        ask(inbox, "payout", thread_id="order-2", function="pay_out", args={"amount": 5})
    server = Server(
        "--oidc-issuer",
        issuer,
        "--oidc-client-id",
        "agent-wait-inbox",
        env={"AGENT_WAIT_INBOX_OIDC_SECRET": "client-secret"},
    )
    yield server
    server.stop()


@pytest.fixture
def sessions(browser: Browser, inbox_server: Server) -> Iterator[list[BrowserContext]]:
    """Browser sessions, closed before the server stops (their live-update streams with them)."""
    opened: list[BrowserContext] = []
    yield opened
    for context in opened:
        context.close()


def new_page(sessions: list[BrowserContext], browser: Browser) -> Page:
    sessions.append(browser.new_context())
    return sessions[-1].new_page()


def sign_in(browser: Browser, sessions: list[BrowserContext], server: Server, subject: str) -> Page:
    """A new browser session signed in as ``subject`` through the provider's form."""
    page = new_page(sessions, browser)
    page.goto(f"{server.url}/")
    # Nothing but OpenID Connect is configured: straight to the provider.
    page.wait_for_selector("input[name=sub]")
    page.fill("input[name=sub]", subject)
    page.click("button:has-text('Authorize')")
    page.wait_for_selector("h1:has-text('Open questions')")
    expect(page.locator("#user")).to_have_text(subject)
    return page


def listed(page: Page) -> set[str]:
    """The functions of the listed questions: each row's link is its call summary, ``f(...)``."""
    links = page.locator("table a[href*='/questions/']").all_inner_texts()
    return {text.split("(", 1)[0] for text in links}


def test_people_sign_in_see_only_their_questions_and_are_refused_the_others(
    browser: Browser, sessions: list[BrowserContext], inbox_server: Server
) -> None:
    bob = sign_in(browser, sessions, inbox_server, "bob@example.com")
    # Bob answers reset (named) and payout (anyone but its starter), not refund (finance).
    assert listed(bob) == {"reset_password", "pay_out"}
    bob.goto(f"{inbox_server.url}/questions/refund?thread=order-1")
    expect(bob.locator("#not-yours")).to_have_text(
        "You may not answer this question: its approvers are group:finance."
    )
    assert bob.locator("form#answer").count() == 0
    csrf = bob.locator("input[name=csrf]").first.get_attribute("value") or ""
    # The form's POST and the JSON API refuse him too, before anything is recorded.
    form = bob.request.post(
        f"{inbox_server.url}/questions/refund/answer?thread=order-1",
        form={"csrf": csrf, "action": "approve"},
    )
    assert form.status == 403
    assert "Not sent: its approvers are group:finance." in form.text()
    api = bob.request.post(
        f"{inbox_server.url}/api/questions/refund/answer?thread=order-1",
        data={"action": "approve"},
        headers={"X-CSRF-Token": csrf},
    )
    assert api.status == 403
    assert api.json()["error"] == (
        "question refund (thread order-1): bob@example.com (oidc) may not answer it: its "
        "approvers are group:finance; nothing recorded or sent"
    )
    with SqliteQuestionStore(default_inbox_path()) as store:
        [refund] = store.find("refund", "order-1")
    assert refund.is_open

    # Alice is in finance (the provider's groups claim); she started payout, so not that one.
    alice = sign_in(browser, sessions, inbox_server, "alice@example.com")
    assert listed(alice) == {"issue_refund"}
    alice.goto(f"{inbox_server.url}/questions/payout?thread=order-2")
    expect(alice.locator("#not-yours")).to_contain_text("they started the run that asked it")
    alice.goto(f"{inbox_server.url}/questions/refund?thread=order-1")
    alice.click("form#answer button[value=approve]")
    expect(alice.locator("#result")).to_have_text("Answer sent.")
    expect(alice.locator("#status")).to_contain_text("answered by alice@example.com")
    refund_answer = next(m for m in all_sent(default_inbox_path()) if m["question_id"] == "refund")
    assert refund_answer["answered_by"] == "alice@example.com"
    assert refund_answer["identity_source"] == "oidc"


def test_a_refused_sign_in_says_why(
    browser: Browser, sessions: list[BrowserContext], inbox_server: Server
) -> None:
    page = new_page(sessions, browser)
    page.goto(f"{inbox_server.url}/")
    page.wait_for_selector("input[name=sub]")
    page.click("button:has-text('Deny')")
    expect(page.locator(".error")).to_have_text(
        "Not signed in: the provider refused the sign-in (access_denied)"
    )
