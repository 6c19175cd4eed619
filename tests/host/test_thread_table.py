"""SqliteThreadTable: one row per thread in a table it creates or extends, with clear errors."""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent_wait.host import SqliteThreadTable

COLUMNS = {"record": "TEXT NOT NULL", "note": "TEXT"}
UPSERT = (
    'INSERT INTO "runs" (thread_id, record, note) VALUES (?, ?, ?) '
    "ON CONFLICT(thread_id) DO UPDATE SET record = excluded.record, note = excluded.note"
)


def test_rows_are_replaced_and_outlive_the_object(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "runs.sqlite3"
    with SqliteThreadTable(path, table="runs", columns=COLUMNS) as table:
        assert table.execute('SELECT record FROM "runs" WHERE thread_id = ?', ("t",)) == []
        assert table.execute(UPSERT, ("t", "one", None)) == []
        table.execute(UPSERT, ("t", "two", "n"))
        table.execute(UPSERT, ("u", "three", None))
    assert (table.path, table.table) == (path, "runs")
    # Reopened on next use after close().
    assert table.execute('SELECT record, note FROM "runs" WHERE thread_id = ?', ("t",)) == [
        ("two", "n")
    ]
    table.close()
    table.close()
    other = sqlite3.connect(path)
    assert other.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert other.execute("SELECT thread_id FROM runs ORDER BY thread_id").fetchall() == [
        ("t",),
        ("u",),
    ]
    other.close()
    assert repr(table) == f"<SqliteThreadTable {str(path)!r} table='runs'>"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_a_new_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "private" / "runs.sqlite3"
    SqliteThreadTable(path, table="runs", columns=COLUMNS).execute(UPSERT, ("t", "r", None))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_a_table_of_an_earlier_version_gains_the_new_columns_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE runs (thread_id TEXT PRIMARY KEY, record TEXT NOT NULL)")
    old.execute("INSERT INTO runs VALUES ('t', 'kept')")
    old.commit()
    old.close()
    table = SqliteThreadTable(path, table="runs", columns=COLUMNS)
    assert table.execute('SELECT record, note FROM "runs"') == [("kept", None)]
    table.execute(UPSERT, ("t", "new", "n"))
    table.close()
    # A second store on the same file finds the column there and adds nothing.
    again = SqliteThreadTable(path, table="runs", columns=COLUMNS)
    assert again.execute('SELECT record, note FROM "runs"') == [("new", "n")]
    again.close()


def test_one_connection_serves_several_threads(tmp_path: Path) -> None:
    table = SqliteThreadTable(tmp_path / "runs.sqlite3", table="runs", columns=COLUMNS)

    def work(index: int) -> None:
        for turn in range(5):
            table.execute(UPSERT, (f"t-{index}", str(turn), None))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))  # raises what a thread raised
    assert table.execute('SELECT count(*), min(record) FROM "runs"') == [(4, "4")]
    table.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": " "}, "path: expected a file path, got ' '"),
        ({"path": None}, "path: expected a file path, got None"),
        ({"table": "bad name;"}, "table: expected a plain SQL identifier .*got 'bad name;'"),
        ({"columns": {"x y": "TEXT"}}, "columns: expected a plain SQL identifier .*got 'x y'"),
        ({"columns": {}}, r"columns: expected the columns after thread_id, got \{\}"),
        ({"columns": {"thread_id": "TEXT"}}, "columns: expected the columns after thread_id"),
        ({"timeout": 0}, "timeout: expected positive seconds, got 0"),
        ({"timeout": True}, "timeout: expected positive seconds, got True"),
    ],
)
def test_options_are_checked_naming_the_field_and_value(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    given: dict[str, object] = {
        "path": tmp_path / "runs.sqlite3",
        "table": "runs",
        "columns": COLUMNS,
        **options,
    }
    with pytest.raises(ValueError, match=message):
        SqliteThreadTable(**given)  # type: ignore[arg-type]
    assert not (tmp_path / "runs.sqlite3").exists()
