"""Approver routing in the inbox app: a trusted proxy's user and groups, admins, the shared secret."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.host import ApproverConfig
from agent_wait.inbox import InboxAuth, inbox_app
from tests.inbox.conftest import ask, csrf_of, login, make_client, sent


@pytest.fixture
def proxied(inbox: Path) -> Iterator[TestClient]:
    ask(inbox, "fin", thread_id="t-fin", approvers=["group:finance"])
    ask(inbox, "any", thread_id="t-any", function="notify")
    ask(inbox, "ops", thread_id="t-ops", function="restart", approvers=["dave"])
    auth = InboxAuth(trusted_proxies=["10.0.0.0/8"])
    approvers = ApproverConfig(admins=("group:ops",))
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        app = inbox_app(store, auth, entry=entry, approvers=approvers)
        with TestClient(app, client=("10.1.2.3", 4000)) as client:
            yield client


def person(name: str, *groups: str) -> dict[str, str]:
    headers = {"X-Forwarded-User": name}
    if groups:
        headers["X-Forwarded-Groups"] = ", ".join(groups)
    return headers


def listed(client: TestClient, headers: dict[str, str]) -> set[str]:
    page = client.get("/api/questions", headers=headers)
    assert page.status_code == 200, page.text
    return {q["envelope"]["question_id"] for q in page.json()["questions"]}


def test_each_person_is_listed_what_they_may_answer_and_an_admin_everything(
    proxied: TestClient,
) -> None:
    assert listed(proxied, person("carol", "finance")) == {"fin", "any"}
    assert listed(proxied, person("erin")) == {"any"}
    assert listed(proxied, person("dave")) == {"ops", "any"}
    assert listed(proxied, person("frank", "ops")) == {"fin", "any", "ops"}
    html = proxied.get("/", headers=person("erin")).text
    assert "notify" in html
    assert "restart" not in html


def test_the_proxy_names_who_answers_and_a_person_who_may_not_is_refused(
    proxied: TestClient, inbox: Path
) -> None:
    erin = person("erin")
    page = proxied.get("/questions/fin", params={"thread": "t-fin"}, headers=erin)
    assert "You may not answer this question: its approvers are group:finance." in page.text
    assert 'id="answer"' not in page.text
    refused = proxied.post(
        "/questions/fin/answer",
        params={"thread": "t-fin"},
        headers=erin,
        data={"csrf": csrf_of(page.text), "action": "approve"},
    )
    assert refused.status_code == 403
    assert "Not sent: its approvers are group:finance." in refused.text
    # The admin sees it, and still may not answer it.
    frank = person("frank", "ops")
    api = proxied.post(
        "/api/questions/fin/answer",
        params={"thread": "t-fin"},
        headers={**frank, "X-CSRF-Token": csrf_of(page.text)},
        json={"action": "approve"},
    )
    assert api.status_code == 403, api.text
    assert sent(inbox) == []
    carol = person("carol", "finance")
    page = proxied.get("/questions/fin", params={"thread": "t-fin"}, headers=carol)
    done = proxied.post(
        "/questions/fin/answer",
        params={"thread": "t-fin"},
        headers=carol,
        data={"csrf": csrf_of(page.text), "action": "approve"},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    [message] = sent(inbox)
    assert (message["answered_by"], message["identity_source"]) == ("carol", "proxy")


def test_the_shared_secret_is_labelled_a_single_user_setup(inbox: Path) -> None:
    ask(inbox, "q1")
    for client in make_client(inbox):
        assert "for a single-user setup" in client.get("/login").text
        login(client, "alice")
        header = client.get("/").text
        assert "alice (shared secret: single-user setup, name not verified)" in header
