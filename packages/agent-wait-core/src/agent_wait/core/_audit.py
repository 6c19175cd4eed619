"""The audit trail: per question, an append-only, hash-chained record of what happened to it.

Each entry names its question (thread and id), its place in the question's record (``seq``,
from 1), when, what (``kind``) and the facts (``data``), and carries ``prev``, the hash of the
entry before it, and ``hash``, the SHA-256 of its own canonical JSON (``prev`` included). Editing
or removing an entry breaks the chain at that point: :func:`verify` names it. Appending is a
compare-and-set on ``(thread, question, seq)``: of two writers appending at once, one takes the
place and the other appends after it.

Kinds: ``asked`` (the digest of the proposed call), ``delivered`` (per announcer), ``vote``,
``answered`` (the digest of the approved call, edits applied), ``expired``, ``cancelled``,
``resumed`` and ``refused`` (the host took, or refused, the answer), ``executed`` (the digest
of the arguments the guarded function actually ran with, and how it ended), and ``ruled`` (a
configured rule decided without asking). An ``executed`` entry whose call digest differs from
the ``answered`` one is flagged by :func:`verify`.

The record lives beside the questions: in the sqlite inbox file (:class:`SqliteAuditLog`), the
PostgreSQL database (``agent_wait.postgres.PostgresAuditLog``) or the DynamoDB table
(``agent_wait.dynamodb.DynamoDbAuditLog``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from agent_wait.core._canonical import answer_digest, canonical_json, to_jsonable
from agent_wait.core._closing import Closing
from agent_wait.core._logsafe import log_safe
from agent_wait.core._models import WaitEnvelope, format_utc
from agent_wait.core._store import parse_now

logger = logging.getLogger("agent_wait.core.audit")

DEFAULT_AUDIT_TABLE = "agent_wait_audit"
GENESIS = "sha256:" + "0" * 64
"""The ``prev`` of a question's first entry."""
KINDS = (
    "asked",
    "delivered",
    "vote",
    "answered",
    "expired",
    "cancelled",
    "refused",
    "resumed",
    "executed",
    "ruled",
)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One entry of a question's audit record.

    Attributes:
        thread_id: The question's thread.
        question_id: The question.
        seq: Its place in the question's record, from 1.
        at: When (RFC 3339 UTC).
        kind: What happened (see the module docstring).
        data: The facts: who, digests, outcomes (JSON).
        prev: The ``hash`` of the entry before it (:data:`GENESIS` for the first).
        hash: ``sha256:<hex>`` of the canonical JSON of every field above.
    """

    thread_id: str
    question_id: str
    seq: int
    at: str
    kind: str
    data: dict[str, Any]
    prev: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON-compatible data (one line of an export)."""
        return {
            "thread_id": self.thread_id,
            "question_id": self.question_id,
            "seq": self.seq,
            "at": self.at,
            "kind": self.kind,
            "data": self.data,
            "prev": self.prev,
            "hash": self.hash,
        }


def entry_hash(
    thread_id: str, question_id: str, seq: int, at: str, kind: str, data: Any, prev: str
) -> str:
    """The hash of an entry: ``sha256:`` of the canonical JSON of its fields."""
    material = canonical_json(
        {
            "thread_id": thread_id,
            "question_id": question_id,
            "seq": seq,
            "at": at,
            "kind": kind,
            "data": data,
            "prev": prev,
        }
    )
    return "sha256:" + hashlib.sha256(material.encode("utf-8")).hexdigest()


def chained(
    thread_id: str,
    question_id: str,
    seq: int,
    kind: str,
    data: Mapping[str, Any],
    prev: str | None,
    at: datetime | str | None = None,
) -> AuditEntry:
    """The entry that follows ``prev`` at ``seq``, hashed (for :class:`AuditLog` implementations).

    ``prev`` is the hash of the question's last entry, None for its first (``seq`` 1).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {list(KINDS)}, got {kind!r}")
    stamp = format_utc(parse_now(at))
    plain = cast("dict[str, Any]", to_jsonable(dict(data)))
    prev = GENESIS if prev is None else prev
    digest = entry_hash(thread_id, question_id, seq, stamp, kind, plain, prev)
    return AuditEntry(thread_id, question_id, seq, stamp, kind, plain, prev, digest)


@runtime_checkable
class AuditLog(Protocol):
    """Where audit records live: append-only, one hash chain per question."""

    def append(
        self,
        thread_id: str,
        question_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        at: datetime | str | None = None,
    ) -> AuditEntry:
        """Append an entry after the question's last one (compare-and-set on its place)."""
        ...

    def entries(self, question_id: str, thread_id: str | None = None) -> list[AuditEntry]:
        """The question's entries (of every thread that asked it, unless one is named), in order."""
        ...

    def since(self, since: datetime | str | None = None) -> list[AuditEntry]:
        """Every entry at or after ``since`` (None: all), by time, then question and place."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def verify(entries: Sequence[AuditEntry]) -> list[str]:
    """What is wrong with a question's record; empty when the chain holds and the runs match.

    Checks each entry's hash against its content, that it follows the one before (``prev``
    and ``seq``), and that every ``executed`` call has the digest of the last ``answered``
    call before it.
    """
    problems: list[str] = []
    prev, seq = GENESIS, 0
    approved: str | None = None
    for entry in entries:
        seq += 1
        where = f"entry {entry.seq} ({entry.kind}, {entry.thread_id}/{entry.question_id})"
        recomputed = entry_hash(
            entry.thread_id, entry.question_id, entry.seq, entry.at, entry.kind, entry.data,
            entry.prev,
        )  # fmt: skip
        if recomputed != entry.hash:
            problems.append(f"{where}: its content does not match its hash: it was edited")
        if entry.seq != seq or entry.prev != prev:
            problems.append(
                f"{where}: does not follow entry {seq - 1}: an entry was removed or inserted"
            )
        prev, seq = entry.hash, entry.seq
        if entry.kind == "answered":
            approved = entry.data.get("call_digest")
        elif entry.kind == "executed":
            ran = entry.data.get("call_digest")
            if approved is None or ran != approved:
                problems.append(
                    f"{where}: {entry.data.get('function')} ran with arguments other than the "
                    f"approved ones (ran {ran}, approved {approved})"
                )
    return problems


def by_question(entries: Iterable[AuditEntry]) -> dict[tuple[str, str], list[AuditEntry]]:
    """Entries grouped by ``(thread_id, question_id)``, each group in order."""
    grouped: dict[tuple[str, str], list[AuditEntry]] = {}
    for entry in entries:
        grouped.setdefault((entry.thread_id, entry.question_id), []).append(entry)
    for group in grouped.values():
        group.sort(key=lambda e: e.seq)
    return grouped


def call_digest(function: str, args: Mapping[str, Any]) -> str:
    """The digest of a call: ``sha256:`` of the canonical JSON of ``{"function", "args"}``."""
    return answer_digest({"function": function, "args": dict(args)})


def proposed_call(envelope: WaitEnvelope) -> tuple[str, dict[str, Any]] | None:
    """``(function, args)`` of a ``@wait`` question, else None."""
    question = envelope.question
    if not isinstance(question, Mapping):
        return None
    body = cast("Mapping[str, Any]", question)
    function, args = body.get("function"), body.get("args")
    if not isinstance(function, str) or not isinstance(args, Mapping):
        return None
    return function, dict(cast("Mapping[str, Any]", args))


def approved_call_digest(envelope: WaitEnvelope, answer: Any) -> str | None:
    """The digest of the call an ``approve`` answer lets run (its edited ``args`` applied)."""
    call = proposed_call(envelope)
    if call is None or not isinstance(answer, Mapping):
        return None
    decided = cast("Mapping[str, Any]", answer)
    if decided.get("action") != "approve":
        return None
    edits = decided.get("args")
    args = (
        {**call[1], **cast("Mapping[str, Any]", edits)} if isinstance(edits, Mapping) else call[1]
    )
    return call_digest(call[0], args)


def answer_facts(
    envelope: WaitEnvelope, by: str | None, answer: Any, source: str | None = None
) -> dict[str, Any]:
    """What an ``answered``, ``expired`` or ``vote`` entry records of an answer.

    ``source`` is how ``by`` was established (an identity's ``source``), recorded when known.
    """
    facts: dict[str, Any] = {"by": by, "answer_digest": answer_digest(answer)}
    if source is not None:
        facts["identity_source"] = source
    if isinstance(answer, Mapping):
        facts["action"] = cast("Mapping[str, Any]", answer).get("action")
    approved = approved_call_digest(envelope, answer)
    if approved is not None:
        facts["call_digest"] = approved
    return facts


def audit_log_of(owner: object) -> AuditLog | None:
    """The audit log beside a question store, announcer or ledger, if it keeps one.

    Their ``audit_log()`` (the sqlite, PostgreSQL and DynamoDB stores and announcers, and the
    PostgreSQL and DynamoDB ledgers, have one); the sqlite ledger's is the log in its file.
    """
    # The sqlite ledger has no audit_log() of its own: it would import this module, which
    # imports the configuration, which imports the ledger.
    from agent_wait.core._ledger import SqliteLedger

    if isinstance(owner, SqliteLedger):
        return sqlite_audit_log(owner.path)
    make = getattr(owner, "audit_log", None)
    if not callable(make):
        return None
    try:
        built = make()
    except Exception as error:  # noqa: BLE001 - the audit must not undo or hide what was done
        logger.error(
            "%r: its audit log could not be opened; nothing recorded in it (%s: %s)",
            owner,
            type(error).__name__,
            log_safe(str(error)),
        )
        return None
    return built if isinstance(built, AuditLog) else None


def configured_audit() -> AuditLog | None:
    """The audit log beside the configured questions: the configured ledger's."""
    from agent_wait.core._config import configured_ledger

    return audit_log_of(configured_ledger())


def record(
    log: AuditLog | None,
    thread_id: str,
    question_id: str,
    kind: str,
    data: Mapping[str, Any],
    at: datetime | str | None = None,
) -> None:
    """Append an entry; a failure is logged, never raised (what it records already happened)."""
    if log is None:
        return
    try:
        log.append(thread_id, question_id, kind, data, at=at)
    except Exception as error:  # noqa: BLE001 - the audit must not undo or hide what was done
        logger.error(
            "question %s of thread %s: the audit entry %r could not be recorded (%s: %s)",
            log_safe(question_id),
            log_safe(thread_id),
            kind,
            type(error).__name__,
            log_safe(str(error)),
        )


# --- the sqlite audit log -----------------------------------------------------------------------


def _audit_schema(connection: sqlite3.Connection, table: str, path: Path) -> None:
    connection.execute(
        f'CREATE TABLE IF NOT EXISTS "{table}" ('
        "thread_id TEXT NOT NULL, question_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "at TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL, prev TEXT NOT NULL, "
        "hash TEXT NOT NULL, PRIMARY KEY (thread_id, question_id, seq))"
    )
    connection.execute(f'CREATE INDEX IF NOT EXISTS "{table}_by_at" ON "{table}" (at)')
    connection.execute(
        f'CREATE INDEX IF NOT EXISTS "{table}_by_question" ON "{table}" (question_id)'
    )
    present = {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}
    missing = [c for c in ("seq", "kind", "data", "prev", "hash") if c not in present]
    if missing:
        raise sqlite3.OperationalError(
            f"{path}: table {table!r} exists without the audit columns {missing}; "
            "pass another table= name"
        )


_FIELDS = "thread_id, question_id, seq, at, kind, data, prev, hash"


def _entry(row: Sequence[Any]) -> AuditEntry:
    thread_id, question_id, seq, at, kind, data, prev, digest = row
    return AuditEntry(thread_id, question_id, int(seq), at, kind, json.loads(data), prev, digest)


class SqliteAuditLog(Closing):
    """The audit log in a sqlite file (:class:`AuditLog`), by default the sqlite inbox's.

    Args:
        path: The database file (default: the sqlite inbox's).
        table: The table name.
        timeout: Seconds to wait for another writer's lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        table: str = DEFAULT_AUDIT_TABLE,
        timeout: float = 5.0,
    ) -> None:
        from agent_wait.core._sqlite_file import SqliteFile

        self._store = SqliteFile(path, table, timeout, _audit_schema, sync_each_commit=False)
        self._table = table

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def append(
        self,
        thread_id: str,
        question_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        at: datetime | str | None = None,
    ) -> AuditEntry:
        """See :meth:`AuditLog.append`."""
        with self._store.connect() as connection:
            while True:
                last = connection.execute(
                    f'SELECT seq, hash FROM "{self._table}" WHERE thread_id = ? AND '
                    "question_id = ? ORDER BY seq DESC LIMIT 1",
                    (thread_id, question_id),
                ).fetchone()
                seq, prev = (1, GENESIS) if last is None else (last[0] + 1, last[1])
                entry = chained(thread_id, question_id, seq, kind, data, prev, at)
                inserted = connection.execute(
                    f'INSERT INTO "{self._table}" ({_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) '
                    "ON CONFLICT (thread_id, question_id, seq) DO NOTHING",
                    (
                        *(entry.thread_id, entry.question_id, entry.seq, entry.at, entry.kind),
                        canonical_json(entry.data),
                        entry.prev,
                        entry.hash,
                    ),
                ).rowcount
                if inserted == 1:
                    return entry

    def append_many(self, items: Sequence[tuple[str, str, str, Mapping[str, Any]]]) -> None:
        """Append ``(thread_id, question_id, kind, data)`` entries in one transaction.

        What a publish of many questions records: one commit, under the write lock, instead of
        one per entry.
        """
        if not items:
            return
        last: dict[tuple[str, str], tuple[int, str | None]] = {}
        with self._store.connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for thread_id, question_id, kind, data in items:
                    key = (thread_id, question_id)
                    if key not in last:
                        row = connection.execute(
                            f'SELECT seq, hash FROM "{self._table}" WHERE thread_id = ? AND '
                            "question_id = ? ORDER BY seq DESC LIMIT 1",
                            key,
                        ).fetchone()
                        last[key] = (0, None) if row is None else (row[0], row[1])
                    seq, prev = last[key]
                    entry = chained(thread_id, question_id, seq + 1, kind, data, prev)
                    connection.execute(
                        f'INSERT INTO "{self._table}" ({_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                        (
                            *(entry.thread_id, entry.question_id, entry.seq, entry.at, kind),
                            canonical_json(entry.data),
                            entry.prev,
                            entry.hash,
                        ),
                    )
                    last[key] = (entry.seq, entry.hash)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def entries(self, question_id: str, thread_id: str | None = None) -> list[AuditEntry]:
        """See :meth:`AuditLog.entries`."""
        where, params = "question_id = ?", [question_id]
        if thread_id is not None:
            where, params = "thread_id = ? AND question_id = ?", [thread_id, question_id]
        with self._store.connect() as connection:
            rows = connection.execute(
                f'SELECT {_FIELDS} FROM "{self._table}" WHERE {where} ORDER BY thread_id, seq',
                params,
            ).fetchall()
        return [_entry(row) for row in rows]

    def since(self, since: datetime | str | None = None) -> list[AuditEntry]:
        """See :meth:`AuditLog.since`."""
        stamp = "" if since is None else format_utc(parse_now(since))
        with self._store.connect() as connection:
            rows = connection.execute(
                f'SELECT {_FIELDS} FROM "{self._table}" WHERE at >= ? '
                "ORDER BY at, thread_id, question_id, seq",
                (stamp,),
            ).fetchall()
        return [_entry(row) for row in rows]

    def close(self) -> None:
        """Close the connection. Safe to call more than once."""
        self._store.close()

    def __repr__(self) -> str:
        return f"<SqliteAuditLog path={str(self.path)!r} table={self._table!r}>"


def audit_published(report: Any, announcers: Sequence[object]) -> None:
    """Record ``asked`` and one ``delivered`` per announcer for each envelope published.

    In the audit log of each announcer that keeps one beside its questions (the sqlite,
    PostgreSQL and DynamoDB announcers); announcers that only carry messages keep none.
    """
    logs = [log for log in map(audit_log_of, announcers) if log is not None]
    if not logs:
        return
    deliveries = cast("Sequence[Any]", report.deliveries)
    items: list[tuple[str, str, str, Mapping[str, Any]]] = []
    for envelope in cast("Sequence[WaitEnvelope]", report.envelopes):
        call = proposed_call(envelope)
        asked: dict[str, Any] = {"event_id": envelope.event_id}
        if call is not None:
            asked |= {"function": call[0], "call_digest": call_digest(*call)}
        else:
            asked["question_digest"] = answer_digest(envelope.question)
        delivered = [
            {"announcer": d.announcer, "ok": d.ok, "error": d.error}
            for d in deliveries
            if d.question_id == envelope.question_id and d.event_id == envelope.event_id
        ]
        items.append((envelope.thread_id, envelope.question_id, "asked", asked))
        items += [(envelope.thread_id, envelope.question_id, "delivered", f) for f in delivered]
    for log in logs:
        _record_all(log, items)


def _record_all(log: AuditLog, items: list[tuple[str, str, str, Mapping[str, Any]]]) -> None:
    """Append every entry, in one transaction where the log can; failures logged, never raised."""
    many = getattr(log, "append_many", None)
    if not callable(many):
        for item in items:
            record(log, *item)
        return
    try:
        many(items)
    except Exception as error:  # noqa: BLE001 - the audit must not undo or hide what was done
        logger.error(
            "%d audit entries of a publish could not be recorded (%s: %s)",
            len(items),
            type(error).__name__,
            log_safe(str(error)),
        )


_open_logs: dict[Path, SqliteAuditLog] = {}
_open_lock = threading.Lock()
_OPEN_LIMIT = 16
"""Audit logs kept open at once, one per sqlite file; the oldest is closed beyond that."""


def sqlite_audit_log(path: Path) -> SqliteAuditLog:
    """The audit log in the sqlite file ``path``, shared by everything that writes that file."""
    with _open_lock:
        found = _open_logs.get(path)  # as given: resolving it costs a system call per part
    if found is not None:
        return found
    key = path.resolve()
    with _open_lock:
        found = _open_logs.get(key)
        if found is None:
            found = _open_logs[key] = SqliteAuditLog(key)
        _open_logs[path] = found
        if len(_open_logs) > _OPEN_LIMIT:
            oldest = next(iter(_open_logs))
            _open_logs.pop(oldest).close()
        return found
