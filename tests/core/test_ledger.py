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


def test_only_a_claim_syncs_the_file_on_its_own(tmp_path: Path) -> None:
    # A claim must be on the disk before the body runs; a finish or a release lost to a power
    # loss leaves the call executing, which asks a person: the next synced commit carries them.
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3")
    settings: list[tuple[str, int]] = []
    with ledger._store.connect() as connection:  # pyright: ignore[reportPrivateUsage]

        def traced(statement: str) -> None:
            verb = statement.split()[0].upper()
            if verb in {"INSERT", "UPDATE", "DELETE"}:
                settings.append((verb, synchronous[0]))
            elif statement.upper().startswith("PRAGMA SYNCHRONOUS="):
                synchronous[0] = {"NORMAL": 1, "FULL": 2}[statement.split("=")[1].upper()]

        synchronous = [connection.execute("PRAGMA synchronous").fetchone()[0]]
        connection.set_trace_callback(traced)
    assert ledger.claim("call-1", 0, "token-a") is None
    assert ledger.finish("call-1", 0, "token-a", {"refund": "r-1"}).done
    assert ledger.claim("call-2", 0, "token-b") is None
    ledger.release("call-2", 0, "token-b")
    assert ledger.claim("call-2", 0, "token-c") is None
    assert settings == [("INSERT", 2), ("UPDATE", 1), ("INSERT", 2), ("DELETE", 1), ("INSERT", 2)]
    with ledger._store.connect() as connection:  # pyright: ignore[reportPrivateUsage]
        connection.set_trace_callback(None)
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == 2
    ledger.close()
    reopened = SqliteLedger(tmp_path / "ledger.sqlite3")
    assert [(r.key, r.done, r.result) for r in reopened.records()] == [
        ("call-1", True, {"refund": "r-1"}),
        ("call-2", False, None),
    ]
    reopened.close()
