"""The execution ledger: one claim per attempt, done only under its fencing token."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from agent_wait.core import ExecutionLedger, SqliteLedger, configured_ledger
from agent_wait.core._sqlite import default_inbox_path


def test_one_claim_wins_and_only_its_token_marks_it_done(tmp_path: Path) -> None:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        assert isinstance(ledger, ExecutionLedger)
        assert ledger.claim("k", 0, "t1") is None
        found = ledger.claim("k", 0, "t2")
        assert found is not None
        assert (found.token, found.done) == ("t1", False)
        stale = ledger.finish("k", 0, "t2", {"refunded": 1})
        assert (stale.token, stale.done, stale.result) == ("t1", False, None)
        done = ledger.finish("k", 0, "t1", {"refunded": 41000})
        assert (done.done, done.result) == (True, {"refunded": 41000})
        # Done stays done: a later finish or release changes nothing.
        assert ledger.finish("k", 0, "t1", "other").result == {"refunded": 41000}
        ledger.release("k", 0, "t1")
        assert ledger.claim("k", 0, "t3") == done
        # Another attempt, another record.
        assert ledger.claim("k", 1, "t4") is None


def test_a_released_claim_can_be_claimed_again(tmp_path: Path) -> None:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        assert ledger.claim("k", 0, "t1") is None
        ledger.release("k", 0, "other")  # not its token: kept
        assert ledger.claim("k", 0, "t2") is not None
        ledger.release("k", 0, "t1")
        assert ledger.claim("k", 0, "t2") is None


def test_finish_of_nothing_recorded_raises(tmp_path: Path) -> None:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger, pytest.raises(LookupError):
        ledger.finish("k", 0, "t", None)


def test_concurrent_claims_across_connections_have_one_winner(tmp_path: Path) -> None:
    ledgers = [SqliteLedger(tmp_path / "ledger.sqlite3") for _ in range(8)]
    won: list[int] = []
    start = threading.Barrier(len(ledgers))

    def claim(index: int) -> None:
        start.wait()
        if ledgers[index].claim("k", 0, f"t{index}") is None:
            won.append(index)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(ledgers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for ledger in ledgers:
        ledger.close()
    assert len(won) == 1


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
