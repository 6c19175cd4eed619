"""The embedded sqlite announcer and its deprecated reader (SqliteInbox; SqliteQuestionStore is the API)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, Question, WaitEnvelope, WaitPolicy, announcer, publish
from agent_wait.core._sqlite import (
    DEFAULT_TABLE,
    NO_EXPIRY,
    SqliteAnnounce,
    SqliteInbox,
    default_inbox_path,
)
from agent_wait.testing import AnnouncerContract, sample_questions

# SqliteInbox is deprecated (SqliteQuestionStore reads the same table): its behaviour is still
# tested for the release that keeps it.
pytestmark = pytest.mark.filterwarnings("ignore:SqliteInbox is deprecated:DeprecationWarning")

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def clock() -> datetime:
    return T0


def rows(path: Path, table: str = DEFAULT_TABLE) -> list[dict[str, Any]]:
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
    finally:
        connection.close()


class TestSqliteContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path

    def make_announcer(self) -> BaseAnnounce:
        return SqliteAnnounce(self.directory / "db" / "inbox.sqlite3")

    def make_failing_announcer(self) -> BaseAnnounce:
        blocker = self.directory / "blocker"
        blocker.write_text("")
        return SqliteAnnounce(blocker / "inbox.sqlite3")

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        assert isinstance(announcer, SqliteAnnounce)
        with SqliteInbox(announcer.path) as inbox:
            return [json.loads(row["envelope"]) for row in rows(inbox.path)]


def test_row_has_the_dynamodb_shape(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    [question] = sample_questions(1)
    report = publish([question], "order-4471", SqliteAnnounce(path), clock=clock, strict=True)
    envelope = report.envelopes[0]
    [row] = rows(path)
    assert row["pk"] == "THREAD#order-4471"
    assert row["sk"] == f"WAIT#{question.question_id}"
    assert row["status"] == "open"
    data = envelope.to_dict()
    for name in ("type", "event_id", "thread_id", "question_id", "expires_at", "answer_ttl"):
        assert row[name] == data[name]
    for name in ("question", "allowed_actions", "default", "reply_with", "tags"):
        assert json.loads(row[name]) == data[name]
    assert row["source"] == '{"function":"issue_refund"}'
    assert row["reply_to"] is None
    assert row["correlation"] is None
    assert row["envelope"].encode() == envelope.to_json()
    assert row["expires_at"] == "2026-09-14T09:00:00Z"


def test_missing_expiry_is_stored_as_far_future_but_envelope_keeps_null(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    question = Question(question_id="q1", question="ok?", policy=WaitPolicy())
    publish([question], "t", SqliteAnnounce(path), strict=True)
    [row] = rows(path)
    assert row["expires_at"] == NO_EXPIRY
    assert json.loads(row["envelope"])["expires_at"] is None
    assert row["question"] == '"ok?"'
    assert row["default"] is None
    with SqliteInbox(path) as inbox:
        item = inbox.get("t", "q1")
        assert item is not None
        assert item.envelope.expires_at is None
        assert inbox.open_questions_past(datetime(9000, 1, 1, tzinfo=UTC)) == []


def test_republish_never_overwrites_a_row_a_consumer_changed(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    sink = SqliteAnnounce(path)
    [question] = sample_questions(1)
    first = publish([question], "t", sink, strict=True)
    with SqliteInbox(path) as inbox:
        assert inbox.mark("t", question.question_id, "answered") is True
    again = publish([question, *sample_questions(1)], "t", sink, strict=True)
    assert again.ok
    with SqliteInbox(path) as inbox:
        item = inbox.get("t", question.question_id)
        assert item is not None
        assert item.status == "answered"
        assert item.envelope.event_id == first.envelopes[0].event_id
    assert len(rows(path)) == 2


def test_inbox_queries(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    sink = SqliteAnnounce(path)
    soon = Question(
        question_id="soon",
        question=1,
        policy=WaitPolicy(timeout="PT1H", default={"action": "reject"}),
    )
    later = Question(question_id="later", question=2, policy=WaitPolicy(timeout="P3D"))
    never = Question(question_id="never", question=3)
    publish([never, later, soon], "t", sink, clock=clock, strict=True)
    with SqliteInbox(path) as inbox:
        assert [i.envelope.question_id for i in inbox.open_questions()] == [
            "soon",
            "later",
            "never",
        ]
        assert inbox.open_questions_past(T0) == []
        past = inbox.open_questions_past(T0 + timedelta(hours=2))
        assert [i.envelope.question_id for i in past] == ["soon"]
        assert past[0].envelope.default == {"action": "reject"}
        assert past[0].status == "open"
        assert [
            i.envelope.question_id for i in inbox.open_questions_past("2026-09-20T00:00:00Z")
        ] == [
            "soon",
            "later",
        ]
        assert inbox.mark("t", "soon", "answered")
        assert inbox.open_questions_past(T0 + timedelta(hours=2)) == []
        assert [i.envelope.question_id for i in inbox.open_questions()] == ["later", "never"]
        assert inbox.get("t", "missing") is None
        assert inbox.get("other-thread", "soon") is None
        assert inbox.mark("t", "missing", "answered") is False
        with pytest.raises(ValueError, match="status"):
            inbox.mark("t", "later", "")
        with pytest.raises(ValueError, match="timezone"):
            inbox.open_questions_past(datetime(2026, 1, 1))


def test_overdue_query_uses_the_status_index(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    publish(sample_questions(1), "t", SqliteAnnounce(path), strict=True)
    connection = sqlite3.connect(path)
    plan = connection.execute(
        f'EXPLAIN QUERY PLAN SELECT envelope FROM "{DEFAULT_TABLE}" '
        "WHERE status = 'open' AND expires_at < '2026' ORDER BY expires_at"
    ).fetchall()
    connection.close()
    assert any(f"{DEFAULT_TABLE}_by_status" in str(step) for step in plan), plan


def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    publish(sample_questions(1), "t", SqliteAnnounce(path), strict=True)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection.close()


def test_deliver_many_is_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    sink = SqliteAnnounce(path)
    statements: list[str] = []
    publish(sample_questions(1), "t", sink, strict=True)  # opens the connection
    assert sink._store._connection is not None
    sink._store._connection.set_trace_callback(statements.append)
    publish(sample_questions(5), "t", sink, strict=True)
    assert statements[0] == "BEGIN IMMEDIATE"
    assert statements[-1] == "COMMIT"
    assert sum(s.startswith("INSERT") for s in statements) == 5
    assert len(rows(path)) == 6


def test_failed_batch_rolls_back_and_reports_every_envelope(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    sink = SqliteAnnounce(path)
    publish(sample_questions(1), "t", sink, strict=True)
    # A trigger makes the third insert fail, as a full disk or a constraint would.
    connection = sqlite3.connect(path)
    connection.execute(
        f'CREATE TRIGGER refuse BEFORE INSERT ON "{DEFAULT_TABLE}" '
        "WHEN NEW.question_id LIKE '%-2' BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
    )
    connection.commit()
    connection.close()
    report = publish(sample_questions(3), "t", sink)
    assert len(report.failures) == 3
    assert "refused by trigger" in (report.failures[0].error or "")
    assert len(rows(path)) == 1
    # The connection is usable again after the rollback.
    assert publish([Question(question_id="x", question=1)], "t", sink).ok


def test_threads_share_one_announcer(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    sink = SqliteAnnounce(path)
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            for _ in range(5):
                publish(sample_questions(3), f"t-{index}", sink, strict=True)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(rows(path)) == 6 * 5 * 3


_WRITER = """
import sys
from agent_wait.core import publish
from agent_wait.core._sqlite import SqliteAnnounce
from agent_wait.testing import sample_questions
sink = SqliteAnnounce(sys.argv[1])
for _ in range(10):
    publish(sample_questions(5), "proc-" + sys.argv[2], sink, strict=True)
"""


def test_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    processes = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(i)]) for i in range(3)
    ]
    # Read while they write: WAL lets readers run alongside the writer.
    with SqliteInbox(path) as inbox:
        inbox.open_questions()
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0]
    with SqliteInbox(path) as inbox:
        assert len(inbox.open_questions()) == 3 * 10 * 5


def test_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    assert default_inbox_path({"AGENT_WAIT_HOME": str(home)}) == home / "inbox.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    # AGENT_WAIT_HOME wins over the platform directory.
    assert default_inbox_path({"AGENT_WAIT_HOME": str(home)}) == home / "inbox.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_HOME", "")
    from platformdirs import user_data_path

    expected = user_data_path("agent-wait", appauthor=False) / "inbox.sqlite3"
    assert default_inbox_path() == default_inbox_path({}) == expected
    # The test environment sets AGENT_WAIT_HOME (tests/conftest.py); announcers read it at build time.
    monkeypatch.setenv("AGENT_WAIT_HOME", str(home))
    sink = SqliteAnnounce()
    assert sink.path == home / "inbox.sqlite3"
    publish(sample_questions(1), "t", sink, strict=True)
    assert (home / "inbox.sqlite3").is_file()
    assert SqliteInbox().path == sink.path


def test_custom_table_and_foreign_table(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite3"
    publish(sample_questions(2), "t", SqliteAnnounce(path, table="approvals"), strict=True)
    with SqliteInbox(path, table="approvals") as inbox:
        assert len(inbox.open_questions()) == 2
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    connection.commit()
    connection.close()
    report = publish(sample_questions(1), "t", SqliteAnnounce(path, table="users"))
    assert not report.ok
    assert "exists without the inbox columns" in (report.failures[0].error or "")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table": "x; DROP TABLE y"}, "table"),
        ({"table": ""}, "table"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"path": ""}, "path"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SqliteAnnounce(**options)


def test_configured_by_name(tmp_path: Path) -> None:
    sink = announcer("sqlite", path=str(tmp_path / "x.sqlite3"), timeout=1)
    assert isinstance(sink, SqliteAnnounce)
    assert sink.name == "sqlite"


def test_close_then_deliver_reopens(tmp_path: Path) -> None:
    sink = SqliteAnnounce(tmp_path / "x.sqlite3")
    publish(sample_questions(1), "t", sink, strict=True)
    sink.close()
    publish(sample_questions(1), "t", sink, strict=True)
    sink.close()
    assert len(rows(tmp_path / "x.sqlite3")) == 2


def test_stored_envelope_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    report = publish(
        sample_questions(2), "t", SqliteAnnounce(path), reply_to={"queue": "a"}, strict=True
    )
    with SqliteInbox(path) as inbox:
        stored = [item.envelope for item in inbox.open_questions()]
    assert sorted(stored, key=lambda e: e.question_id) == sorted(
        report.envelopes, key=lambda e: e.question_id
    )
    assert all(isinstance(e, WaitEnvelope) for e in stored)


@pytest.fixture
def umask_022() -> Iterator[None]:
    # The usual umask, under which a file created without an explicit mode is world-readable.
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux paths")
def test_the_linux_default_path_is_where_it_always_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENT_WAIT_HOME")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_inbox_path() == tmp_path / ".local/share/agent-wait/inbox.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", "/data")
    assert default_inbox_path() == Path("/data/agent-wait/inbox.sqlite3")
    assert SqliteAnnounce().path == Path("/data/agent-wait/inbox.sqlite3")


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX HOME")
def test_the_default_path_is_the_platforms_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs
    from platformdirs.macos import MacOS

    # platformdirs picks its class by sys.platform when imported: macOS's, selected here.
    monkeypatch.setattr(platformdirs, "PlatformDirs", MacOS)
    monkeypatch.delenv("AGENT_WAIT_HOME")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    macos = tmp_path / "Library" / "Application Support" / "agent-wait" / "inbox.sqlite3"
    assert default_inbox_path() == macos
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "mine"))
    assert default_inbox_path() == tmp_path / "mine" / "inbox.sqlite3"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.usefixtures("umask_022")
def test_a_created_inbox_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_WAIT_HOME", str(home))
    with SqliteAnnounce() as sink:
        publish(sample_questions(2), "t", sink, strict=True)
        # While the connection is open the WAL and shared-memory files exist too.
        created = [
            home / name for name in ("inbox.sqlite3", "inbox.sqlite3-wal", "inbox.sqlite3-shm")
        ]
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in created} == {
            p.name: 0o600 for p in created
        }
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
@pytest.mark.usefixtures("umask_022")
def test_an_existing_inbox_keeps_its_owners_modes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    path = shared / "team.sqlite3"
    sqlite3.connect(path).close()
    path.chmod(0o640)
    with SqliteAnnounce(path) as sink:
        publish(sample_questions(1), "t", sink, strict=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755


# Each process opens a fresh file the way one kind of user does, at the parent's signal:
# a worker's entry point, a publishing host, an answer sent through the entry point, the store.
_FIRST_OPENER = """
import sys
from agent_wait.core import SqliteQuestionStore, publish
from agent_wait.core._sqlite import SqliteAnnounce
from agent_wait.core._sqlite_entry import SqliteEntry
from agent_wait.testing import sample_questions

role = int(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    path = line.strip()
    if role == 0:
        with SqliteEntry(path) as entry:
            entry.receive()
    elif role == 1:
        publish(sample_questions(1), f"thread-{role}", SqliteAnnounce(path), strict=True)
    elif role == 2:
        with SqliteEntry(path) as entry:
            entry.send({"type": "start", "thread_id": "t", "input": "go"})
    else:
        with SqliteQuestionStore(path) as store:
            store.open_questions()
    print("done", flush=True)
"""


def test_processes_open_a_fresh_inbox_at_the_same_moment(tmp_path: Path) -> None:
    # Switching a new file to WAL takes an exclusive lock that SQLite may refuse at once
    # (busy) without waiting; every opener must ride that out.
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _FIRST_OPENER, str(role % 4)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for role in range(8)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
        for round_ in range(25):
            path = tmp_path / f"inbox-{round_}.sqlite3"
            for process in processes:
                assert process.stdin is not None
                process.stdin.write(f"{path}\n")
                process.stdin.flush()
            for process in processes:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line == "done\n", f"round {round_}: a process failed (exit {process.wait()})"
    finally:
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
        codes = [process.wait(timeout=60) for process in processes]
    assert codes == [0] * 8


@pytest.mark.filterwarnings("default")
def test_sqlite_inbox_warns_that_it_is_deprecated(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="use agent_wait.core.SqliteQuestionStore"):
        SqliteInbox(tmp_path / "inbox.sqlite3").close()
