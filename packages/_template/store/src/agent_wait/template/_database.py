"""The stand-in for your database: tables of questions in this process's memory, by name.

Replace it with your database's client library (import it here, and raise an ImportError naming
what to install when it is missing). What the store needs of the database is one atomic
compare-and-set: change a question only while it is as the caller read it, as ``UPDATE ...
WHERE status = 'open'`` does in SQL and a conditional write in a key-value store. Here the lock
makes each read-compare-write one step.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agent_wait.core import StoredQuestion

# One question of one thread: (thread_id, question_id).
Key = tuple[str, str]


@dataclass
class Table:
    """The stored questions by key, changed only under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    rows: dict[Key, StoredQuestion] = field(default_factory=dict[Key, StoredQuestion])


_TABLES: dict[str, Table] = {}
_TABLES_LOCK = threading.Lock()


def table(database: str) -> Table:
    """The table of the database ``database``, created empty on first use."""
    with _TABLES_LOCK:
        return _TABLES.setdefault(database, Table())
