"""The sqlite execution ledger, and which ledger the configuration gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_wait.core import ExecutionLedger, SqliteLedger, configured_ledger
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.testing import LedgerContract


class TestSqliteLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _path(self, tmp_path: Path) -> None:
        self.path = tmp_path / "ledger.sqlite3"

    def make_ledger(self) -> ExecutionLedger:
        return SqliteLedger(self.path)


def test_the_configured_ledger_shares_the_sqlite_inbox_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = configured_ledger()
    assert isinstance(ledger, SqliteLedger)
    assert ledger.path == default_inbox_path()
    inbox = tmp_path / "elsewhere.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", f'[{{"use": "sqlite", "path": "{inbox}"}}]')
    moved = configured_ledger()
    assert isinstance(moved, SqliteLedger)
    assert moved.path == inbox
    assert configured_ledger() is moved


def test_table_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="table"):
        SqliteLedger(tmp_path / "ledger.sqlite3", table="x; drop")
