"""Answering a stored question and sweeping overdue ones: API, CLI, and racing processes."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    AgentWaitError,
    Answer,
    InvalidAnswer,
    Operation,
    Question,
    QuestionStatus,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    hookimpl,
    publish,
)
from agent_wait.core._policy import UNSTATED
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import (
    ActionNotAllowed,
    NothingToResend,
    QuestionClosed,
    QuestionNotFound,
    SendUnconfirmed,
    answer,
    answer_many,
    cancel,
    resend,
    sweep,
)
from agent_wait.host._cli import main
from agent_wait.testing import registered_plugin
from tests.serving import all_sent

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
LATER = "2026-09-11T12:00:00Z"


def ask(path: Path, question_id: str = "q1", *, thread_id: str = "t1", **policy: Any) -> None:
    publish(
        [Question(question_id=question_id, question={"n": 1}, policy=WaitPolicy(**policy))],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=lambda: T0,
    )


@pytest.fixture(autouse=True)
def _names_given_with_by(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests name who answers with --by; the configuration must allow it.
    monkeypatch.setenv("AGENT_WAIT_ALLOW_BY", "1")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite3"


def test_answer_records_then_sends_reply_with_and_the_answer(inbox: Path) -> None:
    ask(inbox)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        result = answer(
            "q1",
            "approve",
            answer={"note": "ok", "action": "overridden"},
            by="alice",
            store=store,
            entry=entry,
        )
    expected = {
        "thread_id": "t1",
        "question_id": "q1",
        "answer": {"note": "ok", "action": "approve"},
        "answered_by": "alice",
        "identity_source": "claimed",
    }
    assert result.message == expected
    assert (result.question.status, result.question.answered_by) == ("answered", "alice")
    assert result.question.answer == expected["answer"]
    assert all_sent(inbox) == [expected]


def test_an_action_outside_allowed_actions_is_refused_unless_forced(inbox: Path) -> None:
    ask(inbox, allowed_actions=["approve", "reject"])
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(
            ActionNotAllowed, match=r"'escalate' is not one of .*\['approve', 'reject'\].*force"
        ):
            answer("q1", "escalate", by="alice", store=store, entry=entry)
        assert store.find("q1")[0].is_open
        assert all_sent(inbox) == []
        answer("q1", "escalate", by="alice", force=True, store=store, entry=entry)
    assert [m["answer"] for m in all_sent(inbox)] == [{"action": "escalate"}]


def test_a_closed_question_says_who_closed_it_and_sends_nothing(inbox: Path) -> None:
    ask(inbox)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        answer("q1", "approve", by="alice", store=store, entry=entry, at=T0)
        with pytest.raises(
            QuestionClosed, match="already answered by alice at 2026-09-11T09:00:00Z"
        ) as caught:
            answer("q1", "reject", by="bob", store=store, entry=entry)
    assert caught.value.question.answer == {"action": "approve"}
    assert len(all_sent(inbox)) == 1


def test_a_failed_send_keeps_the_question_sending_until_resent(inbox: Path, tmp_path: Path) -> None:
    ask(inbox)
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with SqliteQuestionStore(inbox) as store:
        # Which failures left nothing behind, an entry point does not say: it may have arrived.
        with pytest.raises(SendUnconfirmed, match=r"agent-wait resend q1 --thread t1") as caught:
            answer(
                "q1", "approve", by="alice", store=store, entry=SqliteEntry(blocker / "x.sqlite3")
            )
        [question] = store.find("q1")
        assert (question.status, question.answered_by, question.closes_as) == (
            "sending",
            "alice",
            "answered",
        )
        assert question.message == caught.value.message
        with SqliteEntry(inbox) as entry:
            with pytest.raises(QuestionClosed, match="being sent \\(answered by alice at "):
                answer("q1", "reject", by="bob", store=store, entry=entry)
            assert resend("q1", store=store, entry=entry) == caught.value.message
        [question] = store.find("q1")
        assert (question.status, question.answer, question.message) == (
            "answered",
            {"action": "approve"},
            None,
        )
    assert all_sent(inbox) == [caught.value.message]


def test_unknown_and_ambiguous_questions(inbox: Path) -> None:
    ask(inbox, thread_id="a")
    ask(inbox, thread_id="b")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(QuestionNotFound, match="no question nope"):
            answer("nope", "approve", store=store, entry=entry)
        with pytest.raises(QuestionNotFound, match=r"several threads \(a, b\).*--thread"):
            answer("q1", "approve", store=store, entry=entry)
        result = answer("q1", "approve", thread_id="b", store=store, entry=entry)
    assert result.message["thread_id"] == "b"


def test_cli_answer_with_the_default_inbox_and_entry() -> None:
    ask(default_inbox_path())
    code, out, err = run("answer", "q1", "approve", "--answer", '{"note": "fine"}', "--by", "alice")
    assert (code, err) == (0, "")
    assert out.startswith("q1 (thread t1) answered by alice at ")
    assert all_sent(default_inbox_path()) == [
        {
            "thread_id": "t1",
            "question_id": "q1",
            "answer": {"note": "fine", "action": "approve"},
            "answered_by": "alice",
            "identity_source": "claimed",
        }
    ]
    code, _, err = run("answer", "q1", "reject", "--by", "bob")
    assert code == 1
    assert "q1 (thread t1) is already answered by alice at " in err
    assert "nothing sent" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["answer", "q1", "maybe"], "'maybe' is not one of the question's allowed_actions"),
        (["answer", "q1", "approve", "--answer", "{bad"], "--answer: not valid JSON"),
        (["answer", "q1", "approve", "--answer", "[1]"], "--answer: expected a JSON object"),
        (["answer", "zz", "approve"], "no question zz"),
        (["answer", "q1", "approve", "--by", ""], "--by: expected a name such as 'alice', got ''"),
        (["answer", "q1", "approve", "--by", "a" * 65], "--by: at most 64 characters, got 65"),
        (["answer", "q1", "approve", "--by", "al\x1bice"], "--by: control characters"),
        (["sweep", "--by", "a\tb"], "--by: control characters are not allowed, got 'a\\tb'"),
    ],
)
def test_cli_answer_errors(argv: list[str], message: str) -> None:
    ask(default_inbox_path())
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert message in err
    assert "Traceback" not in err


def test_cli_answer_without_an_inbox(tmp_path: Path) -> None:
    code, _, err = run("answer", "q1", "approve", "--path", str(tmp_path / "none.sqlite3"))
    assert code == 1
    assert "no inbox at" in err


CLI = [sys.executable, "-m", "agent_wait.host._cli"]


def test_racing_approvers_send_exactly_one_answer(tmp_path: Path) -> None:
    path = default_inbox_path()
    ask(path)
    env = {**os.environ}
    racers = [
        subprocess.Popen(
            [*CLI, "answer", "q1", "approve", "--by", f"approver-{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(5)
    ]
    results = [(r.wait(timeout=60), r.stderr.read() if r.stderr else "") for r in racers]
    assert sorted(code for code, _ in results) == [0, 1, 1, 1, 1], results
    # A loser sees the winner's answer recorded, or still being sent.
    assert all(
        re.search(r"already (answered|being sent \(answered) by approver-", err)
        for code, err in results
        if code
    ), results
    [message] = all_sent(path)
    with SqliteQuestionStore(path) as store:
        [stored] = store.find("q1")
    assert message["answer"] == stored.answer == {"action": "approve"}


def test_sweep_sends_defaults_once_and_lists_overdue(inbox: Path) -> None:
    ask(inbox, "due", timeout="PT1H", default={"action": "reject", "reason": "timeout"})
    ask(inbox, "nodefault", timeout="PT1H")
    ask(inbox, "later", timeout="P3D", default={"action": "reject"})
    ask(inbox, "answered", timeout="PT1H", default={"action": "reject"})
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        answer("answered", "approve", by="alice", store=store, entry=entry)
        entry.ack(entry.receive(1)[0])
        report = sweep(store=store, entry=entry, now=LATER)
        assert [q.envelope.question_id for q in report.expired] == ["due"]
        assert [q.envelope.question_id for q in report.overdue] == ["nodefault"]
        assert report.failed == []
        [expired] = store.find("due")
        assert (expired.status, expired.answered_by, expired.answered_at) == (
            "expired",
            "sweeper",
            LATER,
        )
        again = sweep(store=store, entry=entry, now=LATER)
        assert (again.expired, [q.envelope.question_id for q in again.overdue]) == (
            [],
            ["nodefault"],
        )
    assert all_sent(inbox) == [
        {
            "thread_id": "t1",
            "question_id": "due",
            "answer": {"action": "reject", "reason": "timeout"},
            "answered_by": "sweeper",
        }
    ]


def test_racing_sweepers_send_each_default_exactly_once(tmp_path: Path) -> None:
    path = default_inbox_path()
    for n in range(6):
        ask(path, f"q{n}", thread_id=f"t{n}", timeout="PT1H", default={"action": "reject", "n": n})
    sweepers = [
        subprocess.Popen(
            [*CLI, "sweep", "--once", "--now", LATER, "--by", f"sweeper-{i}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    outputs = [s.communicate(timeout=60)[0] for s in sweepers]
    assert all(s.returncode == 0 for s in sweepers)
    lines = [line for out in outputs for line in out.splitlines() if line.startswith("expired")]
    assert len(lines) == 6, outputs
    messages = all_sent(path)
    assert sorted(m["answer"]["n"] for m in messages) == list(range(6))
    with SqliteQuestionStore(path) as store:
        assert store.open_questions() == []


def test_cli_sweep_reports_and_every_stops_on_sigterm() -> None:
    path = default_inbox_path()
    ask(path, "due", timeout="PT1H", default={"action": "reject"})
    ask(path, "nodefault", timeout="PT1H")
    code, out, _ = run("sweep", "--now", LATER)
    assert code == 0
    assert "expired due (thread t1, due 2026-09-11T10:00:00Z): sent default" in out
    assert "overdue nodefault (thread t1, due 2026-09-11T10:00:00Z): no default, left open" in out
    looping = subprocess.Popen(
        [*CLI, "sweep", "--every", "0.1"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert looping.stdout is not None
    first = looping.stdout.readline()  # the first sweep ran: the handlers are installed
    looping.send_signal(signal.SIGTERM)
    rest, _ = looping.communicate(timeout=30)
    assert looping.returncode == 0
    assert first.startswith("overdue nodefault")
    assert all(line.startswith("overdue nodefault") for line in rest.splitlines())


def test_cancel_closes_without_sending_and_the_sweeper_skips_it(inbox: Path) -> None:
    ask(inbox, timeout="PT1H", default={"action": "reject"})
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        cancelled = cancel("q1", by="carol", store=store, at=T0)
        assert (cancelled.status, cancelled.answered_by, cancelled.answer) == (
            "cancelled",
            "carol",
            None,
        )
        assert sweep(store=store, entry=entry, now=LATER).expired == []
        with pytest.raises(
            QuestionClosed, match="already cancelled by carol at 2026-09-11T09:00:00Z"
        ):
            answer("q1", "approve", store=store, entry=entry)
        with pytest.raises(QuestionClosed):
            cancel("q1", store=store)
    assert all_sent(inbox) == []


def test_cli_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_ALLOW_BY", "1")  # --by names who cancels: a claimed name
    ask(default_inbox_path())
    code, out, _ = run("cancel", "q1", "--by", "carol")
    assert code == 0
    assert out.startswith("q1 (thread t1) cancelled by carol at ")
    code, _, err = run("cancel", "q1")
    assert code == 1
    assert "already cancelled by carol" in err


def test_cli_sweep_before_anything_was_published() -> None:
    code, out, _ = run("sweep")
    assert (code, out) == (0, "no questions yet\n")
    assert not default_inbox_path().exists()


def test_cli_dead_letters_lists_and_redrives() -> None:
    assert run("dead-letters") == (0, "no dead letters\n", "")
    with SqliteEntry(default_inbox_path(), retry_delay=0.0) as entry:
        entry.send({"thread_id": "t1", "question_id": "q1", "answer": {"note": "x"}})
        [received] = entry.receive(1)
        assert entry.fail(received, "ValidationError: 1 validation error\nmore", retry=False)
    code, out, _ = run("dead-letters")
    assert code == 0
    assert out.startswith(f"{received.id}  thread t1  1 attempts  dead at ")
    assert out.rstrip().endswith("ValidationError: 1 validation error")
    code, out, _ = run("dead-letters", "--json")
    [letter] = json.loads(out)
    assert letter["message"] == {"thread_id": "t1", "question_id": "q1", "answer": {"note": "x"}}
    assert run("dead-letters", "--redrive", received.id) == (0, f"redriven {received.id}\n", "")
    code, _, err = run("dead-letters", "--redrive", received.id)
    assert code == 1
    assert f"no dead letter {received.id}" in err
    assert [m["question_id"] for m in all_sent(default_inbox_path())] == ["q1"]


def test_cli_dead_letters_lists_a_poison_message_safely() -> None:
    with SqliteEntry(default_inbox_path()) as entry:
        entry.dead_letters()  # creates the table
        connection = sqlite3.connect(default_inbox_path())
        with connection:
            connection.execute(
                "INSERT INTO agent_wait_messages (thread_id, body, state, attempts, visible_at, "
                "sent_at) VALUES ('t1', ?, 'ready', 0, 0, '2026-01-01T00:00:00Z')",
                (b"\x1b[2J\xffnot json",),
            )
        connection.close()
        assert entry.receive(1) == []
        [dead] = entry.dead_letters()
    code, out, _ = run("dead-letters")
    assert code == 0
    assert out.startswith(f"{dead.id}  thread t1  1 attempts  dead at ")
    assert "PoisonMessage: not UTF-8 text (byte 0xff at offset 4)" in out
    assert out.endswith("  body: \\x1b[2J\\xffnot json\n")
    code, out, _ = run("dead-letters", "--json")
    [letter] = json.loads(out)
    assert (letter["message"], letter["body"]) == ({}, "\\x1b[2J\\xffnot json")


def test_resend_sends_the_recorded_answer_again(inbox: Path, tmp_path: Path) -> None:
    ask(inbox, "q1", timeout="PT1H", default={"action": "reject"})
    ask(inbox, "q2")
    ask(inbox, "q3")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        # The process "died" after recording: the close is there, nothing was sent.
        store.transition(
            "t1", "q2", QuestionStatus.ANSWERED, by="alice", answer={"action": "approve"}
        )
        sweep(store=store, entry=entry, now=LATER)
        [swept] = entry.receive(10)
        assert swept.message["question_id"] == "q1"
        assert entry.ack(swept)
        assert resend("q2", store=store, entry=entry) == {
            "thread_id": "t1",
            "question_id": "q2",
            "answer": {"action": "approve"},
            "answered_by": "alice",
        }
        resend("q1", store=store, entry=entry)
        with pytest.raises(NothingToResend, match=r"q3 .* is open: no recorded answer"):
            resend("q3", store=store, entry=entry)
        cancel("q3", by="carol", store=store)
        with pytest.raises(NothingToResend, match="cancelled by carol"):
            resend("q3", store=store, entry=entry)
        with pytest.raises(OSError):
            resend("q2", store=store, entry=SqliteEntry(blocker / "x.sqlite3"))
    assert [(m["question_id"], m["answer"]) for m in all_sent(inbox)] == [
        ("q2", {"action": "approve"}),
        ("q1", {"action": "reject"}),
    ]


def test_cli_resend() -> None:
    ask(default_inbox_path())
    assert run("answer", "q1", "approve", "--by", "alice")[0] == 0
    code, out, _ = run("resend", "q1")
    assert (code, out) == (0, 'q1 (thread t1) sent again: {"action": "approve"}\n')
    assert [m["answer"] for m in all_sent(default_inbox_path())] == [{"action": "approve"}] * 2
    ask(default_inbox_path(), "q2")
    code, _, err = run("resend", "q2")
    assert code == 1
    assert "no recorded answer to send; answer it instead" in err


def test_answer_and_sweep_are_operations_for_plugins(inbox: Path) -> None:
    calls: list[tuple[str, Operation, object, BaseException | None]] = []

    class Operations:
        @hookimpl
        def operation_started(self, operation: Operation) -> None:
            calls.append(("started", operation, None, None))

        @hookimpl
        def operation_finished(
            self, operation: Operation, result: object, error: BaseException | None
        ) -> None:
            calls.append(("finished", operation, result, error))

    ask(inbox, "q1")
    ask(inbox, "due", timeout="PT1H", default={"action": "reject"})
    with (
        registered_plugin(Operations(), "test-operations"),
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
    ):
        answered = answer("q1", "approve", by="alice", store=store, entry=entry)
        with pytest.raises(QuestionClosed) as closed:
            answer("q1", "reject", by="bob", store=store, entry=entry)
        swept = sweep(store=store, entry=entry, now=LATER)
    assert [(c[0], c[1]) for c in calls] == [
        ("started", Operation("answer", None, "q1")),
        ("finished", Operation("answer", None, "q1")),
        ("started", Operation("answer", None, "q1")),
        ("finished", Operation("answer", None, "q1")),
        ("started", Operation("sweep")),
        ("finished", Operation("sweep")),
    ]
    assert (calls[1][2], calls[1][3]) == (answered, None)
    assert (calls[3][2], calls[3][3]) == (None, closed.value)
    assert (calls[5][2], calls[5][3]) == (swept, None)
    assert [q.envelope.question_id for q in swept.expired] == ["due"]


def ask_foreign(
    path: Path, question_id: str, question: Any, *, thread_id: str = "t1", **fields: Any
) -> None:
    """A question agent-wait did not ask: no allowed actions stated, maybe an answer schema."""
    publish(
        [Question(question_id=question_id, question=question, policy=UNSTATED, **fields)],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=lambda: T0,
    )


APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}


def test_a_whole_answer_is_sent_as_it_is(inbox: Path) -> None:
    ask_foreign(inbox, "q1", "continue? (y/n)")
    ask_foreign(inbox, "q2", [{"action_request": {"action": "send", "args": {}}}])
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        first = answer("q1", answer="y", by="alice", store=store, entry=entry)
        second = answer("q2", answer=[{"type": "accept", "args": None}], store=store, entry=entry)
        with pytest.raises(ValueError, match=r"give an action .* or the whole answer"):
            answer("q1", store=store, entry=entry)
    assert first.message == {
        "thread_id": "t1",
        "question_id": "q1",
        "answer": "y",
        "answered_by": "alice",
        "identity_source": "claimed",
    }
    assert (first.question.answer, first.question.answered_by) == ("y", "alice")
    assert second.question.answer == [{"type": "accept", "args": None}]
    assert [m["answer"] for m in all_sent(inbox)] == ["y", [{"type": "accept", "args": None}]]


def test_a_whole_answer_object_still_names_an_allowed_action(inbox: Path) -> None:
    ask(inbox, allowed_actions=["approve", "reject"])
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(ActionNotAllowed, match="'maybe' is not one of"):
            answer("q1", answer={"action": "maybe"}, store=store, entry=entry)
        result = answer("q1", answer={"action": "reject", "reason": "no"}, store=store, entry=entry)
    assert result.message["answer"] == {"action": "reject", "reason": "no"}


def test_an_answer_is_checked_against_the_answer_schema(inbox: Path) -> None:
    ask_foreign(inbox, "q1", "ship it?", answer_schema=APPROVAL)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(
            InvalidAnswer,
            match=r"question q1 \(thread t1\): answer.approved: 'yes' is not of type 'boolean' "
            r"\(the question's answer_schema\); nothing sent",
        ):
            answer("q1", answer={"approved": "yes"}, store=store, entry=entry)
        with pytest.raises(InvalidAnswer, match="answer: 'approved' is a required property"):
            answer("q1", "approve", store=store, entry=entry)
        assert store.find("q1")[0].is_open
        assert all_sent(inbox) == []
        answer("q1", answer={"approved": True, "note": "ok"}, store=store, entry=entry)
    assert [m["answer"] for m in all_sent(inbox)] == [{"approved": True, "note": "ok"}]


def test_force_sends_an_answer_the_schema_refuses(inbox: Path) -> None:
    ask_foreign(inbox, "q1", "ship it?", answer_schema=APPROVAL)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        answer("q1", answer="y", force=True, store=store, entry=entry)
    assert [m["answer"] for m in all_sent(inbox)] == ["y"]


def test_without_jsonschema_a_schema_question_says_how_to_check_it(
    inbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask_foreign(inbox, "q1", "ship it?", answer_schema=APPROVAL)
    # The package not installed: an import of it fails as it would then.
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(
            AgentWaitError,
            match=r"question q1 \(thread t1\): checking an answer against an answer_schema needs "
            r"the jsonschema package: pip install 'agent-wait-core\[schema\]'; or pass "
            r"force=True \(--force\)",
        ):
            answer("q1", answer={"approved": True}, store=store, entry=entry)
        assert store.find("q1")[0].is_open
        answer("q1", answer={"approved": True}, force=True, store=store, entry=entry)
    assert len(all_sent(inbox)) == 1


def test_a_broken_answer_schema_is_named(inbox: Path) -> None:
    ask_foreign(inbox, "q1", "ship it?", answer_schema={"type": "yes-or-no"})
    with (
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
        pytest.raises(AgentWaitError, match="answer_schema is not a valid JSON Schema"),
    ):
        answer("q1", answer="y", store=store, entry=entry)


def test_answer_many_sends_one_message_and_closes_every_question(inbox: Path) -> None:
    ask(inbox, "q1", allowed_actions=["approve", "reject"])
    ask_foreign(inbox, "q2", "ship it?", answer_schema=APPROVAL)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        result = answer_many(
            {"q1": {"action": "reject", "reason": "dup"}, "q2": {"approved": True}},
            by="alice",
            store=store,
            entry=entry,
            at=T0,
        )
        closed = {i: store.find(i)[0] for i in ("q1", "q2")}
    expected = {
        "thread_id": "t1",
        "question_id": "q1",
        "answer": {"action": "reject", "reason": "dup"},
        "answered_by": "alice",
        "identity_source": "claimed",
        "more_answers": [{"question_id": "q2", "answer": {"approved": True}}],
    }
    assert result.message == expected
    assert all_sent(inbox) == [expected]
    assert [q.envelope.question_id for q in result.questions] == ["q1", "q2"]
    for question_id, value in [("q1", expected["answer"]), ("q2", {"approved": True})]:
        stored = closed[question_id]
        assert (stored.status, stored.answered_by, stored.answer) == ("answered", "alice", value)
    assert [e.question_id for e in Answer.model_validate(expected).entries()] == ["q1", "q2"]


def test_answer_many_checks_every_answer_before_closing_any(inbox: Path) -> None:
    ask(inbox, "q1")
    ask_foreign(inbox, "q2", "ship it?", answer_schema=APPROVAL)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(
            InvalidAnswer, match=r"question q2 .*answer: 'y' is not of type 'object'"
        ):
            answer_many({"q1": {"action": "approve"}, "q2": "y"}, store=store, entry=entry)
        assert store.find("q1")[0].is_open
        assert store.find("q2")[0].is_open
    assert all_sent(inbox) == []


def test_answer_many_with_one_closed_question_sends_nothing_and_leaves_the_rest_open(
    inbox: Path,
) -> None:
    ask(inbox, "q1")
    ask(inbox, "q2")
    ask(inbox, "q3")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        answer("q3", "approve", by="bob", store=store, entry=entry, at=T0)
        with pytest.raises(QuestionClosed, match=r"q3 .*already answered by bob"):
            answer_many(
                {
                    "q1": {"action": "approve"},
                    "q2": {"action": "approve"},
                    "q3": {"action": "reject"},
                },
                store=store,
                entry=entry,
            )
        assert store.find("q1")[0].is_open
        assert store.find("q2")[0].is_open
    assert len(all_sent(inbox)) == 1


def test_answer_many_refuses_questions_of_several_threads(inbox: Path) -> None:
    ask(inbox, "q1", thread_id="a")
    ask(inbox, "q2", thread_id="b")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(
            QuestionNotFound, match="one message answers questions of one thread; these are in a, b"
        ):
            answer_many({"q1": "y", "q2": "n"}, store=store, entry=entry)
        with pytest.raises(ValueError, match="at least one question"):
            answer_many({}, store=store, entry=entry)
        with pytest.raises(ValueError, match=r"answers\['q1'\]: an answer cannot be null"):
            answer_many({"q1": None}, store=store, entry=entry)
    assert all_sent(inbox) == []


def test_a_failed_send_of_several_answers_keeps_them_all_sending(
    inbox: Path, tmp_path: Path
) -> None:
    ask(inbox, "q1")
    ask(inbox, "q2")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with SqliteQuestionStore(inbox) as store:
        with pytest.raises(SendUnconfirmed) as caught:
            answer_many(
                {"q1": {"action": "approve"}, "q2": {"action": "reject"}},
                store=store,
                entry=SqliteEntry(blocker / "x.sqlite3"),
            )
        assert [q.envelope.question_id for q in caught.value.questions] == ["q1", "q2"]
        assert [q.status for q in store.sending_questions()] == ["sending", "sending"]
        # One resend of either settles both: they were one message.
        with SqliteEntry(inbox) as entry:
            resend("q2", store=store, entry=entry)
        assert [store.find(i)[0].status for i in ("q1", "q2")] == ["answered", "answered"]
    assert all_sent(inbox) == [caught.value.message]


def test_cli_answer_with_json_and_also() -> None:
    ask_foreign(default_inbox_path(), "q1", "continue?")
    ask_foreign(default_inbox_path(), "q2", "ship it?", answer_schema=APPROVAL)
    ask(default_inbox_path(), "q3")
    code, out, err = run(
        "answer",
        "q1",
        "--json",
        '"y"',
        "--also",
        "q2",
        '{"approved": true}',
        "--also",
        "q3",
        '{"action": "approve"}',
        "--by",
        "alice",
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["q1", "q2", "q3"]
    assert lines[1].startswith("q2 (thread t1) answered by alice at ")
    assert lines[1].endswith(': {"approved": true}')
    assert all_sent(default_inbox_path()) == [
        {
            "thread_id": "t1",
            "question_id": "q1",
            "answer": "y",
            "answered_by": "alice",
            "identity_source": "claimed",
            "more_answers": [
                {"question_id": "q2", "answer": {"approved": True}},
                {"question_id": "q3", "answer": {"action": "approve"}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["answer", "q2", "--json", '"y"'],
            "question q2 (thread t1): answer: 'y' is not of type 'object'",
        ),
        (
            ["answer", "q1", "approve", "--json", '"y"'],
            "--json is the whole answer: give it without ACTION",
        ),
        (
            ["answer", "q1"],
            "ACTION: give an action (such as approve), or the whole answer with --json",
        ),
        (["answer"], "QUESTION_ID: name the question to answer"),
        (["answer", "q1", "--json", "{bad"], "--json: not valid JSON"),
        (["answer", "q1", "--json", "null"], "answers['q1']: an answer cannot be null"),
        (["answer", "q1", "--json", '"y"', "--also", "q2", "nope"], "--also q2: not valid JSON"),
        (
            ["answer", "q1", "--json", '"y"', "--also", "q1", '"n"'],
            "--also: question q1 is answered twice",
        ),
    ],
)
def test_cli_whole_answer_errors(argv: list[str], message: str) -> None:
    ask_foreign(default_inbox_path(), "q1", "continue?")
    ask_foreign(default_inbox_path(), "q2", "ship it?", answer_schema=APPROVAL)
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert message in err
    assert "Traceback" not in err
    assert all_sent(default_inbox_path()) == []


def test_answer_many_is_one_answer_operation_for_plugins(inbox: Path) -> None:
    calls: list[tuple[str, Operation, object]] = []

    class Operations:
        @hookimpl
        def operation_started(self, operation: Operation) -> None:
            calls.append(("started", operation, None))

        @hookimpl
        def operation_finished(
            self, operation: Operation, result: object, error: BaseException | None
        ) -> None:
            calls.append(("finished", operation, result))

    ask(inbox, "q1")
    ask(inbox, "q2")
    with (
        registered_plugin(Operations(), "test-operations"),
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
    ):
        done = answer_many(
            {"q1": {"action": "approve"}, "q2": "y"}, thread_id="t1", store=store, entry=entry
        )
    assert calls == [
        ("started", Operation("answer", "t1"), None),
        ("finished", Operation("answer", "t1"), done),
    ]


def test_cli_sweep_sends_a_held_answer_again_once_its_send_is_a_minute_old() -> None:
    path = default_inbox_path()
    ask(path, "q1")
    with SqliteQuestionStore(path) as store:
        [question] = store.find("q1")
        message = {**question.envelope.reply_with.model_dump(), "answer": {"action": "approve"}}
        store.begin_send(
            "t1",
            "q1",
            QuestionStatus.ANSWERED,
            by="alice",
            answer={"action": "approve"},
            message=message,
            at=T0,
        )
    code, out, _ = run("sweep", "--now", "2026-09-11T09:00:30Z")
    assert (code, out) == (0, "")
    code, out, _ = run("sweep", "--now", "2026-09-11T09:01:00Z")
    assert code == 0
    assert out == (
        "resent q1 (thread t1): its unconfirmed answer was sent again; answered by alice at "
        "2026-09-11T09:00:00Z\n"
    )
    assert all_sent(path) == [message]
    with SqliteQuestionStore(path) as store:
        assert store.find("q1")[0].status == "answered"
