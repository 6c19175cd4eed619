"""One sqlite file of the embedded defaults: where it lives, created private, opened in WAL mode.

The inbox, the question store, the entry point's messages, the execution ledger and the audit
log each keep a table in such a file (by default the same one); each brings its own schema.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

HOME_ENV = "AGENT_WAIT_HOME"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
"""What a table name must be: a plain SQL identifier (interpolated into statements)."""


def default_inbox_path(environ: Mapping[str, str] | None = None) -> Path:
    r"""Where the embedded inbox lives when no ``path`` is given.

    ``$AGENT_WAIT_HOME/inbox.sqlite3`` when ``AGENT_WAIT_HOME`` is set in ``environ`` (default:
    the process environment), else ``inbox.sqlite3`` in the platform's user data directory for
    ``agent-wait`` (``platformdirs.user_data_path``, which reads the process environment):
    ``$XDG_DATA_HOME/agent-wait`` or ``~/.local/share/agent-wait`` on Linux,
    ``~/Library/Application Support/agent-wait`` on macOS, ``%LOCALAPPDATA%\agent-wait`` on
    Windows. Read at call time, so a changed environment is seen by the next announcer built.
    """
    env = os.environ if environ is None else environ
    home = env.get(HOME_ENV)
    if home:
        return Path(home).expanduser() / "inbox.sqlite3"
    # Here, not at import: only the embedded default needs it.
    from platformdirs import user_data_path

    return user_data_path("agent-wait", appauthor=False) / "inbox.sqlite3"


def _create_private(path: Path) -> None:
    """Create the database file (and its directory) readable by its owner only.

    Questions carry whatever the agent asked about, so a file we create is ``0600`` in a
    ``0700`` directory (SQLite gives its ``-wal`` and ``-shm`` files the database's mode). A
    file or directory that already exists keeps the mode its owner gave it.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600))


class SqliteFile:
    """One connection per store, shared by threads under a lock; opened on first use.

    ``sync_each_commit=False`` opens the connection with ``synchronous=NORMAL``: in WAL mode a
    commit is then written to the WAL file but not synced, the sync happens at checkpoints. A
    process that dies loses nothing it committed (the operating system has the writes); a power
    loss or kernel crash can lose the last commits, never corrupt the file. The question store
    and the audit log use it (see docs/guarantees.md); the ledger and the entry point's messages
    keep a sync per commit, but for what ``connect(synced=False)`` commits.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        table: str,
        timeout: float,
        schema: Callable[[sqlite3.Connection, str, Path], None],
        *,
        sync_each_commit: bool = True,
    ) -> None:
        if not IDENTIFIER.match(table):
            raise ValueError(
                f"table: expected a plain SQL identifier such as 'agent_wait_inbox', got {table!r}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"timeout: expected positive seconds, got {timeout!r}")
        if path is not None and not str(path).strip():
            raise ValueError(f"path: expected a file path or None, got {path!r}")
        self.path = default_inbox_path() if path is None else Path(path).expanduser()
        self.table = table
        self.timeout = float(timeout)
        # Creates or migrates the table on open.
        self._schema = schema
        self._sync_each_commit = sync_each_commit
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def connect(self, *, synced: bool = True) -> Generator[sqlite3.Connection]:
        """The connection, under the lock.

        ``synced=False`` commits what is done inside without a file sync of its own even when
        ``sync_each_commit``: the WAL is written in order, so the next synced commit (or the
        next checkpoint) makes it durable with everything before it. A process that dies loses
        nothing of it; only a power loss before that sync can.
        """
        with self._lock:
            if self._connection is None:
                self._connection = self._open()
            if synced or not self._sync_each_commit:
                yield self._connection
                return
            self._connection.execute("PRAGMA synchronous=NORMAL")
            try:
                yield self._connection
            finally:
                self._connection.execute("PRAGMA synchronous=FULL")

    def _open(self) -> sqlite3.Connection:
        _create_private(self.path)
        # Autocommit mode: writes take the lock up front with BEGIN IMMEDIATE, so the busy
        # timeout applies instead of failing on a read-to-write lock upgrade.
        connection = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            _use_wal(connection, self.timeout)
            if not self._sync_each_commit:
                # A file sync per commit was most of an answer's time (several commits each).
                connection.execute("PRAGMA synchronous=NORMAL")
            self._schema(connection, self.table, self.path)
        except BaseException:
            connection.close()
            raise
        return connection

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _use_wal(connection: sqlite3.Connection, timeout: float) -> None:
    """Put the file in WAL mode (readers never block the writer), waiting up to ``timeout``.

    Switching a new file takes an exclusive lock, and while other processes open the same file
    SQLite may answer busy at once, without its busy handler: the switch is retried instead.
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            busy = error.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
