"""A question with a quorum, through the real answer paths: ``answer()`` and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    Identity,
    MemoryAnnounce,
    NotAnApprover,
    Question,
    QuestionStore,
    SqliteAnnounce,
    SqliteEntry,
    StoredQuestion,
    Transition,
    WaitPolicy,
    audit_log_of,
    publish,
    verify,
)
from agent_wait.core._quorum import Quorum, tally
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.host import AnswerNotAccepted, QuorumNotSupported, answer, answer_many

AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))
T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def ask(path: Path, question_id: str = "q1", *, thread_id: str = "t1", **policy: Any) -> None:
    publish(
        [
            Question(
                question_id=question_id,
                question={"function": "issue_refund", "args": {"amount": 41000}},
                policy=WaitPolicy(**policy),
            )
        ],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=lambda: T0,
    )


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    # Several people voting from one shell: --by names each, which takes allow_by.
    env = {**os.environ, "AGENT_WAIT_ALLOW_BY": "1"}
    return subprocess.run([AGENT_WAIT, *argv], capture_output=True, text=True, check=False, env=env)


def test_policy_quorum_takes_a_number_or_a_mapping_and_names_bad_values() -> None:
    assert WaitPolicy(quorum=2).quorum == Quorum(approve=2, reject=1)
    assert WaitPolicy(quorum={"approve": 3, "reject": 2}).quorum == Quorum(approve=3, reject=2)
    with pytest.raises(ValueError, match="quorum: expected a number of approvals"):
        WaitPolicy(quorum="two")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quorum"):
        WaitPolicy(quorum=0)
    with pytest.raises(ValueError, match="quorum: counts approve votes"):
        WaitPolicy(quorum=2, allowed_actions=["yes", "no"])


def test_the_envelope_carries_the_quorum_only_when_there_is_one() -> None:
    sink = MemoryAnnounce()
    publish([Question(question_id="a", question={}, policy=WaitPolicy(quorum=2))], "t", sink)
    publish([Question(question_id="b", question={}, policy=WaitPolicy())], "t", sink)
    with_quorum, without = (e.to_dict() for e in sink.envelopes)
    assert with_quorum["quorum"] == {"approve": 2, "reject": 1}
    assert "quorum" not in without


def test_tally_counts_distinct_people_restarts_on_a_differing_edit_and_vetoes() -> None:
    quorum = Quorum(approve=2)

    def vote(by: str, answer: dict[str, Any]) -> dict[str, Any]:
        return {"by": by, "at": "2026-09-11T09:00:00Z", "answer": answer}

    approve, reject = {"action": "approve"}, {"action": "reject"}
    edited = {"action": "approve", "args": {"amount": 400}}
    assert tally([vote("alice", approve), vote("alice", approve)], quorum).decision is None
    done = tally([vote("alice", approve), vote("bob", approve)], quorum)
    assert (done.decision, done.decided_by, done.approvals) == ("approve", "bob", ("alice", "bob"))
    restarted = tally([vote("alice", approve), vote("bob", edited)], quorum)
    assert (restarted.approvals, restarted.superseded) == (("bob",), ("alice",))
    agreed = tally([vote("alice", approve), vote("bob", edited), vote("alice", edited)], quorum)
    assert (agreed.decision, agreed.answer) == ("approve", edited)
    vetoed = tally([vote("alice", approve), vote("carol", reject)], quorum)
    assert (vetoed.decision, vetoed.decided_by) == ("reject", "carol")
    two_rejects = Quorum(approve=2, reject=2)
    assert tally([vote("carol", reject)], two_rejects).decision is None
    assert tally([vote("carol", reject), vote("dan", reject)], two_rejects).decision == "reject"


class _NoVotes:
    """A third-party store written before votes existed: every QuestionStore method, no more."""

    def __init__(self, inner: SqliteQuestionStore) -> None:
        self.inner = inner

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        return self.inner.find(question_id, thread_id)

    def open_questions(self) -> list[StoredQuestion]:
        return self.inner.open_questions()

    def open_questions_past(self, now: Any = None) -> list[StoredQuestion]:
        return self.inner.open_questions_past(now)

    def transition(self, *args: Any, **kwargs: Any) -> Transition:
        return self.inner.transition(*args, **kwargs)

    def reopen(self, closed: StoredQuestion) -> bool:
        return self.inner.reopen(closed)

    def close(self) -> None:
        self.inner.close()


def test_a_store_that_records_no_votes_refuses_a_quorum_question_by_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, quorum=2)
    store: QuestionStore = _NoVotes(SqliteQuestionStore(path))
    with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
        with pytest.raises(QuorumNotSupported, match="_NoVotes does not record votes"):
            answer("q1", "approve", by="alice", store=store, entry=entry)
        assert entry.receive(10) == []
    store.close()


def test_a_quorum_question_takes_one_vote_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, "q1", quorum=2)
    ask(path, "q2")
    with SqliteQuestionStore(path) as store, SqliteEntry(tmp_path / "e.sqlite3") as entry:
        with pytest.raises(AnswerNotAccepted, match="one vote at a time"):
            answer_many(
                {"q1": {"action": "approve"}, "q2": {"action": "approve"}},
                by="alice",
                store=store,
                entry=entry,
            )
        with pytest.raises(AnswerNotAccepted, match="takes votes"):
            answer("q1", answer="yes", by="alice", store=store, entry=entry, force=True)
        assert entry.receive(10) == []


def test_only_approvers_vote_and_each_vote_keeps_how_its_voter_was_identified(
    tmp_path: Path,
) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, "q1", quorum=2, approvers=["alice@example.com", "bob@example.com"])
    alice = Identity(subject="alice@example.com", source="oidc")
    mallory = Identity(subject="mallory@example.com", source="oidc")
    bob = Identity(subject="bob@example.com", source="proxy")
    with SqliteQuestionStore(path) as store, SqliteEntry(tmp_path / "e.sqlite3") as entry:
        first = answer("q1", "approve", identity=alice, store=store, entry=entry)
        assert first.message is None
        # Authorization comes before the vote: a refused person records nothing at all.
        with pytest.raises(NotAnApprover, match=r"mallory@example\.com \(oidc\) may not answer"):
            answer("q1", "approve", identity=mallory, store=store, entry=entry)
        [stored] = store.find("q1", "t1")
        assert [v["by"] for v in stored.votes] == ["alice@example.com"]
        assert stored.votes[0]["identity_source"] == "oidc"
        second = answer("q1", "approve", identity=bob, store=store, entry=entry)
        assert second.message is not None
        [received] = entry.receive(10)
        log = audit_log_of(store)
        assert log is not None
        record = log.entries("q1", "t1")
    assert (received.message["answered_by"], received.message["identity_source"]) == (
        "bob@example.com",
        "proxy",
    )
    votes = [e.data for e in record if e.kind == "vote"]
    assert [(v["by"], v["identity_source"]) for v in votes] == [
        ("alice@example.com", "oidc"),
        ("bob@example.com", "proxy"),
    ]
    assert verify(record) == []


def test_two_of_three_through_the_cli_shows_the_count_and_refuses_the_third() -> None:
    path = default_inbox_path()
    ask(path, quorum=2, tags={"approver_group": "finance"})
    first = cli("answer", "q1", "approve", "--by", "alice")
    assert first.returncode == 0, first.stderr
    assert "vote recorded: 1 of 2 approvals, waiting for finance" in first.stdout
    listed = cli("inbox")
    assert "1 of 2 approvals, waiting for finance" in listed.stdout, listed.stdout
    shown = cli("show", "q1")
    assert "open (1 of 2 approvals, waiting for finance)" in shown.stdout
    assert "vote: alice at " in shown.stdout
    again = cli("answer", "q1", "approve", "--by", "alice")
    assert again.returncode == 1
    assert "alice already voted" in again.stderr
    second = cli("answer", "q1", "approve", "--by", "bob")
    assert second.returncode == 0, second.stderr
    assert "answered by bob" in second.stdout
    third = cli("answer", "q1", "approve", "--by", "carol")
    assert third.returncode == 1
    assert "already answered by bob" in third.stderr
    with SqliteEntry(path) as entry:
        [received] = entry.receive(10)
    assert received.message["answer"] == {"action": "approve"}
    assert received.message["answered_by"] == "bob"
    assert received.message["identity_source"] == "claimed"


def test_a_reject_through_the_cli_vetoes() -> None:
    path = default_inbox_path()
    ask(path, quorum=2)
    assert cli("answer", "q1", "approve", "--by", "alice").returncode == 0
    vetoed = cli("answer", "q1", "reject", "--by", "carol")
    assert vetoed.returncode == 0, vetoed.stderr
    assert "answered by carol" in vetoed.stdout
    with SqliteEntry(path) as entry:
        [received] = entry.receive(10)
    assert received.message["answer"] == {"action": "reject"}
