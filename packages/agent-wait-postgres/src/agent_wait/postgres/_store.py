"""The question store on the PostgreSQL announcer's table: the lifecycle of each question."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, LiteralString

import psycopg
from psycopg import Connection, sql
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from agent_wait.core import (
    HistoryKey,
    LifecycleEvent,
    QuestionStatus,
    StoredQuestion,
    Transition,
    WaitEnvelope,
    check_limit,
    check_vote,
    closing_status,
    follow_up_step,
    format_utc,
    refusal_note,
    refused_here,
    sending_status,
)
from agent_wait.postgres._audit import PostgresAuditLog, audit_beside
from agent_wait.postgres._options import DEFAULT_TABLE, PostgresOptions
from agent_wait.postgres._schema import (
    _ordered,  # pyright: ignore[reportPrivateUsage]
    check_timeout,
    create_schema,
    moment,
    table_identifier,
)

_LIFECYCLE: dict[str, LiteralString] = {
    "answered_at": "timestamptz",
    "answered_by": "text",
    "answer": "jsonb",
    "message": "jsonb",
    "closes_as": "text",
    "refusal": "jsonb",
    "votes": "jsonb",
    "follow_ups": "jsonb",
    "identity_source": "text",
}
_COLUMNS: LiteralString = (
    "envelope, status, answered_at, answered_by, answer, message, closes_as, refusal, votes, "
    "follow_ups, identity_source"
)


class PostgresQuestionStore:
    """The questions a :class:`PostgresAnnounce` wrote, and their lifecycle (a ``QuestionStore``).

    On first use it adds the lifecycle columns (``answered_at``, ``answered_by`` and its
    ``identity_source``, ``answer``,
    ``message`` and ``closes_as`` for an answer being sent, ``refusal``, and ``follow_ups`` for
    the sweeper's reminders and escalation) and an index on ``question_id`` to the table if they are missing (``ADD COLUMN IF NOT
    EXISTS``: tables written before keep working). Closing a question is one ``UPDATE ... WHERE
    status = 'open'``: PostgreSQL re-checks the condition after a concurrent update of the row,
    so of any number of racing closes exactly one changes it.

    Args:
        url: A libpq connection string or URI.
        table: ``name`` or ``schema.name``.
        create_table: Create the table if it does not exist.
        timeout: Connect timeout in seconds.
    """

    def __init__(
        self,
        url: str,
        table: str = DEFAULT_TABLE,
        create_table: bool = False,
        timeout: float = 10.0,
    ) -> None:
        self._ident = table_identifier(table)
        self._table = table
        check_timeout(timeout)
        self._url = url
        self._create = create_table
        self._timeout = timeout
        self._conn: Connection[TupleRow] | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Connection[TupleRow]:
        if self._conn is None or self._conn.closed:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=int(self._timeout))
            try:
                if self._create:
                    create_schema(conn, self._table)
                with conn.transaction():
                    for column, kind in _LIFECYCLE.items():
                        conn.execute(
                            sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(
                                self._ident, sql.Identifier(column), sql.SQL(kind)
                            )
                        )
                    name = self._table.rpartition(".")[2]
                    conn.execute(
                        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (question_id)").format(
                            sql.Identifier(f"{name}_by_question"[:63]), self._ident
                        )
                    )
                    # The history, newest first: a partial index holding closed rows only.
                    conn.execute(
                        sql.SQL(
                            "CREATE INDEX IF NOT EXISTS {} ON {} (answered_at DESC, pk DESC, "
                            "sk DESC) WHERE status <> 'open' AND answered_at IS NOT NULL"
                        ).format(sql.Identifier(f"{name}_by_closed"[:63]), self._ident)
                    )
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _select(self, where: sql.Composable, params: list[Any]) -> list[StoredQuestion]:
        query = sql.SQL(
            "SELECT " + _COLUMNS + " FROM {} WHERE {} ORDER BY expires_at, pk, sk"
        ).format(self._ident, where)
        with self._lock:
            rows = self._connection().execute(query, params).fetchall()
        return [_stored(row) for row in rows]

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        """The stored questions with this id (in this thread, if given)."""
        if thread_id is None:
            return self._select(sql.SQL("question_id = %s"), [question_id])
        return self._select(
            sql.SQL("pk = %s AND sk = %s"), [f"THREAD#{thread_id}", f"WAIT#{question_id}"]
        )

    def open_questions(self) -> list[StoredQuestion]:
        """Every open question, earliest deadline first."""
        return self._select(sql.SQL("status = 'open'"), [])

    def open_questions_to_follow_up(self) -> list[StoredQuestion]:
        """Open questions whose envelope has a ``follow_up`` (``FollowUpQuery``), found by the server."""
        return self._select(sql.SQL("status = 'open' AND envelope ? 'follow_up'"), [])

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        """Open questions whose ``expires_at`` is before ``now`` (the status index)."""
        return self._select(sql.SQL("status = 'open' AND expires_at < %s"), [moment(now)])

    def closed_questions(self, limit: int, after: HistoryKey | None = None) -> list[StoredQuestion]:
        """Closed questions, most recently closed first (a ``QuestionHistory``).

        One walk of the partial ``(answered_at, pk, sk)`` index of closed rows from ``after``.
        """
        where: sql.Composable = sql.SQL("status <> 'open' AND answered_at IS NOT NULL")
        params: list[Any] = []
        if after is not None:
            where = sql.SQL("{} AND (answered_at, pk, sk) < (%s, %s, %s)").format(where)
            params += [moment(after[0]), f"THREAD#{after[1]}", f"WAIT#{after[2]}"]
        query = sql.SQL(
            "SELECT " + _COLUMNS + " FROM {} WHERE {} "
            "ORDER BY answered_at DESC, pk DESC, sk DESC LIMIT %s"
        ).format(self._ident, where)
        with self._lock:
            rows = self._connection().execute(query, [*params, check_limit(limit)]).fetchall()
        return [_stored(row) for row in rows]

    def sending_questions(self) -> list[StoredQuestion]:
        """Every question in ``sending``, earliest deadline first (a ``SendingStore``)."""
        return self._select(sql.SQL("status = 'sending'"), [])

    def transition(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any = None,
        at: datetime | None = None,
        identity_source: str | None = None,
    ) -> Transition:
        """Close an open question, unless someone closed it first.

        Raises:
            ValueError: ``status`` is not a closed state, or ``by`` is empty.
            LookupError: No such question.
        """
        status = closing_status(status, by)
        return self._close(thread_id, question_id, status.value, (by, identity_source), answer, at)

    def begin_send(
        self,
        thread_id: str,
        question_id: str,
        status: QuestionStatus,
        *,
        by: str,
        answer: Any,
        message: dict[str, Any],
        at: datetime | None = None,
        identity_source: str | None = None,
    ) -> Transition:
        """Close an open question as ``sending``, holding ``message`` (a ``SendingStore``).

        Raises:
            ValueError: ``status`` is not ``answered`` or ``expired``, or ``by`` is empty.
            LookupError: No such question.
        """
        status = sending_status(status, by, message)
        who = (by, identity_source)
        return self._close(
            thread_id, question_id, "sending", who, answer, at, Jsonb(message), status.value
        )

    def _close(
        self,
        thread_id: str,
        question_id: str,
        status: str,
        who: tuple[str, str | None],
        answer: Any,
        at: datetime | None,
        message: Jsonb | None = None,
        closes_as: str | None = None,
    ) -> Transition:
        # Whole seconds, like every timestamp of the contract.
        stamp = moment(at).replace(microsecond=0)
        key = [f"THREAD#{thread_id}", f"WAIT#{question_id}"]
        update = sql.SQL(
            "UPDATE {} SET status = %s, answered_at = %s, answered_by = %s, "
            "identity_source = %s, answer = %s, message = %s, closes_as = %s, refusal = NULL "
            "WHERE pk = %s AND sk = %s AND status = 'open'"
        ).format(self._ident)
        select = sql.SQL("SELECT " + _COLUMNS + " FROM {} WHERE pk = %s AND sk = %s").format(
            self._ident
        )
        values = [status, stamp, *who, Jsonb(answer), message, closes_as, *key]
        with self._lock:
            conn = self._connection()
            won = conn.execute(update, values).rowcount == 1
            row = conn.execute(select, key).fetchone()
        if row is None:
            raise LookupError(
                f"no question {question_id!r} in thread {thread_id!r} in table {self._table}"
            )
        return Transition(won, _stored(row))

    def record_vote(
        self, thread_id: str, question_id: str, vote: dict[str, Any], *, seen: int
    ) -> Transition:
        """Append a vote if the open question still has ``seen`` votes (a ``VotingStore``).

        One ``UPDATE`` conditioned on the array's length: PostgreSQL re-checks it after a
        concurrent update of the row, so of two voters who read the same count one is recorded.

        Raises:
            ValueError: ``vote`` is not ``{"by", "at", "answer"}``.
            LookupError: No such question.
        """
        key = [f"THREAD#{thread_id}", f"WAIT#{question_id}"]
        update = sql.SQL(
            "UPDATE {} SET votes = COALESCE(votes, '[]'::jsonb) || jsonb_build_array(%s::jsonb) "
            "WHERE pk = %s AND sk = %s AND status = 'open' "
            "AND jsonb_array_length(COALESCE(votes, '[]'::jsonb)) = %s"
        ).format(self._ident)
        select = sql.SQL("SELECT " + _COLUMNS + " FROM {} WHERE pk = %s AND sk = %s").format(
            self._ident
        )
        with self._lock:
            conn = self._connection()
            won = conn.execute(update, [Jsonb(check_vote(vote)), *key, seen]).rowcount == 1
            row = conn.execute(select, key).fetchone()
        if row is None:
            raise LookupError(
                f"no question {question_id!r} in thread {thread_id!r} in table {self._table}"
            )
        return Transition(won, _stored(row))

    def reopen(self, closed: StoredQuestion) -> bool:
        """Reopen a question only if it is still exactly as ``closed`` left it."""
        envelope = closed.envelope
        query = sql.SQL(
            "UPDATE {} SET status = 'open', answered_at = NULL, answered_by = NULL, answer = NULL, "
            "identity_source = NULL, message = NULL, closes_as = NULL "
            "WHERE pk = %s AND sk = %s AND status = %s AND answered_at = %s "
            "AND answered_by = %s AND answer = %s"
        ).format(self._ident)
        at = moment(closed.answered_at) if closed.answered_at else None
        params = [
            f"THREAD#{envelope.thread_id}",
            f"WAIT#{envelope.question_id}",
            closed.status,
            at,
            closed.answered_by,
            Jsonb(closed.answer),
        ]
        with self._lock:
            return self._connection().execute(query, params).rowcount == 1

    def reopen_refused(self, event: LifecycleEvent) -> bool:
        """Open the question again after the host refused its recorded answer (a ``RefusalStore``).

        Read, checked against the event (:func:`~agent_wait.core.refused_here`), then one
        ``UPDATE`` conditioned on the row read: of racing refusals exactly one changes it.
        """
        key = [f"THREAD#{event.thread_id}", f"WAIT#{event.question_id}"]
        select = sql.SQL(
            "SELECT status, answered_at, answered_by, answer FROM {} WHERE pk = %s AND sk = %s"
        ).format(self._ident)
        update = sql.SQL(
            "UPDATE {} SET status = 'open', answered_at = NULL, answered_by = NULL, "
            "answer = NULL, message = NULL, closes_as = NULL, refusal = %s, votes = NULL, "
            "identity_source = NULL "
            "WHERE pk = %s AND sk = %s AND status = %s AND answered_at IS NOT DISTINCT FROM %s "
            "AND answered_by IS NOT DISTINCT FROM %s AND answer = %s"
        ).format(self._ident)
        with self._lock:
            conn = self._connection()
            row = conn.execute(select, key).fetchone()
            if row is None:
                return False
            status, answered_at, answered_by, answer = row
            if not refused_here(event, status, answered_by, answer):
                return False
            note = Jsonb(refusal_note(event, answer))
            values = [note, *key, status, answered_at, answered_by, Jsonb(answer)]
            return conn.execute(update, values).rowcount == 1

    def close_as_event(self, event: LifecycleEvent) -> bool:
        """Close the open question as a ``wait.answered`` or ``wait.expired`` event says.

        ``status``, ``answered_at`` and ``answered_by`` come from the event; ``answer`` stays
        empty (the event does not carry it). A row closed first, or no row, is left as it is.
        Returns True if this call closed it.
        """
        status = "answered" if event.type == "wait.answered" else "expired"
        update = sql.SQL(
            "UPDATE {} SET status = %s, answered_at = %s, answered_by = %s, refusal = NULL "
            "WHERE pk = %s AND sk = %s AND status = 'open'"
        ).format(self._ident)
        key = [f"THREAD#{event.thread_id}", f"WAIT#{event.question_id}"]
        with self._lock:
            return (
                self._connection()
                .execute(update, [status, moment(event.at), event.by, *key])
                .rowcount
                == 1
            )

    def end_send(self, sending: StoredQuestion) -> bool:
        """``sending -> closes_as`` if the row is still as ``sending`` left it (a ``SendingStore``)."""
        if sending.status != QuestionStatus.SENDING or sending.message is None:
            return False
        envelope = sending.envelope
        query = sql.SQL(
            "UPDATE {} SET status = closes_as, message = NULL, closes_as = NULL "
            "WHERE pk = %s AND sk = %s AND status = 'sending' AND answered_at = %s "
            "AND answered_by = %s AND message = %s"
        ).format(self._ident)
        params = [
            f"THREAD#{envelope.thread_id}",
            f"WAIT#{envelope.question_id}",
            moment(sending.answered_at) if sending.answered_at else None,
            sending.answered_by,
            Jsonb(sending.message),
        ]
        with self._lock:
            return self._connection().execute(query, params).rowcount == 1

    def audit_log(self) -> PostgresAuditLog:
        """The audit log beside the table: ``<table>_audit`` (see ``agent_wait.core.AuditLog``)."""
        return audit_beside(self._url, self._table, self._timeout)

    def claim_follow_up(
        self, thread_id: str, question_id: str, step: str, *, at: datetime | None = None
    ) -> bool:
        """Record a follow-up step on an open question, once (a ``FollowUpStore``).

        One ``UPDATE ... WHERE status = 'open' AND`` the step is not recorded: PostgreSQL
        re-checks both after a concurrent update of the row, so one of racing claims wins.
        """
        step = follow_up_step(step)
        query = sql.SQL(
            "UPDATE {} SET follow_ups = coalesce(follow_ups, '{{}}'::jsonb) || "
            "jsonb_build_object(%s::text, %s::text) "
            "WHERE pk = %s AND sk = %s AND status = 'open' AND (follow_ups -> %s) IS NULL"
        ).format(self._ident)
        params = [
            step,
            format_utc(moment(at)),
            f"THREAD#{thread_id}",
            f"WAIT#{question_id}",
            step,
        ]
        with self._lock:
            return self._connection().execute(query, params).rowcount == 1

    def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __repr__(self) -> str:
        return f"<PostgresQuestionStore table={self._table!r}>"


def _stored(row: TupleRow) -> StoredQuestion:
    (
        envelope,
        status,
        answered_at,
        answered_by,
        answer,
        message,
        closes_as,
        refusal,
        votes,
        follow_ups,
        identity_source,
    ) = row
    return StoredQuestion(
        envelope=WaitEnvelope.model_validate(_ordered(envelope)),
        status=status,
        answered_at=None if answered_at is None else format_utc(answered_at),
        answered_by=answered_by,
        answer=answer,
        message=message,
        closes_as=closes_as,
        refusal=refusal,
        votes=tuple(votes or ()),
        follow_ups=follow_ups or {},
        identity_source=identity_source,
    )


def store_from_options(**options: Any) -> PostgresQuestionStore:
    """The store of a ``postgres`` announcer, from that announcer's configured options."""
    parsed = PostgresOptions.parse("postgres", options)
    return PostgresQuestionStore(
        parsed.url, parsed.table, create_table=parsed.create_table, timeout=parsed.timeout
    )
