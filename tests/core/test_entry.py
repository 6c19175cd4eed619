"""Entry points: the embedded sqlite entry point, entry points by name, their configuration."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    ConfigError,
    PluginNotFoundError,
    SqliteEntry,
    entry,
    hookimpl,
    publish,
)
from agent_wait.core._entries import default_entry, load_entry_config
from agent_wait.core._entry import SHOWN_BODY_LENGTH, EntryPoint
from agent_wait.core._sqlite import DEFAULT_TABLE, SqliteAnnounce, default_inbox_path
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.core.transport import MAX_MESSAGE_BYTES, Poison, dead_letter, read_message
from agent_wait.testing import EntryContract, registered_plugin, sample_questions


class TestSqliteEntry(EntryContract):
    tells_oldest_waiting = True

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.path = tmp_path / "inbox.sqlite3"

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        return SqliteEntry(
            self.path,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            poll_interval=0.02,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        # As another program writing the table would: bytes that are not text go in as a blob.
        entry.dead_letters()  # creates the table
        connection = sqlite3.connect(self.path)
        with connection:
            connection.execute(
                "INSERT INTO agent_wait_messages (thread_id, body, state, attempts, visible_at, "
                "sent_at) VALUES (?, ?, 'ready', 0, 0, '2026-01-01T00:00:00Z')",
                (thread_id, body),
            )
        connection.close()


def test_messages_live_beside_the_inbox_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    publish(sample_questions(1), "t1", SqliteAnnounce(path), strict=True)
    with SqliteEntry(path) as messages:
        messages.send({"thread_id": "t1", "question_id": "q", "answer": 1})
    connection = sqlite3.connect(path)
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    connection.close()
    assert {DEFAULT_TABLE, "agent_wait_messages"} <= tables


RECEIVER = """
import json, sys, time
from agent_wait.core import SqliteEntry
seen = []
with SqliteEntry(sys.argv[1], poll_interval=0.01) as messages:
    idle = time.monotonic()
    while time.monotonic() - idle < 1.0:
        for received in messages.receive(4, wait=0.05):
            seen.append([received.thread_id, received.message["n"]])
            assert messages.ack(received)
            idle = time.monotonic()
print(json.dumps(seen))
"""


def test_sqlite_polls_soon_after_a_message_and_less_often_while_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_wait.core._sqlite_entry as module

    pauses: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        pauses.append(round(seconds, 6))
        real_sleep(seconds)

    # Records the pauses the receiver asks for (and still takes them): their lengths, not
    # their timing, are what is checked.
    monkeypatch.setattr(module.time, "sleep", sleep)
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", busy_poll_interval=0.01, poll_interval=0.04)
    assert entry.receive(wait=1.0) == []
    assert pauses[:5] == [0.01, 0.02, 0.04, 0.04, 0.04]  # idle: no more often than poll_interval
    entry.send({"thread_id": "t-1", "answer": {"action": "approve"}})
    [received] = entry.receive(wait=0.2)
    entry.ack(received)
    pauses.clear()
    assert entry.receive(wait=0.5) == []
    assert pauses[:2] == [0.01, 0.02]  # right after a message: short again
    assert SqliteEntry(tmp_path / "x.sqlite3", poll_interval=0.02).busy_poll_interval == 0.02


def test_processes_receiving_together_each_message_once_in_thread_order(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    with SqliteEntry(path) as messages:
        for n in range(40):
            messages.send({"thread_id": f"t{n % 4}", "input": None, "n": n})
    receivers = [
        subprocess.Popen(
            [sys.executable, "-c", RECEIVER, str(path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    seen = [json.loads(r.communicate(timeout=60)[0]) for r in receivers]
    everything = sorted(n for part in seen for _, n in part)
    assert everything == list(range(40)), "a message was lost or handed out twice"
    for part in seen:
        for thread in {t for t, _ in part}:
            mine = [n for t, n in part if t == thread]
            assert mine == sorted(mine), f"thread {thread} out of order in one receiver"


def test_entry_by_name_checks_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = entry("sqlite", path=tmp_path / "x.sqlite3", visibility_timeout=30)
    assert isinstance(built, SqliteEntry)
    assert (built.name, built.visibility_timeout, built.path) == (
        "sqlite",
        30.0,
        tmp_path / "x.sqlite3",
    )
    with pytest.raises(
        ConfigError,
        match=r"entry point 'sqlite': unknown option 'max_attempt'; did you mean 'max_attempts'\?",
    ):
        entry("sqlite", max_attempt=3)
    with pytest.raises(
        ConfigError,
        match=r"entry point 'sqlite': option 'visibility_timeout': .* than 0 \(got 0\)",
    ):
        entry("sqlite", visibility_timeout=0)
    with pytest.raises(
        ConfigError, match=r"entry point 'sqlite': option 'table': .* \(got 'bad name'\)"
    ):
        SqliteEntry(tmp_path / "x.sqlite3", table="bad name")
    with pytest.raises(ConfigError, match=r"option 'retry_delay': .*\(got -1\)"):
        entry("sqlite", retry_delay=-1)
    with pytest.raises(
        ConfigError, match=r"option 'max_attempts': expected a number.*\(got True\)"
    ):
        entry("sqlite", max_attempts=True)
    with pytest.raises(
        PluginNotFoundError, match=r"unknown entry point 'sqlit'.*did you mean 'sqlite'"
    ):
        entry("sqlit")
    with pytest.raises(ConfigError, match="never a module path"):
        entry("os:system")
    monkeypatch.setenv("MESSAGES_FILE", str(tmp_path / "from-env.sqlite3"))
    assert entry("sqlite", path_env="MESSAGES_FILE").path == tmp_path / "from-env.sqlite3"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="'MISSING_VAR', which is not set"):
        entry("sqlite", path_env="MISSING_VAR")


def test_an_entry_point_without_an_options_model_is_checked_against_its_constructor(
    tmp_path: Path,
) -> None:
    class Unchecked(SqliteEntry):
        options_model = None

    class Unnamed(SqliteEntry):
        options_model = None

        def __init__(self, **options: Any) -> None:
            super().__init__(**options)

    class Plugin:
        @hookimpl
        def register_entry_points(self, register: RegisterTarget) -> None:
            register("unchecked", Unchecked)
            register("unnamed", Unnamed)

    with registered_plugin(Plugin(), "test-unchecked"):
        built = entry("unchecked", path=tmp_path / "x.sqlite3")
        built.close()
        assert isinstance(built, Unchecked)
        with pytest.raises(
            ConfigError,
            match=r"entry point 'unchecked': unknown option 'pth'; did you mean 'path'\?",
        ):
            entry("unchecked", pth=tmp_path / "x.sqlite3")
        with pytest.raises(
            ConfigError,
            match=r"entry point 'unnamed': .* declares no options model and its constructor "
            r"takes \*\*kwargs",
        ):
            entry("unnamed", path=tmp_path / "y.sqlite3")


def test_default_entry_is_sqlite_in_the_inbox_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "home"))
    built = default_entry()
    assert isinstance(built, SqliteEntry)
    assert built.path == default_inbox_path() == tmp_path / "home" / "inbox.sqlite3"


def test_entry_configuration_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agent-wait.entry]\nuse = "sqlite"\npath = "py.sqlite3"\n', encoding="utf-8"
    )
    assert load_entry_config()[0].options == {"path": "py.sqlite3"}
    (tmp_path / "agent-wait.toml").write_text(
        '[[announce]]\nuse = "log"\n\n[entry]\nuse = "sqlite"\npath = "file.sqlite3"\nmax_attempts = 2\n',
        encoding="utf-8",
    )
    configured, where = load_entry_config()
    assert (configured.use, configured.options, where) == (
        "sqlite",
        {"path": "file.sqlite3", "max_attempts": 2},
        str(tmp_path / "agent-wait.toml"),
    )
    built = default_entry()
    assert (built.max_attempts, built.path) == (2, Path("file.sqlite3"))  # type: ignore[attr-defined]
    monkeypatch.setenv("AGENT_WAIT_ENTRY", '{"use": "sqlite", "path": "env.sqlite3"}')
    assert load_entry_config()[0].options == {"path": "env.sqlite3"}
    monkeypatch.setenv("AGENT_WAIT_ENTRY", '{"use": "sqlite", "max_attemps": 1}')
    with pytest.raises(
        ConfigError,
        match=r"AGENT_WAIT_ENTRY: entry point 'sqlite': unknown option 'max_attemps'; did you mean 'max_attempts'",
    ):
        default_entry()
    monkeypatch.setenv("AGENT_WAIT_ENTRY", "{not json")
    with pytest.raises(ConfigError, match="AGENT_WAIT_ENTRY: invalid JSON at line 1"):
        load_entry_config()
    monkeypatch.setenv("AGENT_WAIT_ENTRY", '{"use": "../evil"}')
    with pytest.raises(ConfigError, match="never a module path"):
        load_entry_config()


def test_a_message_larger_than_any_receiver_reads_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    with SqliteEntry(tmp_path / "inbox.sqlite3") as messages:
        large = {"thread_id": "t", "input": "x" * MAX_MESSAGE_BYTES}
        with pytest.raises(ValueError, match=f"more than the {MAX_MESSAGE_BYTES} an entry point"):
            messages.send(large)
        assert messages.receive(1) == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "not JSON"),
        (b"\xef\xbb\xbf{}", "not JSON"),  # a byte-order mark
        ("[" * 100_000, "not JSON"),  # nested past the parser's recursion limit
        (b'{"thread_id": "t", "input": ' + b"9" * 5000 + b"}", "not JSON"),  # past int digits
        ('{"thread_id": "\ud800", "input": 1}', "not UTF-8 text"),  # a lone surrogate
        (b'"text"', "JSON str, not an object"),
        (b"null", "JSON NoneType, not an object"),
        (b'{"thread_id": "", "input": 1}', "not a start message or an answer"),
        (b'{"thread_id": "t", "question_id": "q"}', "not a start message or an answer"),
    ],
)
def test_read_message_names_why_a_body_is_poison_and_never_raises(
    body: bytes | str, reason: str
) -> None:
    read = read_message(body)
    assert isinstance(read, Poison)
    assert read.error.startswith(f"PoisonMessage: {reason}")
    letter = dead_letter("1", "t", body, 1, read.error, "2026-01-01T00:00:00Z")
    assert letter.error == read.error


def test_read_message_returns_a_message_as_sent() -> None:
    body = '{"thread_id": "t ✓", "question_id": "q", "answer": {"n": [1.5, null]}}'
    assert read_message(body) == read_message(body.encode()) == json.loads(body)


def test_a_dead_letter_shows_an_unreadable_body_escaped_and_cut() -> None:
    letter = dead_letter("1", "t", b"\x1b[2J\x00\xff\xe2\x80\xae" + b"x" * 10_000, 1, "e", "d")
    assert letter.message == {}
    assert letter.body is not None
    assert letter.body.startswith("\\x1b[2J\\x00\\xff\\u202exxx")
    assert letter.body.endswith("... (10009 bytes)")
    assert len(letter.body) < SHOWN_BODY_LENGTH + 30
    readable = dead_letter("1", "t", b'{"thread_id": 5}', 1, "e", "d")
    assert (readable.message, readable.body) == ({"thread_id": 5}, None)


def test_a_kit_without_send_raw_skips_the_poison_cases_saying_why(tmp_path: Path) -> None:
    class WrittenBeforePoisonCases(EntryContract):
        def make_entry(
            self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
        ) -> EntryPoint:
            return SqliteEntry(tmp_path / "inbox.sqlite3", visibility_timeout=visibility_timeout)

    kit = WrittenBeforePoisonCases()
    with kit.make_entry(visibility_timeout=1.0, max_attempts=3, retry_delay=0.0) as built:
        for case in (
            lambda: kit.test_poison_is_dead_lettered_at_once_and_its_thread_goes_on(
                built, "not-json"
            ),
            lambda: kit.test_a_redriven_poison_message_is_dead_lettered_again(built),
        ):
            with pytest.raises(pytest.skip.Exception, match="has no send_raw"):
                case()
