"""Several open questions of one thread answered in one message: the JSON API and the thread page."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from httpx import Response
from starlette.testclient import TestClient

import agent_wait.host as host
from agent_wait.core import (
    QuestionStatus,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    Transition,
)
from tests.inbox.conftest import SECRET, app_client, ask, csrf_of
from tests.inbox.test_whole_answers import ask_foreign
from tests.serving import all_sent, serving, until

BEARER = {"Authorization": f"Bearer {SECRET}"}
THREAD = "order-4471"
CARD = {
    "type": "object",
    "properties": {"choice": {"enum": ["visa", "amex"]}},
    "required": ["choice"],
}
BATCH = {
    "actions": [
        {
            "name": "delete_file",
            "args": {"path": "/tmp/x"},
            "description": None,
            "allowed_decisions": ["approve", "reject"],
        }
    ]
}


def three(inbox: Path) -> None:
    """A refund, a notification and a foreign card prompt with a schema, all open in one thread."""
    ask(inbox, "q1", args={"order_id": THREAD, "amount": 41000})
    ask(inbox, "q2", function="notify_customer", args={"order_id": THREAD})
    ask_foreign(inbox, "q3", "Which card?", answer_schema=CARD)


def answer_elsewhere(inbox: Path, question_id: str, action: str) -> None:
    """Bob answers, from another inbox page or the command line."""
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        host.answer(question_id, action, by="bob", store=store, entry=entry)


def post_answers(client: TestClient, body: Any, thread: str = THREAD) -> Response:
    return client.post(f"/api/threads/{thread}/answers", headers=BEARER, json=body)


def approve(client: TestClient, *question_ids: str) -> Response:
    """Approve each of ``question_ids`` of THREAD, in one message."""
    answers = [{"question_id": q, "action": "approve"} for q in question_ids]
    return post_answers(client, {"answers": answers})


def statuses(inbox: Path, *ids: str) -> list[str]:
    with SqliteQuestionStore(inbox) as store:
        return [store.find(i, THREAD)[0].status for i in ids]


# --- the JSON API ------------------------------------------------------------------------


def test_the_api_answers_several_questions_in_one_message(client: TestClient, inbox: Path) -> None:
    three(inbox)
    response = post_answers(
        client,
        {
            "answers": [
                {"question_id": "q1", "action": "approve", "answer": {"args": {"amount": 35000}}},
                {"question_id": "q3", "answer": {"choice": "amex"}},
            ]
        },
    )
    assert response.status_code == 200, response.text
    answered = response.json()["questions"]
    assert [q["envelope"]["question_id"] for q in answered] == ["q1", "q3"]
    assert {(q["status"], q["answered_by"]) for q in answered} == {("answered", "api")}
    # One message: the first answer, the other in more_answers.
    assert all_sent(inbox) == [
        {
            "thread_id": THREAD,
            "question_id": "q1",
            "answer": {"args": {"amount": 35000}, "action": "approve"},
            # The bearer token's identity: who answered, for the host's wait.answered.
            "answered_by": "api",
            "identity_source": "api-token",
            "more_answers": [{"question_id": "q3", "answer": {"choice": "amex"}}],
        }
    ]
    assert statuses(inbox, "q1", "q2", "q3") == ["answered", "open", "answered"]


def test_a_question_answered_elsewhere_first_sends_nothing(client: TestClient, inbox: Path) -> None:
    three(inbox)
    answer_elsewhere(inbox, "q2", "reject")
    response = approve(client, "q1", "q2")
    assert response.status_code == 409
    body = response.json()
    assert re.fullmatch(
        r"question q2: already answered by bob at \S+Z; nothing sent", body["error"]
    ), body
    assert body["question_id"] == "q2"
    assert (body["question"]["answered_by"], body["question"]["answer"]) == (
        "bob",
        {"action": "reject"},
    )
    assert [m["answer"] for m in all_sent(inbox)] == [{"action": "reject"}]  # bob's only
    assert statuses(inbox, "q1", "q2") == ["open", "answered"]


class RacingStore(SqliteQuestionStore):
    """Fault injection: bob answers q2 at the moment the inbox closes q1, after its checks passed.

    A real race, made certain: the inbox read both questions open, then loses q2's
    compare-and-set while q1 is already recorded closed.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.inbox = path
        self.raced = False

    def begin_send(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any,
        message: dict[str, Any],
        at: datetime | None = None,
    ) -> Transition:
        won = super().begin_send(
            thread_id, question_id, status, by=by, answer=answer, message=message, at=at
        )
        if question_id == "q1" and not self.raced:
            self.raced = True
            answer_elsewhere(self.inbox, "q2", "reject")
        return won


def test_a_race_lost_while_closing_reopens_the_others_and_sends_nothing(inbox: Path) -> None:
    three(inbox)
    store = RacingStore(inbox)
    with (
        SqliteEntry(inbox) as entry,
        app_client(store, entry) as client,
    ):
        response = approve(client, "q1", "q2")
    store.close()
    assert store.raced
    assert response.status_code == 409, response.text
    assert response.json()["error"].startswith("question q2: already answered by bob at ")
    # q1 was recorded closed for a moment; it is open again and its answer never left.
    assert statuses(inbox, "q1", "q2") == ["open", "answered"]
    assert [m["answer"] for m in all_sent(inbox)] == [{"action": "reject"}]


@pytest.mark.parametrize(
    ("answers", "status", "error"),
    [
        (
            [
                {"question_id": "q1", "action": "approve"},
                {"question_id": "q2", "action": "escalate"},
            ],
            400,
            "question q2: answer.action: 'escalate' is not one of the question's allowed_actions "
            """['approve', 'reject']; a valid answer: {"action": "approve"}; nothing sent""",
        ),
        (
            [{"question_id": "q1", "action": "approve", "answer": {"args": {"amout": 5}}}],
            400,
            "question q1: answer.args.amout: the question has no argument named 'amout'; "
            "nothing sent",
        ),
        (
            [{"question_id": "q1", "action": "approve", "answer": {"args": {"amount": "lots"}}}],
            400,
            'question q1: answer.args.amount: expected a number like the original, got "lots"; '
            "nothing sent",
        ),
        (
            [
                {"question_id": "q2", "action": "approve"},
                {"question_id": "q3", "answer": {"choice": "diners"}},
            ],
            400,
            "question q3: answer.choice: 'diners' is not one of ['visa', 'amex'] (the question's "
            """answer_schema); a valid answer: {"choice": "visa"}; nothing sent""",
        ),
        (
            [
                {"question_id": "q1", "action": "approve"},
                {"question_id": "b1", "action": "approve"},
            ],
            400,
            "question b1: answer.decisions: a batch of 1 action(s) is answered with "
            "{'decisions': [...]}, one per action in order, got None; nothing sent",
        ),
        (
            [
                {"question_id": "q1", "action": "approve"},
                {"question_id": "q9", "action": "approve"},
            ],
            404,
            "question 'q9': no such question in thread 'order-4471'; nothing sent",
        ),
        (
            [{"question_id": "q1", "action": "approve"}, {"question_id": "q1", "action": "reject"}],
            400,
            "answers[1].question_id: 'q1' is already answered by answers[0]; one answer per "
            "question",
        ),
        (
            [{"question_id": "q1"}],
            400,
            'answers[0]: expected {"action": "...", "answer": {...}}, or {"answer": ...} (any '
            "JSON but null) for the whole answer",
        ),
        (
            [{"question_id": "q1", "action": "approve", "answer": "yes"}],
            400,
            "answers[0].answer: with an action, expected a JSON object of more fields",
        ),
        (
            [{"action": "approve"}],
            400,
            "answers[0].question_id: expected a question's id, got None",
        ),
        (
            [],
            400,
            'answers: expected a non-empty list of {"question_id": "...", "action": "...", '
            '"answer": {...}} or {"question_id": "...", "answer": ...}',
        ),
    ],
)
def test_a_refused_answer_sends_none_of_them(
    client: TestClient, inbox: Path, answers: list[Any], status: int, error: str
) -> None:
    three(inbox)
    ask(inbox, "b1", question=BATCH, function="agent")
    response = post_answers(client, {"answers": answers})
    assert (response.status_code, response.json()["error"]) == (status, error)
    assert all_sent(inbox) == []
    assert statuses(inbox, "q1", "q2", "q3", "b1") == ["open"] * 4


def test_every_refused_answer_is_named_with_its_question(client: TestClient, inbox: Path) -> None:
    three(inbox)
    response = post_answers(
        client,
        {
            "answers": [
                {"question_id": "q1", "action": "approve", "answer": {"args": {"amount": []}}},
                {"question_id": "q2", "action": "approve"},
                {"question_id": "q3", "answer": "amex"},
            ]
        },
    )
    assert response.status_code == 400
    body = response.json()
    assert body["question_id"] == "q1"
    assert [p["question_id"] for p in body["problems"]] == ["q1", "q3"]
    assert body["problems"][1]["error"] == (
        "question q3: answer: 'amex' is not of type 'object' (the question's answer_schema); "
        'a valid answer: {"choice": "visa"}'
    )
    assert all_sent(inbox) == []


def test_the_api_answers_only_the_threads_own_questions(client: TestClient, inbox: Path) -> None:
    three(inbox)
    ask(inbox, "other", thread_id="order-4472")
    response = approve(client, "q1", "other")
    assert response.status_code == 404
    assert response.json()["question_id"] == "other"
    assert (
        post_answers(
            client, {"answers": [{"question_id": "q1", "action": "approve"}]}, "nope"
        ).status_code
        == 404
    )
    assert all_sent(inbox) == []


def test_a_session_needs_the_csrf_header(alice: TestClient, inbox: Path) -> None:
    three(inbox)
    body = {"answers": [{"question_id": "q1", "action": "approve"}]}
    refused = alice.post(f"/api/threads/{THREAD}/answers", json=body)
    assert refused.status_code == 403
    assert all_sent(inbox) == []
    token = csrf_of(alice.get(f"/threads/{THREAD}").text)
    done = alice.post(f"/api/threads/{THREAD}/answers", json=body, headers={"X-CSRF-Token": token})
    assert done.status_code == 200, done.text
    assert done.json()["questions"][0]["answered_by"] == "alice"


def test_a_thread_id_with_a_slash(client: TestClient, inbox: Path) -> None:
    ask(inbox, "s1", thread_id="team/order-1")
    ask(inbox, "s2", thread_id="team/order-1")
    body = {
        "answers": [
            {"question_id": "s1", "action": "approve"},
            {"question_id": "s2", "action": "reject"},
        ]
    }
    response = client.post("/api/threads/team%2Forder-1/answers", headers=BEARER, json=body)
    assert response.status_code == 200, response.text
    [message] = all_sent(inbox)
    assert (message["thread_id"], len(message["more_answers"])) == ("team/order-1", 1)


def test_a_thread_id_with_a_line_break(alice: TestClient, inbox: Path) -> None:
    thread = "order\n4471"  # any text is a thread id; a path parameter must not stop at "\n"
    ask(inbox, "n1", thread_id=thread)
    ask(inbox, "n2", thread_id=thread)
    page = alice.get("/threads/order%0A4471")
    assert page.status_code == 200, page.text
    assert ids_in_form(page.text) == ["n1", "n2"]
    body = {"answers": [{"question_id": "n1", "action": "approve"}]}
    response = alice.post("/api/threads/order%0A4471/answers", headers=BEARER, json=body)
    assert response.status_code == 200, response.text
    [message] = all_sent(inbox)
    assert (message["thread_id"], message["question_id"]) == (thread, "n1")


def test_a_real_agent_parked_on_two_tools_resumes_once(client: TestClient, inbox: Path) -> None:
    # create_agent with two gated tools called in one model turn, run by the serve worker
    # (agent-wait-langgraph, a sibling absent when the inbox is tested alone).
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    from langchain_core.messages import AIMessage

    from agent_wait.langgraph import serve
    from tests.langgraph.conftest import calls, model
    from tests.langgraph.test_tools import Bank, agent_graph, start, tool_messages

    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-1", "amount": 70}),
        ("close_account", {"account_id": "acc-1"}),
    )
    chat = model(turn, AIMessage("all done"))
    graph = agent_graph(chat, bank.tools())
    worker_entry = SqliteEntry(inbox, poll_interval=0.02)
    worker_entry.send(start("t-many"))
    config = {"configurable": {"thread_id": "t-many"}}
    with serving(
        lambda stop: serve(graph, worker_entry, SqliteAnnounce(inbox), wait=0.05, stop=stop)
    ) as reports:
        with SqliteQuestionStore(inbox) as store:

            def both() -> list[Any]:
                found = [q for q in store.open_questions() if q.envelope.thread_id == "t-many"]
                return found if len(found) == 2 else []

            parked = until(both, "the agent to park on both tools")
        ids = {q.envelope.question["function"]: q.envelope.question_id for q in parked}
        response = post_answers(
            client,
            {
                "answers": [
                    {
                        "question_id": ids["issue_refund"],
                        "action": "approve",
                        "answer": {"args": {"amount": 60}},
                    },
                    {
                        "question_id": ids["close_account"],
                        "action": "reject",
                        "answer": {"reason": "keep it open"},
                    },
                ]
            },
            "t-many",
        )
        assert response.status_code == 200, response.text
        until(lambda: len(chat.received) == 2, "the agent to run its next model turn")
    worker_entry.close()
    # The start and one answer message: the run resumed once, with both answers.
    assert (reports[0].acknowledged, reports[0].dead_lettered) == (2, 0)
    assert bank.runs == [("issue_refund", 60)]
    done = graph.get_state(config).values
    assert "keep it open" in str(tool_messages(done)["close_account"].content)
    assert tool_messages(done)["issue_refund"].content == "refunded 60 on o-1"
    assert done["messages"][-1].content == "all done"
    assert graph.get_state(config).interrupts == ()


# --- the thread page ---------------------------------------------------------------------


def thread_form(client: TestClient, thread: str = THREAD, **fields: str) -> Response:
    page = client.get(f"/threads/{thread}")
    assert page.status_code == 200, page.text
    shown = {f"q.{i}.id": question_id for i, question_id in enumerate(ids_in_form(page.text))}
    return client.post(
        f"/threads/{thread}",
        data={"csrf": csrf_of(page.text), **shown, **fields},
        follow_redirects=False,
    )


def ids_in_form(html: str) -> list[str]:
    return re.findall(r'name="q\.\d+\.id" value="([^"]+)"', html)


def test_the_detail_page_offers_the_thread_form_when_several_are_open(
    alice: TestClient, inbox: Path
) -> None:
    ask(inbox, "q1")
    one = alice.get("/questions/q1", params={"thread": THREAD}).text
    assert 'id="together"' not in one
    ask(inbox, "q2", function="notify_customer")
    two = alice.get("/questions/q1", params={"thread": THREAD}).text
    assert "This thread waits on 2 open questions." in two
    assert f'href="/threads/{THREAD}">Answer them together in one message' in two


def test_the_thread_page_has_a_block_per_open_question(alice: TestClient, inbox: Path) -> None:
    three(inbox)
    ask(inbox, "b1", question=BATCH, function="agent")
    html = alice.get(f"/threads/{THREAD}").text
    assert ids_in_form(html) == ["q1", "q2", "q3", "b1"]
    # Each starts left open; the choices are its actions, decisions, or the answer box.
    assert re.findall(r'name="q\.0\.send" value="([^"]*)"', html) == [
        "",
        "action:approve",
        "action:reject",
    ]
    assert re.findall(r'name="q\.2\.send" value="([^"]*)"', html) == ["", "whole"]
    assert re.findall(r'name="q\.3\.send" value="([^"]*)"', html) == ["", "decisions"]
    assert 'name="q.0.send" value="" checked' in html
    assert 'name="q.0.arg.amount" value="41000"' in html
    assert 'name="q.3.action.0.decision"' in html
    assert "<script>" not in html


def test_the_form_sends_the_chosen_answers_in_one_message(alice: TestClient, inbox: Path) -> None:
    three(inbox)
    response = thread_form(
        alice,
        **{
            "q.0.send": "action:approve",
            "q.0.arg.amount": "35000",
            "q.1.send": "",  # left open
            "q.2.send": "whole",
            "q.2.whole": '{"choice": "visa"}',
            "q.2.whole_as": "json",
        },
    )
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/threads/{THREAD}?sent=q1&sent=q3"
    assert all_sent(inbox) == [
        {
            "thread_id": THREAD,
            "question_id": "q1",
            "answer": {"args": {"order_id": THREAD, "amount": 35000}, "action": "approve"},
            "answered_by": "alice",
            "identity_source": "shared-secret",
            "more_answers": [{"question_id": "q3", "answer": {"choice": "visa"}}],
        }
    ]
    result = alice.get(response.headers["location"]).text
    assert "Sent 2 answers in one message: the run resumes once." in result
    shown = re.findall(
        r'<li data-question="(\w+)"><strong>[^<]*</strong> <code>\w+</code>: ([^<]*)<code>', result
    )
    assert [(i, re.sub(r"\S+Z:", "T:", text)) for i, text in shown] == [
        ("q1", "answered by alice (shared-secret) at T: "),
        ("q3", "answered by alice (shared-secret) at T: "),
    ]
    assert ids_in_form(result) == ["q2"]  # still open, still offered


def test_the_form_names_a_refused_answer_keeps_the_typing_and_sends_nothing(
    alice: TestClient, inbox: Path
) -> None:
    three(inbox)
    response = thread_form(
        alice,
        **{
            "q.0.send": "action:approve",
            "q.0.arg.amount": "lots",
            "q.1.send": "action:reject",
            "q.1.reason": "not yet",
            "q.2.send": "whole",
            "q.2.whole": '{"choice": "diners"}',
            "q.2.whole_as": "json",
        },
    )
    assert response.status_code == 400
    html = response.text
    assert (
        "Nothing sent: question q1: args.amount: expected JSON such as 41000, got &#39;lots&#39;; "
        "question q3: answer.choice: &#39;diners&#39; is not one of" in html
    )
    assert html.count('class="error problem"') == 2
    assert 'name="q.0.arg.amount" value="lots"' in html
    assert ">not yet</textarea>" in html
    assert 'name="q.1.send" value="action:reject" checked' in html
    assert all_sent(inbox) == []


def test_the_form_with_nothing_chosen_sends_nothing(alice: TestClient, inbox: Path) -> None:
    three(inbox)
    response = thread_form(alice)
    assert response.status_code == 400
    assert "Not sent: choose an answer for at least one question" in response.text
    assert all_sent(inbox) == []


def test_the_form_needs_the_csrf_token(alice: TestClient, inbox: Path) -> None:
    three(inbox)
    response = alice.post(f"/threads/{THREAD}", data={"q.0.id": "q1", "q.0.send": "action:approve"})
    assert response.status_code == 403
    assert all_sent(inbox) == []


def test_a_race_lost_in_the_form_says_who_won_and_what_is_still_open(
    alice: TestClient, inbox: Path
) -> None:
    three(inbox)
    page = alice.get(f"/threads/{THREAD}")
    answer_elsewhere(inbox, "q2", "approve")  # after alice's page was rendered
    response = alice.post(
        f"/threads/{THREAD}",
        data={
            "csrf": csrf_of(page.text),
            **{f"q.{i}.id": q for i, q in enumerate(["q1", "q2", "q3"])},
            "q.0.send": "action:reject",
            "q.0.reason": "too much",
            "q.1.send": "action:reject",
        },
    )
    assert response.status_code == 409
    html = response.text
    assert re.search(r"Nothing sent: question q2: already answered by bob at \S+Z\.", html)
    outcomes = re.findall(r'<li data-question="(\w+)">.*?</code>: ([^<]*)</li>', html)
    assert [(i, re.sub(r"\S+Z$", "T", text)) for i, text in outcomes] == [
        ("q1", "not sent; still open"),
        ("q2", "already answered by bob at T"),
    ]
    # q1 is offered again with what alice chose and typed.
    assert ids_in_form(html) == ["q1", "q3"]
    assert 'name="q.0.send" value="action:reject" checked' in html
    assert ">too much</textarea>" in html
    assert [m["answer"] for m in all_sent(inbox)] == [{"action": "approve"}]  # bob's only
