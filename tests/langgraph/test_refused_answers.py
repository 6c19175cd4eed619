"""A real graph refuses an answer `agent-wait answer` recorded: the question opens again, says why,
and a corrected answer goes through."""

from __future__ import annotations

from typing import Any

from agent_wait.core import Outcome, SqliteAnnounce, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.langgraph import handle_message
from tests.langgraph.test_cli_answers import cli, received
from tests.langgraph.test_host import START_MESSAGE, Counts, refund_graph

REFUSED = "wait.answer_refused"


def inbox() -> SqliteAnnounce:
    """The embedded inbox, told of refused answers (its rows open again)."""
    return SqliteAnnounce().with_lifecycle_events(REFUSED)


def test_a_refused_answer_opens_its_question_again_with_the_reason_and_a_corrected_one_resumes() -> (
    None
):
    counts = Counts()
    graph = refund_graph(counts)
    started = handle_message(graph, START_MESSAGE, inbox())
    [question_id] = started.question_ids
    # An edit naming an argument the function does not have: only the function can tell.
    code, _, err = cli(
        "answer",
        question_id,
        "approve",
        "--answer",
        '{"args": {"amonut": 1}}',
        "--by",
        "alice",
        "--force",
    )
    assert (code, err) == (0, "")
    [sent] = received()
    refused = handle_message(graph, sent, inbox())
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.refused == (question_id,)
    assert [event.ok for event in refused.events] == [True]
    with SqliteQuestionStore(default_inbox_path()) as store:
        [question] = store.find(question_id)
    assert question.is_open
    assert question.refusal is not None
    assert question.refusal["answer"] == {"args": {"amonut": 1}, "action": "approve"}
    reason = question.refusal["reason"]
    assert "amonut" in reason
    note = f"the agent refused this answer: {reason}"
    code, out, _ = cli("show", question_id)
    assert code == 0
    assert note in out
    assert "refused answer: {" in out
    code, out, _ = cli("inbox")
    assert (code, note in out) == (0, True)
    # The corrected answer goes through; the person is reminded why the first did not.
    code, out, err = cli("answer", question_id, "approve", "--by", "alice")
    assert code == 0, err
    assert note in err
    assert "answered by alice" in out
    [corrected] = received()
    resumed = handle_message(graph, corrected, inbox())
    assert resumed.outcome is Outcome.RESUMED
    assert counts.body == 1
    with SqliteQuestionStore(default_inbox_path()) as store:
        [question] = store.find(question_id)
    assert (question.status, question.refusal) == ("answered", None)


def test_a_late_copy_of_the_refusal_leaves_the_corrected_answer_alone() -> None:
    counts = Counts()
    graph = refund_graph(counts)
    [question_id] = handle_message(graph, START_MESSAGE, inbox()).question_ids
    bad: dict[str, Any] = {"args": {"amonut": 1}}
    assert (
        cli("answer", question_id, "approve", "--answer", '{"args": {"amonut": 1}}', "--force")[0]
        == 0
    )
    [sent] = received()
    assert sent["answer"] == {**bad, "action": "approve"}
    assert handle_message(graph, sent, inbox()).outcome is Outcome.INVALID_ANSWER
    assert cli("answer", question_id, "reject")[0] == 0
    # The refused message is delivered again: refused again, and the store keeps the reject.
    again = handle_message(graph, sent, inbox())
    assert again.outcome is Outcome.INVALID_ANSWER
    with SqliteQuestionStore(default_inbox_path()) as store:
        [question] = store.find(question_id)
    assert (question.status, question.answer) == ("answered", {"action": "reject"})
