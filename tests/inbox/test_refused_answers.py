"""Answers from the inbox that the agent refused, or whose send was not confirmed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from agent_wait.core import SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.core._canonical import answer_digest
from agent_wait.core._models import ANSWER_REFUSED_TYPE
from agent_wait.host._lifecycle import lifecycle_event
from tests.inbox.conftest import SECRET, app_client, ask, sent

BEARER = {"Authorization": f"Bearer {SECRET}"}
REASON = "answer.args: ['amonut'] are not arguments of 'issue_refund' (published: ['amount'])"


def test_the_question_page_and_api_say_why_the_agent_refused_the_answer(
    client: TestClient, inbox: Path
) -> None:
    ask(inbox, "q1", args={"amount": 5})
    given = {"action": "approve", "args": {"amonut": 1}}
    first = client.post("/api/questions/q1/answer", headers=BEARER, json=given)
    assert first.status_code == 200, first.text
    [message] = sent(inbox)
    # What the host announces when it refuses that answer, to the inbox's own table.
    refusal = lifecycle_event(
        ANSWER_REFUSED_TYPE,
        message["thread_id"],
        message["question_id"],
        outcome="invalid_answer",
        by=message["answered_by"],
        reason=REASON,
        answer_digest=answer_digest(message["answer"]),
    )
    SqliteAnnounce(inbox).deliver_event(refusal)
    page = client.get("/questions/q1", params={"thread": "order-4471"}, headers=BEARER)
    assert page.status_code == 200
    assert "the agent refused this answer: answer.args: [&#39;amonut&#39;]" in page.text
    listed = client.get("/", headers=BEARER)
    assert listed.status_code == 200
    assert (
        '<span class="error refused">the agent refused this answer: answer.args: [&#39;amonut&#39;]'
        in listed.text
    )
    shown = client.get("/api/questions", headers=BEARER).json()["questions"]
    [question] = [q for q in shown if q["envelope"]["question_id"] == "q1"]
    assert question["status"] == "open"
    again = client.post("/api/questions/q1/answer", headers=BEARER, json={"action": "approve"})
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "answered"
    assert "refusal" not in again.json()


class _StalledEntry(SqliteEntry):
    """Fault injection: the message is stored, then the reply is lost (a stalled transport)."""

    def send(self, message: Mapping[str, Any]) -> None:
        super().send(message)
        raise TimeoutError("the transport did not answer in time")


def test_an_unconfirmed_send_is_reported_and_no_second_answer_gets_in(inbox: Path) -> None:
    ask(inbox, "q1")
    store = SqliteQuestionStore(inbox)
    with _StalledEntry(inbox) as entry, app_client(store, entry) as client:
        first = client.post("/api/questions/q1/answer", headers=BEARER, json={"action": "approve"})
        assert first.status_code == 502
        assert first.json()["error"].startswith(
            "sent, not confirmed: the entry point did not confirm it (TimeoutError); the "
            "question stays sending with this answer"
        )
        second = client.post("/api/questions/q1/answer", headers=BEARER, json={"action": "reject"})
        assert second.status_code == 409
        assert second.json()["error"].startswith("already being sent (answered by api at ")
    assert [m["answer"] for m in sent(inbox)] == [{"action": "approve"}]
    assert store.find("q1")[0].status == "sending"
    store.close()
