"""The execution ledger: an approved ``@wait`` body runs at most once, across crashes.

Before the body of an answered call runs, the call claims ``(key, attempt)`` as ``executing``
under a fresh fencing token; when it returns, the claim is marked ``done`` with the body's JSON
result. A later run of the same call (the redelivery of its answer after a crash) finds the
record: ``done`` returns the recorded result without running the body; ``executing`` without
``done`` means a run died inside the body, which may or may not have had its effect, so nothing
runs and a person is asked (see ``agent_wait.host.adapter``).

Records live in their own table beside the questions (the sqlite inbox file, the PostgreSQL
database), never in the question rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import sqlite3


from agent_wait.core._closing import Closing

DEFAULT_LEDGER_TABLE = "agent_wait_executions"


@dataclass(frozen=True, slots=True)
class Execution:
    """One recorded attempt at running an approved body.

    Attributes:
        key: The call's key (the framework's identity of the answered question).
        attempt: 0 for the first run; each "it did not happen" answer to an in-doubt question
            allows one more.
        token: The fencing token of the run that claimed it: only that run (or a person's
            "it happened") marks it done.
        done: True once the body returned (or a person said it happened).
        result: The body's result as JSON (None until done).
    """

    key: str
    attempt: int
    token: str
    done: bool = False
    result: Any = None


@runtime_checkable
class ExecutionLedger(Protocol):
    """Where execution records live. The sqlite ledger is the embedded default."""

    def claim(self, key: str, attempt: int, token: str) -> Execution | None:
        """Record ``(key, attempt)`` as executing under ``token``, if nothing is recorded for it.

        Atomic: of two runs claiming the same attempt, exactly one gets None.

        Returns:
            None if this call claimed it (the body may run), else the record found.
        """
        ...

    def finish(self, key: str, attempt: int, token: str, result: Any) -> Execution:
        """Mark the attempt done with ``result`` (JSON), if it is still executing under ``token``.

        Returns:
            The record after the call: done with ``result``, or as another run left it (done
            with its result first, or claimed under another token).

        Raises:
            LookupError: Nothing is recorded for that attempt.
        """
        ...

    def release(self, key: str, attempt: int, token: str) -> None:
        """Forget an executing claim of ``token``: the body raised, so a retry may run it."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def _ledger_schema(connection: sqlite3.Connection, table: str, path: Path) -> None:
    connection.execute(
        f'CREATE TABLE IF NOT EXISTS "{table}" ('
        "key TEXT NOT NULL, attempt INTEGER NOT NULL, token TEXT NOT NULL, "
        "done INTEGER NOT NULL DEFAULT 0, result TEXT, PRIMARY KEY (key, attempt))"
    )
    present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
    missing = [c for c in ("key", "attempt", "token", "done", "result") if c not in present]
    if missing:
        from sqlite3 import OperationalError

        raise OperationalError(
            f"{path}: table {table!r} exists without the ledger columns {missing}; "
            "pass another table= name"
        )


class SqliteLedger(Closing):
    """The execution ledger in a sqlite file (:class:`ExecutionLedger`).

    By default the file of the sqlite inbox (its own table), so a worker on one machine needs no
    other setup. Workers on several machines need a ledger they all reach (PostgreSQL).

    Args:
        path: The database file (default: the sqlite inbox's).
        table: The table name.
        timeout: Seconds to wait for another writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_LEDGER_TABLE,
        timeout: float = 5.0,
    ) -> None:
        # Here, not at import: importing agent_wait.core opens nothing embedded.
        from agent_wait.core._sqlite_file import SqliteFile

        self._store = SqliteFile(path, table, timeout, _ledger_schema)
        self._table = table

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def _get(self, connection: sqlite3.Connection, key: str, attempt: int) -> Execution | None:
        row = connection.execute(
            f'SELECT token, done, result FROM "{self._table}" WHERE key = ? AND attempt = ?',
            (key, attempt),
        ).fetchone()
        if row is None:
            return None
        token, done, result = row
        return Execution(
            key, attempt, token, bool(done), None if result is None else json.loads(result)
        )

    def claim(self, key: str, attempt: int, token: str) -> Execution | None:
        """See :meth:`ExecutionLedger.claim`."""
        with self._store.connect() as connection:
            inserted = connection.execute(
                f'INSERT INTO "{self._table}" (key, attempt, token) VALUES (?, ?, ?) '
                "ON CONFLICT (key, attempt) DO NOTHING",
                (key, attempt, token),
            ).rowcount
            return None if inserted == 1 else self._get(connection, key, attempt)

    def finish(self, key: str, attempt: int, token: str, result: Any) -> Execution:
        """See :meth:`ExecutionLedger.finish`."""
        text = json.dumps(result, ensure_ascii=False, allow_nan=False)
        # Not synced on its own (the next claim's sync carries it): a power loss before then
        # leaves the call executing, so its redelivery asks a person, as one in the body would.
        with self._store.connect(synced=False) as connection:
            connection.execute(
                f'UPDATE "{self._table}" SET done = 1, result = ? '
                "WHERE key = ? AND attempt = ? AND token = ? AND done = 0",
                (text, key, attempt, token),
            )
            found = self._get(connection, key, attempt)
        if found is None:
            raise LookupError(f"execution {key!r} attempt {attempt}: nothing recorded")
        return found

    def release(self, key: str, attempt: int, token: str) -> None:
        """See :meth:`ExecutionLedger.release`."""
        # Not synced on its own, like finish: losing it to a power loss asks a person.
        with self._store.connect(synced=False) as connection:
            connection.execute(
                f'DELETE FROM "{self._table}" WHERE key = ? AND attempt = ? AND token = ? '
                "AND done = 0",
                (key, attempt, token),
            )

    def records(self) -> list[Execution]:
        """Every record, by key and attempt (for tools and tests)."""
        with self._store.connect() as connection:
            keys = connection.execute(
                f'SELECT key, attempt FROM "{self._table}" ORDER BY key, attempt'
            ).fetchall()
            found = [self._get(connection, key, attempt) for key, attempt in keys]
        return [record for record in found if record is not None]

    def close(self) -> None:
        """Close the connection."""
        self._store.close()


def sqlite_ledger(**options: Any) -> SqliteLedger:
    """The ledger beside a sqlite announcer's inbox: its ``path`` and ``timeout``, own table."""
    kept = {k: v for k, v in options.items() if k in ("path", "timeout")}
    return SqliteLedger(**kept)
