"""A question agent-wait did not ask gets an answer box: text or JSON, checked against its schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from agent_wait.core import Question, SqliteAnnounce, SqliteEntry, SqliteQuestionStore, publish
from agent_wait.core._policy import UNSTATED
from agent_wait.inbox import InboxAuth, inbox_app
from tests.inbox.conftest import SECRET, login, sent
from tests.inbox.test_app import Elements, answer_form

CARD = {
    "type": "object",
    "properties": {"choice": {"enum": ["visa", "amex"]}},
    "required": ["choice"],
}


def ask_foreign(
    path: Path, question_id: str, question: Any, thread_id: str = "order-4471", **fields: Any
) -> None:
    """As a bare interrupt is published: no allowed actions stated, no source."""
    publish(
        [Question(question_id=question_id, question=question, policy=UNSTATED, **fields)],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
    )


def page_of(client: TestClient, question_id: str) -> tuple[str, Elements]:
    page = client.get(f"/questions/{question_id}", params={"thread": "order-4471"})
    assert page.status_code == 200, page.text
    elements = Elements()
    elements.feed(page.text)
    return page.text, elements


def test_a_foreign_question_gets_an_answer_box_instead_of_buttons(
    alice: TestClient, inbox: Path
) -> None:
    ask_foreign(inbox, "f1", "Proceed with the refund? (y/n)")
    html, elements = page_of(alice, "f1")
    assert "Proceed with the refund? (y/n)" in html
    assert 'name="whole"' in html
    assert 'name="action"' not in html
    assert "textarea" in elements.tags


def test_a_text_answer_is_sent_as_a_string(alice: TestClient, inbox: Path) -> None:
    ask_foreign(inbox, "f1", "Proceed? (y/n)")
    done = answer_form(alice, "f1", "order-4471", whole="y", whole_as="text", send="whole")
    assert done.status_code == 303, done.text
    assert [m["answer"] for m in sent(inbox)] == ["y"]
    with SqliteQuestionStore(inbox) as store:
        [closed] = store.find("f1")
    assert (closed.answer, closed.answered_by) == ("y", "alice")


def test_a_json_answer_is_sent_as_the_value_it_parses_to(alice: TestClient, inbox: Path) -> None:
    ask_foreign(inbox, "f1", [{"action_request": {"action": "send", "args": {}}}])
    value = '[{"type": "accept", "args": null}]'
    done = answer_form(alice, "f1", "order-4471", whole=value, whole_as="json", send="whole")
    assert done.status_code == 303, done.text
    assert [m["answer"] for m in sent(inbox)] == [[{"type": "accept", "args": None}]]


def test_invalid_json_and_an_empty_answer_are_refused_and_the_text_is_kept(
    alice: TestClient, inbox: Path
) -> None:
    ask_foreign(inbox, "f1", "Which card?")
    bad = answer_form(alice, "f1", "order-4471", whole='{"choice": ', whole_as="json", send="whole")
    assert bad.status_code == 400
    assert "Not sent: answer: not valid JSON" in bad.text
    assert "{&#34;choice&#34;: </textarea>" in bad.text
    empty = answer_form(alice, "f1", "order-4471", whole="  ", whole_as="text", send="whole")
    assert empty.status_code == 400
    assert "Not sent: answer: empty" in empty.text
    assert sent(inbox) == []


def test_the_schema_is_shown_and_an_answer_it_refuses_is_not_sent(
    alice: TestClient, inbox: Path
) -> None:
    ask_foreign(inbox, "f1", "Which card?", answer_schema=CARD)
    html, _ = page_of(alice, "f1")
    assert "answer schema" in html.lower()
    assert "amex" in html
    assert 'value="json" checked' in html
    refused = answer_form(
        alice, "f1", "order-4471", whole='{"choice": "diners"}', whole_as="json", send="whole"
    )
    assert refused.status_code == 400
    assert "answer.choice: &#39;diners&#39; is not one of" in refused.text
    assert sent(inbox) == []
    with SqliteQuestionStore(inbox) as store:
        assert store.find("f1")[0].is_open
    done = answer_form(
        alice, "f1", "order-4471", whole='{"choice": "amex"}', whole_as="json", send="whole"
    )
    assert done.status_code == 303, done.text
    assert [m["answer"] for m in sent(inbox)] == [{"choice": "amex"}]


def test_a_question_with_actions_and_a_schema_gets_both(alice: TestClient, inbox: Path) -> None:
    # An Agent Inbox request: its config maps to allowed actions, its answer shape to a schema.
    publish(
        [
            Question(
                question_id="f1",
                question={"action": "send"},
                answer_schema={"type": "array"},
            )
        ],
        "order-4471",
        SqliteAnnounce(inbox),
        strict=True,
    )
    html, _ = page_of(alice, "f1")
    assert 'name="whole"' in html
    assert 'name="action"' in html
    refused = answer_form(alice, "f1", "order-4471", action="approve")
    assert refused.status_code == 400
    assert (
        "answer: {&#39;action&#39;: &#39;approve&#39;} is not of type &#39;array&#39;"
        in refused.text
    )


def test_json_api_takes_a_whole_answer_and_checks_it(client: TestClient, inbox: Path) -> None:
    ask_foreign(inbox, "f1", "Which card?", answer_schema=CARD)
    ask_foreign(inbox, "f2", "Proceed?", thread_id="order-4472")
    bearer = {"Authorization": f"Bearer {SECRET}"}
    url = "/api/questions/{}/answer"
    refused = client.post(
        url.format("f1"),
        params={"thread": "order-4471"},
        headers=bearer,
        json={"answer": {"choice": "diners"}},
    )
    assert refused.status_code == 400
    assert "answer.choice: 'diners' is not one of" in refused.json()["error"]
    done = client.post(
        url.format("f1"),
        params={"thread": "order-4471"},
        headers=bearer,
        json={"answer": {"choice": "visa"}},
    )
    assert done.status_code == 200, done.text
    assert done.json()["answer"] == {"choice": "visa"}
    nothing = client.post(url.format("f2"), headers=bearer, json={})
    assert nothing.status_code == 400
    assert 'or {"answer": ...} (any JSON but null)' in nothing.json()["error"]
    text = client.post(url.format("f2"), headers=bearer, json={"answer": "y"})
    assert text.status_code == 200, text.text
    assert sent(inbox) == [
        {
            "thread_id": "order-4471",
            "question_id": "f1",
            "answer": {"choice": "visa"},
            "answered_by": "api",
            "identity_source": "api-token",
        },
        {
            "thread_id": "order-4472",
            "question_id": "f2",
            "answer": "y",
            "answered_by": "api",
            "identity_source": "api-token",
        },
    ]


def test_without_an_entry_point_answers_follow_the_questions_reply_to(
    inbox: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "agent.sqlite3"
    with SqliteEntry(agent) as where:
        reply_to = where.reply_to()
    publish(
        [Question(question_id="f1", question="Proceed?", policy=UNSTATED)],
        "order-4471",
        SqliteAnnounce(inbox),
        strict=True,
        reply_to=reply_to,
    )
    with SqliteQuestionStore(inbox) as store:
        app = inbox_app(store, InboxAuth(token=SECRET), poll_interval=0.05)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            login(client)
            done = answer_form(client, "f1", "order-4471", whole="y", whole_as="text", send="whole")
            assert done.status_code == 303, done.text
    assert sent(agent) == [
        {
            "thread_id": "order-4471",
            "question_id": "f1",
            "answer": "y",
            "answered_by": "alice",
            "identity_source": "shared-secret",
        }
    ]
    assert sent(inbox) == []
