"""The inbox app at the HTTP level (starlette TestClient) over a real sqlite inbox and entry point."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from httpx import Response
from starlette.testclient import TestClient

from agent_wait.core import ConfigError, SqliteEntry, SqliteQuestionStore
from agent_wait.inbox import InboxAuth, inbox_app
from tests.inbox.conftest import (
    SECRET,
    app_client,
    ask,
    csrf_of,
    login,
    make_client,
    sent,
)
from tests.serving import all_sent

NOW = datetime.now(UTC)


class Elements(HTMLParser):
    """Every tag, attribute name and script source of a page, as a browser would parse it."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.scripts: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]
        if tag == "script":
            self.scripts.append(dict(attrs).get("src"))


def answer_form(client: TestClient, question_id: str, thread: str, **fields: str) -> Response:
    page = client.get(f"/questions/{question_id}", params={"thread": thread})
    assert page.status_code == 200, page.text
    return client.post(
        f"/questions/{question_id}/answer",
        params={"thread": thread},
        data={"csrf": csrf_of(page.text), **fields},
        follow_redirects=False,
    )


def test_pages_need_a_login_and_a_wrong_secret_is_refused(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2F"
    assert client.get("/api/questions").status_code == 401
    page = client.get("/login")
    wrong = client.post(
        "/login", data={"csrf": csrf_of(page.text), "name": "mallory", "token": "guess"}
    )
    assert wrong.status_code == 401
    assert "wrong name or secret" in wrong.text
    assert SECRET not in wrong.text
    assert client.get("/", follow_redirects=False).status_code == 303


def test_login_without_the_csrf_field_is_refused(client: TestClient) -> None:
    client.get("/login")
    response = client.post("/login", data={"name": "alice", "token": SECRET})
    assert response.status_code == 403


def test_the_session_cookie_is_httponly_and_samesite(client: TestClient) -> None:
    page = client.get("/login")
    response = client.post(
        "/login",
        data={"csrf": csrf_of(page.text), "name": "alice", "token": SECRET},
        follow_redirects=False,
    )
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert SECRET.lower() not in cookie


def test_login_redirects_only_to_local_paths(client: TestClient) -> None:
    page = client.get("/login", params={"next": "//evil.example/"})
    assert 'name="next" value="/"' in page.text


def test_security_headers_on_every_page(client: TestClient) -> None:
    for path in ("/login", "/static/inbox.js", "/api/openapi.json"):
        headers = client.get(path).headers
        csp = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert headers["x-content-type-options"] == "nosniff"


def test_no_inline_script_in_any_page(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"amount": 1})
    for path in (
        "/",
        "/history",
        "/questions/q1?thread=order-4471",
        "/threads/order-4471",
        "/login",
    ):
        text = alice.get(path).text
        assert "<script>" not in text, path
        assert "onclick" not in text.lower(), path


def test_the_list_is_earliest_deadline_first_with_overdue_marked(
    alice: TestClient, inbox: Path
) -> None:
    ask(inbox, "late", asked=NOW - timedelta(days=4), timeout="P3D", args={"amount": 1})
    ask(inbox, "soon", thread_id="order-2", timeout="PT1H", args={"amount": 2})
    ask(inbox, "later", thread_id="order-3", timeout="P2D", args={"amount": 3})
    text = alice.get("/").text
    positions = [text.index(f"/questions/{q}?") for q in ("late", "soon", "later", "warmup")]
    assert positions == sorted(positions)
    rows = text.split("<tr")
    late_row = next(r for r in rows if "/questions/late?" in r)
    assert 'class="row overdue"' in late_row
    assert "overdue</strong>" in late_row
    assert "overdue" not in next(r for r in rows if "/questions/soon?" in r)


def test_filters_by_tag_function_thread_and_text(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "a", thread_id="t-a", function="issue_refund", tags={"team": "finance"})
    ask(inbox, "b", thread_id="t-b", function="delete_user", tags={"team": "ops"})
    ask(inbox, "c", thread_id="t-c", function="issue_refund", args={"note": "needle-42"})

    def listed(**params: str) -> set[str]:
        page = alice.get("/api/questions", params=params).json()
        return {q["envelope"]["question_id"] for q in page["questions"]}

    assert listed(tag="team:finance") == {"a"}
    assert listed(function="delete_user") == {"b"}
    assert listed(thread="t-c") == {"c"}
    assert listed(q="needle-42") == {"c"}
    assert listed(q="100%_") == set()  # LIKE wildcards are literal
    assert "/questions/b?" in alice.get("/", params={"function": "delete_user"}).text
    bad = alice.get("/", params={"tag": "no-colon"})
    assert bad.status_code == 400
    assert "tag: expected key:value" in bad.text


def test_the_links_of_a_list_row_lead_to_its_question_thread_and_tag(
    alice: TestClient, inbox: Path
) -> None:
    ask(inbox, "a&b", thread_id="t/1 & 2", tags={"team": "R&D ops"})
    ask(inbox, "other", thread_id="t-9", tags={"team": "R"})
    text = alice.get("/").text
    row = next(r for r in text.split("<tr") if "t/1 &amp; 2</a>" in r)
    question, thread, tag = (html.unescape(h) for h in re.findall(r'href="([^"]+)"', row))
    assert "t/1 &amp; 2" in alice.get(question).text.split("<h1")[1]
    for link in (thread, tag):
        listed = alice.get(link).text
        assert "t/1 &amp; 2</a>" in listed, link
        assert "t-9</a>" not in listed, link


def test_keyset_pagination_walks_every_question_once(alice: TestClient, inbox: Path) -> None:
    for n in range(120):
        ask(inbox, f"q{n:03}", thread_id=f"t{n:03}", timeout=f"PT{(n % 7) + 1}H")
    seen: list[str] = []
    after = None
    while True:
        params = {"limit": "25"} | ({"after": after} if after else {})
        page = alice.get("/api/questions", params=params).json()
        seen += [q["envelope"]["question_id"] for q in page["questions"]]
        after = page["next_cursor"]
        if after is None:
            break
    assert sorted(seen) == sorted([f"q{n:03}" for n in range(120)] + ["warmup"])
    assert len(seen) == len(set(seen))
    html = alice.get("/").text
    assert 'rel="next"' in html
    assert alice.get("/api/questions", params={"after": "garbage"}).status_code == 400


def test_detail_shows_arguments_source_tags_deadline_default_and_thread(
    alice: TestClient, inbox: Path
) -> None:
    ask(
        inbox,
        "q1",
        args={"amount": 41000, "order": {"id": "order-4471", "lines": [1, 2]}},
        timeout="P3D",
        default={"action": "reject", "reason": "timeout"},
        tags={"approver_group": "finance"},
        correlation={"provider": "stripe", "id": "re_123"},
    )
    ask(inbox, "q0", function="notify_customer")
    text = alice.get("/questions/q1", params={"thread": "order-4471"}).text
    for part in (
        "issue_refund",
        "41000",
        "order-4471",
        "approver_group: finance",
        "stripe: re_123",
        "&#34;reason&#34;: &#34;timeout&#34;",
        'value="approve"',
        'value="reject"',
        "notify_customer",  # the thread's other question
    ):
        assert part in text, part
    assert "<h2>Arguments</h2>" in text
    assert "<h2>Actions</h2>" not in text


BATCH = {
    "actions": [
        {
            "name": "send_email",
            "args": {"to": "a@example.com", "copies": 1},
            "description": "Mail",
            "allowed_decisions": ["approve", "edit", "reject", "respond"],
        },
        {
            "name": "delete_file",
            "args": {"path": "/tmp/x"},
            "description": None,
            "allowed_decisions": ["approve", "reject"],
        },
    ]
}


def test_a_middleware_batch_is_shown_as_its_actions_with_a_decision_each(
    alice: TestClient, inbox: Path
) -> None:
    ask(inbox, "b1", question=BATCH, function="agent")
    text = alice.get("/questions/b1", params={"thread": "order-4471"}).text
    assert "Actions: one decision each" in text
    assert "send_email" in text
    assert "delete_file" in text
    assert "a@example.com" in text
    for index, decisions in [
        (0, ["approve", "edit", "reject", "respond"]),
        (1, ["approve", "reject"]),
    ]:
        offered = re.findall(rf'name="action\.{index}\.decision" value="(\w+)"', text)
        assert offered == decisions
    assert 'name="action.0.arg.to"' in text
    assert 'name="action.1.arg.path"' not in text, "delete_file does not allow edit"
    assert 'name="action"' not in text, "a batch has one send button, not one per action"


def test_batch_decisions_are_sent_as_one_answer(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "b1", question=BATCH, function="agent")
    response = answer_form(
        alice,
        "b1",
        "order-4471",
        **{
            "action.0.decision": "edit",
            "action.0.arg.to": "ceo@example.com",
            "action.0.arg.copies": "2",
            "action.0.message": "ignored with edit",
            "action.1.decision": "reject",
            "action.1.message": "keep the file",
        },
    )
    assert response.status_code == 303, response.text
    [message] = sent(inbox)
    assert message["answer"] == {
        "action": "reject",
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "ceo@example.com", "copies": 2},
                },
            },
            {"type": "reject", "message": "keep the file"},
        ],
    }


def test_a_batch_all_approved_is_recorded_as_approve(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "b1", question=BATCH, function="agent")
    fields = {"action.0.decision": "approve", "action.1.decision": "approve"}
    assert answer_form(alice, "b1", "order-4471", **fields).status_code == 303
    assert [m["answer"] for m in sent(inbox)] == [
        {"action": "approve", "decisions": [{"type": "approve"}, {"type": "approve"}]}
    ]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"action.0.decision": "approve"},
            "actions[1] (delete_file): choose a decision (approve, reject)",
        ),
        (
            {"action.0.decision": "approve", "action.1.decision": "edit"},
            "actions[1] (delete_file): decision &#39;edit&#39; is not allowed (allowed: approve, reject)",
        ),
        (
            {
                "action.0.decision": "approve",
                "action.0.arg.to": "x@example.com",
                "action.1.decision": "approve",
            },
            "actions[0] (send_email): the arguments were changed but the decision is &#39;approve&#39;",
        ),
        (
            {"action.0.decision": "respond", "action.1.decision": "approve"},
            "actions[0] (send_email): a respond decision needs the reply text (message)",
        ),
        (
            {
                "action.0.decision": "edit",
                "action.0.arg.copies": "two",
                "action.1.decision": "approve",
            },
            "actions[0].args.copies: expected JSON such as 1, got &#39;two&#39;",
        ),
    ],
)
def test_invalid_batch_decisions_are_refused_and_nothing_is_sent(
    alice: TestClient, inbox: Path, fields: dict[str, str], problem: str
) -> None:
    ask(inbox, "b1", question=BATCH, function="agent")
    response = answer_form(alice, "b1", "order-4471", **fields)
    assert response.status_code == 400
    assert f"Not sent: {problem}" in response.text
    assert sent(inbox) == []


def test_json_api_checks_batch_decisions_before_closing(client: TestClient, inbox: Path) -> None:
    ask(inbox, "b1", question=BATCH, function="agent")
    bearer = {"Authorization": f"Bearer {SECRET}"}
    url, thread = "/api/questions/b1/answer", {"thread": "order-4471"}
    plain = client.post(url, params=thread, headers=bearer, json={"action": "approve"})
    assert plain.status_code == 400
    assert plain.json()["error"].startswith("answer.decisions: a batch of 2 action(s)")
    short = {"action": "approve", "answer": {"decisions": [{"type": "approve"}]}}
    assert client.post(url, params=thread, headers=bearer, json=short).json() == {
        "error": "answer.decisions: expected 2 decision(s), one per action in order, got 1"
    }
    assert client.get("/api/questions/b1", params=thread, headers=bearer).json()["status"] == "open"
    good = {"action": "approve", "answer": {"decisions": [{"type": "approve"}] * 2}}
    assert client.post(url, params=thread, headers=bearer, json=good).status_code == 200
    assert [m["answer"]["decisions"] for m in sent(inbox)] == [[{"type": "approve"}] * 2]


def test_approve_with_edited_arguments_sends_them(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"order_id": "order-4471", "amount": 41000})
    response = answer_form(
        alice,
        "q1",
        "order-4471",
        action="approve",
        **{"arg.amount": "35000", "arg.order_id": "order-4471"},
    )
    assert response.status_code == 303
    assert "Answer sent." in alice.get(response.headers["location"]).text
    [message] = sent(inbox)
    assert message["answer"] == {
        "action": "approve",
        "args": {"order_id": "order-4471", "amount": 35000},
    }
    with SqliteQuestionStore(inbox) as store:
        [stored] = store.find("q1")
    assert (stored.status, stored.answered_by) == ("answered", "alice")


def test_a_text_argument_is_edited_as_plain_text(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"note": "refund", "code": "7"})
    answer_form(
        alice, "q1", "order-4471", action="approve", **{"arg.note": '"quoted"', "arg.code": "8"}
    )
    assert sent(inbox)[0]["answer"]["args"] == {"note": '"quoted"', "code": "8"}


def test_unchanged_arguments_send_a_plain_approve(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"amount": 41000})
    answer_form(alice, "q1", "order-4471", action="approve", **{"arg.amount": "41000"})
    assert sent(inbox)[0]["answer"] == {"action": "approve"}


@pytest.mark.parametrize(
    ("value", "error"),
    [("forty", "args.amount: expected JSON"), ('"41000"', "args.amount: expected a number")],
)
def test_invalid_edited_arguments_are_refused_and_nothing_is_sent(
    alice: TestClient, inbox: Path, value: str, error: str
) -> None:
    ask(inbox, "q1", args={"amount": 41000})
    response = answer_form(alice, "q1", "order-4471", action="approve", **{"arg.amount": value})
    assert response.status_code == 400
    assert error in response.text
    assert sent(inbox) == []


def test_reject_with_a_reason(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"amount": 41000})
    answer_form(alice, "q1", "order-4471", action="reject", reason="over budget")
    assert sent(inbox)[0]["answer"] == {"action": "reject", "reason": "over budget"}


def test_an_action_outside_allowed_actions_is_refused(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    response = answer_form(alice, "q1", "order-4471", action="escalate")
    assert response.status_code == 400
    assert "not one of the question&#39;s allowed_actions" in response.text
    assert sent(inbox) == []


def test_answered_by_is_the_identity_never_a_form_field(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    answer_form(alice, "q1", "order-4471", action="approve", by="mallory", answered_by="mallory")
    with SqliteQuestionStore(inbox) as store:
        assert store.find("q1")[0].answered_by == "alice"
    # The message says so too, for the host's wait.answered.
    assert sent(inbox)[0]["answered_by"] == "alice"


def test_an_answer_without_the_csrf_token_is_refused(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    response = alice.post(
        "/questions/q1/answer", params={"thread": "order-4471"}, data={"action": "approve"}
    )
    assert response.status_code == 403
    assert sent(inbox) == []


def test_two_people_answering_at_once_send_exactly_one_answer(inbox: Path) -> None:
    ask(inbox, "q1")
    clients = [make_client(inbox), make_client(inbox)]
    alice, bob = (next(c) for c in clients)
    login(alice, "alice")
    login(bob, "bob")
    pages = [c.get("/questions/q1", params={"thread": "order-4471"}) for c in (alice, bob)]
    posts = [
        c.post(
            "/questions/q1/answer",
            params={"thread": "order-4471"},
            data={"csrf": csrf_of(p.text), "action": action},
            follow_redirects=False,
        )
        for c, p, action in zip((alice, bob), pages, ("approve", "reject"), strict=True)
    ]
    assert [p.status_code for p in posts] == [303, 409]
    assert "Not sent: already answered by alice at 20" in posts[1].text
    assert [m["answer"] for m in sent(inbox)] == [{"action": "approve"}]
    for generator in clients:
        generator.close()


def test_history_lists_who_answered_when_and_what(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    answer_form(alice, "q1", "order-4471", action="reject", reason="no")
    text = alice.get("/history").text
    assert "answered" in text
    assert "alice" in text
    assert "&#34;reason&#34;: &#34;no&#34;" in text
    assert "/questions/warmup?" not in text  # still open


def test_envelope_content_is_escaped(alice: TestClient, inbox: Path) -> None:
    payload = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    ask(
        inbox,
        "x1",
        thread_id=payload,
        args={payload: payload, "nested": {"deep": [payload], payload: 1}},
        tags={"team": payload},
    )
    thread_page = alice.get("/threads/" + quote(payload))
    assert thread_page.status_code == 200
    pages = [
        alice.get("/").text,
        alice.get("/questions/x1", params={"thread": payload}).text,
        thread_page.text,
    ]
    for text in pages:
        assert "<script>alert" not in text
        assert "<img src=x" not in text
        parsed = Elements()
        parsed.feed(text)
        assert [t for t in parsed.tags if t == "img"] == []
        assert [a for a in parsed.attributes if a.startswith("on") or '"' in a] == []
        assert parsed.scripts == ["/static/inbox.js"]
    assert (
        "&lt;script&gt;alert(2)&lt;/script&gt;"
        in alice.get("/questions/x1", params={"thread": payload}).text
    )


def test_request_bodies_over_the_limit_are_refused(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    response = alice.post(
        "/questions/q1/answer",
        params={"thread": "order-4471"},
        content=b"a=" + b"x" * 70000,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413
    assert sent(inbox) == []


def test_proxy_identity_only_from_a_trusted_proxy(inbox: Path) -> None:
    ask(inbox, "q1")
    ask(inbox, "q2")
    auth = InboxAuth(trusted_proxies=["10.0.0.0/8"])
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        app = inbox_app(store, auth, entry=entry)
        proxy = TestClient(app, client=("10.1.2.3", 4000))
        headers = {"X-Forwarded-User": "carol"}
        page = proxy.get("/questions/q1", params={"thread": "order-4471"}, headers=headers)
        assert "carol" in page.text
        proxy.post(
            "/questions/q1/answer",
            params={"thread": "order-4471"},
            headers=headers,
            data={"csrf": csrf_of(page.text), "action": "approve"},
        )
        assert store.find("q1")[0].answered_by == "carol"
        email = proxy.get("/", headers={"X-Forwarded-Email": "dan@example.com"})
        assert "dan@example.com" in email.text
        # Anyone else's headers are ignored: a login is needed.
        stranger = TestClient(app, client=("192.0.2.9", 4000))
        assert stranger.get("/", headers=headers, follow_redirects=False).status_code == 303
        assert stranger.get("/api/questions", headers=headers).status_code == 401


def test_auth_needs_a_secret_or_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_WAIT_INBOX_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="set AGENT_WAIT_INBOX_TOKEN"):
        InboxAuth()
    with pytest.raises(ConfigError, match="trusted_proxies: expected an address"):
        InboxAuth(token="x", trusted_proxies=["proxy.local"])
    monkeypatch.setenv("MY_SECRET", "s3")
    assert InboxAuth(token_env="MY_SECRET").check_token("s3")
    assert "s3" not in repr(InboxAuth(token_env="MY_SECRET"))


def test_json_api_list_get_answer_with_a_bearer_token(client: TestClient, inbox: Path) -> None:
    ask(inbox, "q1", args={"amount": 5})
    bearer = {"Authorization": f"Bearer {SECRET}"}
    listed = client.get("/api/questions", headers=bearer).json()
    assert "q1" in {q["envelope"]["question_id"] for q in listed["questions"]}
    one = client.get("/api/questions/q1", params={"thread": "order-4471"}, headers=bearer)
    assert one.json()["envelope"]["question"]["args"] == {"amount": 5}
    done = client.post(
        "/api/questions/q1/answer",
        params={"thread": "order-4471"},
        headers=bearer,
        json={"action": "approve", "answer": {"args": {"amount": 4}}},
    )
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["answered_by"]) == ("answered", "api")
    again = client.post(
        "/api/questions/q1/answer",
        params={"thread": "order-4471"},
        headers=bearer,
        json={"action": "reject"},
    )
    assert again.status_code == 409
    assert again.json()["question"]["answered_by"] == "api"
    assert [m["answer"] for m in sent(inbox)] == [{"args": {"amount": 4}, "action": "approve"}]
    wrong = client.get("/api/questions", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


def test_json_api_names_a_bad_limit_status_or_state(client: TestClient) -> None:
    bearer = {"Authorization": f"Bearer {SECRET}"}
    states = "expected one of overdue, answered, expired, cancelled"
    for params, message in [
        ({"limit": "0"}, "limit: expected a whole number from 1 to 500, got '0'"),
        ({"limit": "²"}, "limit: expected a whole number from 1 to 500, got '²'"),
        ({"status": "done"}, "status: expected open or closed, got 'done'"),
        # The document's enum, exactly: an empty or padded state is refused, not read as none.
        ({"state": ""}, f"state: {states}, got ''"),
        ({"state": "overdue "}, f"state: {states}, got 'overdue '"),
    ]:
        response = client.get("/api/questions", params=params, headers=bearer)
        assert (response.status_code, response.json()) == (400, {"error": message})


class _DownEntry(SqliteEntry):
    """Fault injection: an entry point whose every send fails, as a broken queue's would."""

    def send(self, message: Mapping[str, Any]) -> None:
        raise ConnectionRefusedError("the queue is down")


def test_an_entry_point_failure_is_reported_and_the_question_stays_open(inbox: Path) -> None:
    ask(inbox, "q1")
    store = SqliteQuestionStore(inbox)
    with (
        _DownEntry(inbox) as entry,
        app_client(store, entry) as client,
    ):
        response = client.post(
            "/api/questions/q1/answer",
            headers={"Authorization": f"Bearer {SECRET}"},
            json={"action": "approve"},
        )
        assert response.status_code == 502
        assert response.json() == {
            "error": "not sent: the entry point failed (ConnectionRefusedError); try again"
        }
        login(client)
        page = answer_form(client, "q1", "order-4471", action="reject")
        assert page.status_code == 502
        assert "the entry point failed (ConnectionRefusedError)" in page.text
        assert "the queue is down" not in page.text
    assert store.find("q1")[0].is_open
    store.close()


def test_json_api_with_a_session_needs_the_csrf_header(alice: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    response = alice.post(
        "/api/questions/q1/answer", params={"thread": "order-4471"}, json={"action": "approve"}
    )
    assert response.status_code == 403
    assert sent(inbox) == []


def test_json_api_names_an_unknown_query_parameter(client: TestClient, inbox: Path) -> None:
    ask(inbox, "q1")
    bearer = {"Authorization": f"Bearer {SECRET}"}
    listed = client.get("/api/questions", params={"fuction": "refund"}, headers=bearer)
    assert listed.status_code == 400
    assert "'fuction': not a query parameter" in listed.json()["error"]
    got = client.get("/api/questions/q1", params={"thread": "order-4471", "x": "1"}, headers=bearer)
    assert got.status_code == 400
    assert client.get(
        "/api/questions/q1", params={"thread": "order-4471"}, headers=bearer
    ).is_success


def test_openapi_document_names_list_get_and_answer(client: TestClient) -> None:
    document = client.get("/api/openapi.json").json()
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == {
        "/api/questions",
        "/api/questions/{question_id}",
        "/api/questions/{question_id}/answer",
        "/api/threads/{thread_id}/answers",
    }


def test_events_announce_a_new_question(alice: TestClient, inbox: Path) -> None:
    with alice.stream("GET", "/events") as stream:
        lines = stream.iter_lines()
        assert next(lines).startswith("retry:")
        ask(inbox, "fresh")
        for line in lines:
            if line == "event: changed":
                break


def test_a_question_asked_before_the_stream_opens_still_reaches_the_page(
    alice: TestClient, inbox: Path
) -> None:
    page = alice.get("/")
    marker = re.search(r'data-marker="([0-9a-f]+)"', page.text)
    assert marker is not None
    ask(inbox, "while-loading")
    with alice.stream("GET", "/events", params={"since": marker.group(1)}) as stream:
        lines = stream.iter_lines()
        assert next(lines).startswith("retry:")
        assert next(line for line in lines if line and not line.startswith(":")) == (
            "event: changed"
        )


def test_no_auth_serves_loopback_only(inbox: Path) -> None:
    ask(inbox, "q1")
    auth = InboxAuth(no_auth=True, local_user="me")

    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        app = inbox_app(store, auth, entry=entry)
        local = TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 5000))
        page = local.get("/questions/q1", params={"thread": "order-4471"})
        assert page.status_code == 200
        local.post(
            "/questions/q1/answer",
            params={"thread": "order-4471"},
            data={"csrf": csrf_of(page.text), "action": "approve"},
        )
        assert store.find("q1")[0].answered_by == "me"
        remote = TestClient(app, client=("192.0.2.7", 5000))
        assert remote.get("/").status_code == 403
        # DNS rebinding: a loopback peer, but the page was loaded under another name.
        rebound = local.get("/api/questions", headers={"Host": "attacker.example:8765"})
        assert rebound.status_code == 403
        assert local.get("/", headers={"Host": "localhost:8765"}).status_code == 200


def test_mounted_under_a_path_every_link_keeps_the_prefix(inbox: Path) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    ask(inbox, "q1", args={"amount": 3})
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        inner = inbox_app(store, InboxAuth(token=SECRET), entry=entry)
        client = TestClient(Starlette(routes=[Mount("/approvals", inner)]))
        first = client.get("/approvals/", follow_redirects=False)
        assert first.headers["location"].startswith("/approvals/login?next=%2Fapprovals%2F")
        page = client.get(first.headers["location"])
        assert 'src="/approvals/static/inbox.js"' in page.text
        assert client.get("/approvals/static/inbox.js").status_code == 200
        logged_in = client.post(
            "/approvals/login",
            data={
                "csrf": csrf_of(page.text),
                "name": "alice",
                "token": SECRET,
                "next": "/approvals/",
            },
            follow_redirects=False,
        )
        assert logged_in.headers["location"] == "/approvals/"
        listing = client.get("/approvals/").text
        assert 'href="/approvals/questions/q1?thread=order-4471"' in listing
        detail = client.get("/approvals/questions/q1", params={"thread": "order-4471"})
        assert 'action="/approvals/questions/q1/answer?thread=order-4471"' in detail.text
        done = client.post(
            "/approvals/questions/q1/answer",
            params={"thread": "order-4471"},
            data={"csrf": csrf_of(detail.text), "action": "approve"},
            follow_redirects=False,
        )
        assert done.headers["location"].startswith("/approvals/questions/q1?")
        ask(inbox, "q2", args={"amount": 4})
        thread = client.get("/approvals/threads/order-4471")
        assert 'action="/approvals/threads/order-4471"' in thread.text
        together = client.post(
            "/approvals/threads/order-4471",
            data={"csrf": csrf_of(thread.text), "q.0.id": "q2", "q.0.send": "action:approve"},
            follow_redirects=False,
        )
        assert together.headers["location"] == "/approvals/threads/order-4471?sent=q2"
        for text in (listing, detail.text, thread.text):
            links = re.findall(r'(?:href|action|src)="(/[^"]*)"', text)
            assert links
            assert [link for link in links if not link.startswith("/approvals/")] == []
    assert [(m["question_id"], m["answer"]) for m in all_sent(inbox)] == [
        ("q1", {"action": "approve"}),
        ("q2", {"action": "approve"}),
    ]


def test_a_session_cookie_copied_before_logout_is_refused_after_it(
    alice: TestClient, inbox: Path
) -> None:
    copied = dict(alice.cookies)
    page = alice.get("/")
    assert page.status_code == 200
    out = alice.post("/logout", data={"csrf": csrf_of(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    thief = TestClient(alice.app, base_url="http://127.0.0.1", cookies=copied)
    assert thief.get("/", follow_redirects=False).status_code == 303
    assert thief.get("/api/questions").status_code == 401
    # Logging in again starts a new session, which works.
    login(alice)
    assert alice.get("/api/questions").status_code == 200


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"tag": "team\x00x:finance"}, "tag: a key cannot hold a NUL character"),
        ({"q": "x" * 60000}, "q: at most 1000 characters, got 60000"),
    ],
)
def test_a_filter_the_store_cannot_take_is_refused_400_naming_it(
    alice: TestClient, params: dict[str, str], named: str
) -> None:
    page = alice.get("/", params=params)
    assert page.status_code == 400
    assert html.escape(named, quote=True) in page.text
    history = alice.get("/history", params=params)
    assert history.status_code == 400
    api = alice.get("/api/questions", params=params)
    assert api.status_code == 400
    assert api.json()["error"].startswith(named)
