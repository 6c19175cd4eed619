"""The question lifecycle in the embedded sqlite store (the file the sqlite announcer writes)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_wait.core import BaseAnnounce, Question, WaitPolicy, publish
from agent_wait.core._sqlite import DEFAULT_TABLE, SqliteAnnounce, default_inbox_path
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.core._store import QuestionStatus, QuestionStore
from agent_wait.testing import StoreContract

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


class TestSqliteQuestionStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.path = tmp_path / "inbox.sqlite3"

    def make_store(self) -> QuestionStore:
        return SqliteQuestionStore(self.path)

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        assert isinstance(store, SqliteQuestionStore)
        return SqliteAnnounce(store.path)


def ask(path: Path, question_id: str = "q1", *, thread_id: str = "t1", **policy: object) -> None:
    publish(
        [Question(question_id=question_id, question={"n": 1}, policy=WaitPolicy(**policy))],  # type: ignore[arg-type]
        thread_id,
        SqliteAnnounce(path),
        strict=True,
        clock=lambda: T0,
    )


RACER = """
import json, sys
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.core._store import QuestionStatus
path, name, go = sys.argv[1:]
import os, time
while not os.path.exists(go):
    time.sleep(0.001)
with SqliteQuestionStore(path, timeout=30) as store:
    done = store.transition("t1", "q1", QuestionStatus(sys.argv[2].split("-")[0]), by=name,
                            answer={"action": name})
print(json.dumps({"won": done.won, "by": done.question.answered_by,
                  "status": done.question.status}))
"""


def test_processes_racing_on_one_question_produce_one_close(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, timeout="PT1H", default={"action": "reject"})
    go = tmp_path / "go"
    names = [f"answered-{i}" for i in range(4)] + [f"expired-{i}" for i in range(2)]
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(path), name, str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    go.write_text("")
    results = [json.loads(racer.communicate(timeout=60)[0]) for racer in racers]
    winners = [r for r in results if r["won"]]
    assert len(winners) == 1, results
    assert {(r["by"], r["status"]) for r in results} == {
        (winners[0]["by"], winners[0]["by"].split("-")[0])
    }
    with SqliteQuestionStore(path) as store:
        [stored] = store.find("q1")
    assert stored.answered_by == winners[0]["by"]
    assert stored.answer == {"action": winners[0]["by"]}


def test_overdue_lookup_is_an_index_search(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, timeout="PT1H")
    with SqliteQuestionStore(path) as store:
        assert [
            q.envelope.question_id for q in store.open_questions_past("2026-09-12T00:00:00Z")
        ] == ["q1"]
    connection = sqlite3.connect(path)
    plan = connection.execute(
        f'EXPLAIN QUERY PLAN SELECT envelope FROM "{DEFAULT_TABLE}" '
        "WHERE status = ? AND expires_at < ? ORDER BY expires_at, rowid",
        ("open", "2026-09-12T00:00:00Z"),
    ).fetchall()
    by_question = connection.execute(
        f'EXPLAIN QUERY PLAN SELECT envelope FROM "{DEFAULT_TABLE}" WHERE question_id = ?', ("q1",)
    ).fetchall()
    connection.close()
    details = [str(step[-1]) for step in plan]
    assert any(
        f"SEARCH {DEFAULT_TABLE} USING INDEX {DEFAULT_TABLE}_by_status (status=? AND expires_at<?)"
        in detail
        for detail in details
    ), details
    assert not any(detail.startswith(f"SCAN {DEFAULT_TABLE}") for detail in details), details
    assert any(f"{DEFAULT_TABLE}_by_question" in str(step) for step in by_question), by_question


OLD_SCHEMA = (
    f'CREATE TABLE "{DEFAULT_TABLE}" ('
    "pk TEXT NOT NULL, sk TEXT NOT NULL, status TEXT NOT NULL, "
    "type TEXT NOT NULL, event_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
    "question_id TEXT NOT NULL, question TEXT, allowed_actions TEXT NOT NULL, "
    'expires_at TEXT NOT NULL, "default" TEXT, answer_ttl TEXT, source TEXT, '
    "reply_to TEXT, reply_with TEXT NOT NULL, correlation TEXT, tags TEXT NOT NULL, "
    "envelope TEXT NOT NULL, PRIMARY KEY (pk, sk))"
)


def test_a_file_from_before_the_lifecycle_is_migrated_in_place(tmp_path: Path) -> None:
    source = tmp_path / "new.sqlite3"
    ask(source, timeout="PT1H")
    old = tmp_path / "old.sqlite3"
    connection = sqlite3.connect(old)
    connection.execute(OLD_SCHEMA)
    copy = sqlite3.connect(source)
    columns = [row[1] for row in connection.execute(f'PRAGMA table_info("{DEFAULT_TABLE}")')]
    quoted = ", ".join(f'"{c}"' for c in columns)
    for row in copy.execute(f'SELECT {quoted} FROM "{DEFAULT_TABLE}"'):
        connection.execute(
            f'INSERT INTO "{DEFAULT_TABLE}" VALUES ({", ".join("?" for _ in columns)})', row
        )
    connection.commit()
    copy.close()
    connection.close()

    with SqliteQuestionStore(old) as store:
        [before] = store.find("q1")
        assert before.is_open
        assert before.answered_by is None
        done = store.transition("t1", "q1", QuestionStatus.ANSWERED, by="alice", answer=1)
        assert done.won
    # The announcer still writes to the migrated file, and a republish keeps the close.
    ask(old, timeout="PT1H")
    ask(old, "q2", timeout="PT1H")
    with SqliteQuestionStore(old) as store:
        assert [q.status for q in store.find("q1")] == ["answered"]
        assert [q.status for q in store.find("q2")] == ["open"]


def test_the_default_file_is_the_announcers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "home"))
    ask(default_inbox_path())
    store = SqliteQuestionStore()
    assert store.path == tmp_path / "home" / "inbox.sqlite3"
    assert [q.envelope.question_id for q in store.find("q1")] == ["q1"]
    store.close()


def test_one_question_id_in_two_threads_is_found_twice(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path, thread_id="a")
    ask(path, thread_id="b")
    with SqliteQuestionStore(path) as store:
        assert sorted(q.envelope.thread_id for q in store.find("q1")) == ["a", "b"]
        assert [q.envelope.thread_id for q in store.find("q1", thread_id="b")] == ["b"]


@pytest.mark.parametrize(
    ("status", "by", "message"),
    [
        ("open", "alice", "status: expected one of"),
        ("answered", " ", "by: expected who closes"),
    ],
)
def test_bad_transitions_name_the_field(tmp_path: Path, status: str, by: str, message: str) -> None:
    path = tmp_path / "inbox.sqlite3"
    ask(path)
    with SqliteQuestionStore(path) as store, pytest.raises(ValueError, match=message):
        store.transition("t1", "q1", QuestionStatus(status), by=by)


KILLED_AFTER_ANSWER = """
import os, signal, sys
from agent_wait.core._audit import audit_log_of
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.core._store import QuestionStatus
store = SqliteQuestionStore(sys.argv[1])
store.transition("t1", "q1", QuestionStatus.ANSWERED, by="ana", answer={"action": "approve"})
log = audit_log_of(store)
assert log is not None
log.append("t1", "q1", "answered", {"by": "ana"})
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_answer_committed_before_the_process_is_killed_is_kept(tmp_path: Path) -> None:
    # The store and its audit log commit without a file sync each (synchronous=NORMAL in WAL
    # mode): a process killed right after its commits, connections never closed, loses none.
    path = tmp_path / "inbox.sqlite3"
    ask(path)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_ANSWER, str(path)], capture_output=True, check=False
    )
    assert killed.returncode == -9, killed.stderr.decode()
    with SqliteQuestionStore(path) as store:
        (question,) = store.find("q1", "t1")
        entries = store.audit_log().entries("q1", "t1")
    assert question.status == QuestionStatus.ANSWERED
    assert question.answer == {"action": "approve"}
    assert [e.kind for e in entries][-1] == "answered"


def test_the_store_and_audit_log_skip_the_sync_per_commit_the_ledger_keeps(tmp_path: Path) -> None:
    from agent_wait.core._ledger import SqliteLedger

    path = tmp_path / "inbox.sqlite3"
    ask(path)
    with SqliteQuestionStore(path) as store:
        store.find("q1", "t1")
        log = store.audit_log()
        log.entries("q1", "t1")
        with store._store.connect() as connection:  # pyright: ignore[reportPrivateUsage]
            assert connection.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        with log._store.connect() as connection:  # pyright: ignore[reportPrivateUsage]
            assert connection.execute("PRAGMA synchronous").fetchone() == (1,)
    ledger = SqliteLedger(path)
    try:
        with ledger._store.connect() as connection:  # pyright: ignore[reportPrivateUsage]
            assert connection.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
    finally:
        ledger.close()
