"""The inbox's history (answered and expired: who, when, what) over the PostgreSQL and DynamoDB stores.

Each store runs on its real server: the machine's PostgreSQL, and a moto server process over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_wait.core import (
    BaseAnnounce,
    Question,
    QuestionStore,
    SqliteEntry,
    WaitPolicy,
    publish,
    question_store,
)
from agent_wait.core._policy import UNSTATED
from agent_wait.host import sweep
from tests.aws_moto import Aws, aws, moto_server  # noqa: F401 - fixtures, registered by import
from tests.inbox.conftest import AGENT_WAIT, SECRET, Server, app_client, csrf_of, login, sent
from tests.serving import all_sent

pytestmark = pytest.mark.integration

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
BEARER = {"Authorization": f"Bearer {SECRET}"}
# A store, and an announcer writing the questions it holds.
Backend = tuple[QuestionStore, Callable[[], BaseAnnounce]]


@pytest.fixture
def postgres() -> Iterator[Backend]:
    # Sibling distributions: present in the workspace run, absent when the inbox is tested alone.
    module = pytest.importorskip("agent_wait.postgres", reason="needs agent-wait-postgres")
    psycopg = pytest.importorskip("psycopg")
    sql = pytest.importorskip("psycopg.sql")
    table = f"agent_wait_history_{uuid.uuid4().hex[:12]}"
    store = module.PostgresQuestionStore(POSTGRES_URL, table=table)
    yield (
        store,
        lambda: module.PostgresAnnounce(POSTGRES_URL, table=table, channel=None, create_table=True),
    )
    store.close()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


@pytest.fixture
def dynamodb(aws: Aws) -> Backend:  # noqa: F811 - the fixture imported above
    module = pytest.importorskip("agent_wait.dynamodb", reason="needs agent-wait-dynamodb")
    module.create_table(aws.client("dynamodb"), "history")
    table = aws.session.resource("dynamodb", endpoint_url=aws.url).Table("history")
    return module.DynamoDbQuestionStore(table), lambda: module.DynamoDbAnnounce(
        "history", **aws.options
    )


@pytest.fixture(params=["postgres", "dynamodb"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(request.param)


def ask(announcer: BaseAnnounce, question_id: str, function: str, **policy: Any) -> None:
    publish(
        [
            Question(
                question_id=question_id,
                question={"function": function, "args": {"amount": len(question_id)}},
                policy=WaitPolicy(**policy),
            )
        ],
        f"thread-{question_id}",
        announcer,
        strict=True,
    )


def ids(page: dict[str, Any]) -> list[str]:
    return [q["envelope"]["question_id"] for q in page["questions"]]


def test_history_shows_who_answered_or_expired_what_and_when(
    backend: Backend, tmp_path: Path
) -> None:
    store, announcer = backend
    publisher = announcer()
    ask(publisher, "refund1", "issue_refund")
    ask(publisher, "refund2", "issue_refund")
    ask(publisher, "delete1", "delete_user", timeout="PT1H", default={"action": "reject"})
    ask(publisher, "still-open", "issue_refund")
    publisher.close()
    path = tmp_path / "entry.sqlite3"
    with SqliteEntry(path) as entry:
        client = app_client(store, entry)
        empty = client.get("/history", follow_redirects=True)
        login(client, "alice")
        assert "Nothing answered yet." in client.get("/history").text
        # alice approves in the page; a bot rejects through the API; the sweeper expires one.
        detail = client.get("/questions/refund1", params={"thread": "thread-refund1"})
        client.post(
            "/questions/refund1/answer",
            params={"thread": "thread-refund1"},
            data={"csrf": csrf_of(detail.text), "action": "approve", "arg.amount": "5"},
        )
        rejected = client.post(
            "/api/questions/refund2/answer",
            headers=BEARER,
            json={"action": "reject", "answer": {"reason": "duplicate"}},
        )
        assert rejected.status_code == 200, rejected.text
        report = sweep(store=store, entry=entry, now="2099-01-01T00:00:00Z")
        assert [q.envelope.question_id for q in report.expired] == ["delete1"]

        page = client.get("/history").text
        assert "This question store lists open questions only." not in page
        rows = re.findall(
            r'<span class="status (\w+)">\w+</span> by ([^<]*)</td>\s*'
            r'<td data-label="Closed"><time datetime="([^"]+)"',
            page,
        )
        # Most recently closed first: the sweep ran "in 2099"; refund2 was answered after
        # refund1 (or in the same second, and then its thread sorts first, descending).
        assert [(status, by) for status, by, _ in rows] == [
            ("expired", "sweeper"),
            ("answered", "api (api-token)"),
            ("answered", "alice (shared-secret)"),
        ]
        assert rows[0][2] == "2099-01-01T00:00:00Z"
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", when) for _, _, when in rows)
        assert "still-open" not in page
        # What was sent, as JSON (PostgreSQL's JSONB keeps no key order).
        assert "&#34;args&#34;: {&#34;amount&#34;: 5}" in page
        assert "&#34;action&#34;: &#34;approve&#34;" in page
        assert "duplicate" in page

        everything = client.get(
            "/api/questions", params={"status": "closed", "limit": "1"}, headers=BEARER
        ).json()
        walked = ids(everything)
        while everything["next_cursor"]:
            everything = client.get(
                "/api/questions",
                params={"status": "closed", "limit": "1", "after": everything["next_cursor"]},
                headers=BEARER,
            ).json()
            walked += ids(everything)
        assert walked == ["delete1", "refund2", "refund1"]
        only = client.get(
            "/api/questions",
            params={"status": "closed", "function": "issue_refund"},
            headers=BEARER,
        ).json()
        assert sorted(ids(only)) == ["refund1", "refund2"]
        answers = {q["envelope"]["question_id"]: q for q in only["questions"]}
        assert answers["refund2"]["answered_by"] == "api"
        assert answers["refund2"]["answer"] == {"action": "reject", "reason": "duplicate"}
    assert empty.url.path == "/login"
    assert len(sent(path)) == 3


def test_question_page_lists_the_threads_closed_questions_too(backend: Backend) -> None:
    store, announcer = backend
    publisher = announcer()
    for question_id in ("first", "second", "third"):
        publish(
            [Question(question_id=question_id, question={"function": f"step_{question_id}"})],
            "shared-thread",
            publisher,
            strict=True,
        )
    ask(publisher, "elsewhere", "issue_refund")
    publisher.close()
    with SqliteEntry(":memory:") as entry:
        client = app_client(store, entry)
        login(client, "alice")
        for question_id, action in (("first", "approve"), ("elsewhere", "reject")):
            page = client.get(f"/questions/{question_id}")
            client.post(
                f"/questions/{question_id}/answer",
                data={"csrf": csrf_of(page.text), "action": action},
            )
        page = client.get("/questions/third", params={"thread": "shared-thread"}).text
    others = re.findall(
        r"<li><a href=\"/questions/(\w+)\?thread=[^\"]*\">[^<]*</a>: ([^<]*)</li>", page
    )
    assert others == [("first", "answered by alice (shared-secret)"), ("second", "open")]


def test_serve_store_names_a_configured_postgres_announcer() -> None:
    module = pytest.importorskip("agent_wait.postgres", reason="needs agent-wait-postgres")
    psycopg = pytest.importorskip("psycopg")
    sql = pytest.importorskip("psycopg.sql")
    table = f"agent_wait_served_{uuid.uuid4().hex[:12]}"
    options = {"url": POSTGRES_URL, "table": table}
    publisher = module.PostgresAnnounce(**options, channel=None, create_table=True)
    ask(publisher, "over-postgres", "issue_refund")
    publisher.close()
    configured = json.dumps([{"use": "postgres", **options}])
    try:
        server = Server(
            "--store",
            "postgres",
            env={"AGENT_WAIT_ANNOUNCE": configured, "AGENT_WAIT_INBOX_TOKEN": SECRET},
        )
        try:
            listed = httpx.get(f"{server.url}/api/questions", headers=BEARER).json()
            assert [q["envelope"]["question_id"] for q in listed["questions"]] == ["over-postgres"]
            answered = httpx.post(
                f"{server.url}/api/questions/over-postgres/answer",
                headers=BEARER,
                json={"action": "approve"},
            )
            assert answered.status_code == 200, answered.text
        finally:
            server.stop()
        with closing(module.PostgresQuestionStore(POSTGRES_URL, table=table)) as store:
            [closed] = store.find("over-postgres")
        assert (closed.status, closed.answered_by) == ("answered", "api")
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


def test_serve_store_refuses_a_name_nothing_configures(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENT_WAIT_INBOX_TOKEN": SECRET,
        "AGENT_WAIT_ANNOUNCE": '[{"use": "sqlite"}]',
    }
    result = subprocess.run(
        [AGENT_WAIT, "inbox", "serve", "--store", "dynamodb"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 2
    assert "store: no 'dynamodb' announcer is configured" in result.stderr


def test_dynamodb_store_from_the_announcers_options(aws: Aws) -> None:  # noqa: F811
    module = pytest.importorskip("agent_wait.dynamodb", reason="needs agent-wait-dynamodb")
    module.create_table(aws.client("dynamodb"), "configured")
    ask(module.DynamoDbAnnounce("configured", **aws.options), "over-dynamodb", "issue_refund")
    store = question_store("dynamodb", table_name="configured", **aws.options)
    assert [q.envelope.question_id for q in store.open_questions()] == ["over-dynamodb"]


def test_the_thread_page_answers_several_questions_in_one_message(
    backend: Backend, tmp_path: Path
) -> None:
    store, announcer = backend
    publisher = announcer()
    thread = "order/4471"  # a slash: the thread travels in the page's path
    publish(
        [
            Question(question_id="refund", question={"function": "issue_refund", "args": {}}),
            Question(question_id="notify", question={"function": "notify_customer"}),
            Question(question_id="card", question="Which card?", policy=UNSTATED),
        ],
        thread,
        publisher,
        strict=True,
    )
    ask(publisher, "elsewhere", "issue_refund")
    publisher.close()
    path = tmp_path / "entry.sqlite3"
    with SqliteEntry(path) as entry:
        client = app_client(store, entry)
        login(client, "alice")
        page = client.get(f"/threads/{thread}")
        assert page.status_code == 200, page.text
        shown = re.findall(r'name="q\.(\d+)\.id" value="([^"]+)"', page.text)
        assert sorted(q for _, q in shown) == ["card", "notify", "refund"]
        index = {q: i for i, q in shown}
        sent_form = client.post(
            f"/threads/{thread}",
            data={
                "csrf": csrf_of(page.text),
                **{f"q.{i}.id": q for i, q in shown},
                f"q.{index['refund']}.send": "action:approve",
                f"q.{index['notify']}.send": "",  # left open
                f"q.{index['card']}.send": "whole",
                f"q.{index['card']}.whole": "visa",
                f"q.{index['card']}.whole_as": "text",
            },
            follow_redirects=False,
        )
        assert sent_form.status_code == 303, sent_form.text
        after = client.get(sent_form.headers["location"]).text
        assert "Sent 2 answers in one message: the run resumes once." in after
        assert re.findall(r'name="q\.\d+\.id" value="([^"]+)"', after) == ["notify"]
        # The last one through the JSON API, as a bot.
        by_api = client.post(
            f"/api/threads/{thread}/answers",
            headers=BEARER,
            json={"answers": [{"question_id": "notify", "action": "reject"}]},
        )
        assert by_api.status_code == 200, by_api.text
    [together, alone] = all_sent(path)
    first = together["question_id"]
    assert {first, *(m["question_id"] for m in together["more_answers"])} == {"refund", "card"}
    answers = {first: together["answer"]} | {
        m["question_id"]: m["answer"] for m in together["more_answers"]
    }
    assert answers == {"refund": {"action": "approve"}, "card": "visa"}
    assert (together["thread_id"], together["answered_by"]) == (thread, "alice")
    assert (alone["question_id"], alone["answer"], alone["answered_by"]) == (
        "notify",
        {"action": "reject"},
        "api",
    )
    closed = {i: store.find(i, thread)[0] for i in ("refund", "card", "notify")}
    assert {i: (q.status, q.answered_by) for i, q in closed.items()} == {
        "refund": ("answered", "alice"),
        "card": ("answered", "alice"),
        "notify": ("answered", "api"),
    }
    [other] = store.open_questions()
    assert other.envelope.question_id == "elsewhere"
