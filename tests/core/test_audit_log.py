"""The audit log in the sqlite inbox file: the audit log kit."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import AuditEntry, BaseAnnounce, QuestionStore, canonical_json
from agent_wait.core._audit import DEFAULT_AUDIT_TABLE, sqlite_audit_log
from agent_wait.core._sqlite import SqliteAnnounce
from agent_wait.core._sqlite_store import SqliteQuestionStore
from agent_wait.testing import AuditLogContract

_WHERE = "WHERE thread_id = ? AND question_id = ? AND seq = ?"


class TestSqliteAuditLog(AuditLogContract):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.path = tmp_path / "inbox.sqlite3"

    def make_store(self) -> QuestionStore:
        return SqliteQuestionStore(self.path)

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        return SqliteAnnounce(self.path)

    def _change(self, statement: str, *params: Any) -> None:
        with sqlite3.connect(self.path) as connection:
            connection.execute(statement, params)
        connection.close()

    def edit_entry(self, store: QuestionStore, entry: AuditEntry, data: dict[str, Any]) -> None:
        self._change(
            f'UPDATE "{DEFAULT_AUDIT_TABLE}" SET data = ? {_WHERE}',
            canonical_json(data),
            *(entry.thread_id, entry.question_id, entry.seq),
        )

    def remove_entry(self, store: QuestionStore, entry: AuditEntry) -> None:
        self._change(
            f'DELETE FROM "{DEFAULT_AUDIT_TABLE}" {_WHERE}',
            *(entry.thread_id, entry.question_id, entry.seq),
        )


def test_every_spelling_of_a_file_shares_one_audit_log(tmp_path: Path) -> None:
    # One log (one connection, one compare-and-set) per file, however its path is written.
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    file = tmp_path / "data" / "inbox.sqlite3"
    log = sqlite_audit_log(file)
    assert sqlite_audit_log(file) is log
    assert sqlite_audit_log(tmp_path / "link" / "inbox.sqlite3") is log
    assert sqlite_audit_log(tmp_path / "data" / ".." / "data" / "inbox.sqlite3") is log
    assert sqlite_audit_log(tmp_path / "data" / "other.sqlite3") is not log
    log.append("t-1", "q-1", "asked", {"event_id": "e-1"})
    assert [
        e.kind for e in sqlite_audit_log(tmp_path / "link" / "inbox.sqlite3").entries("q-1")
    ] == ["asked"]
