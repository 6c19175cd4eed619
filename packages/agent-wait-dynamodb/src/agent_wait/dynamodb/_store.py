"""The question store on the DynamoDB announcer's table: the lifecycle of each question."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol, cast

import boto3

from agent_wait.core import (
    HistoryKey,
    LifecycleEvent,
    QuestionStatus,
    StoredQuestion,
    Transition,
    check_limit,
    check_vote,
    closing_status,
    follow_up_step,
    format_utc,
    history_key,
    refusal_note,
    refused_here,
    sending_status,
)
from agent_wait.dynamodb._audit import DynamoDbAuditLog
from agent_wait.dynamodb._options import DynamoDbOptions
from agent_wait.dynamodb._table import (
    INDEX_NAME,
    _envelope,  # pyright: ignore[reportPrivateUsage]
    _plain,  # pyright: ignore[reportPrivateUsage]
    already_written,
    moment,
    open_questions_past,
)

try:
    from boto3.dynamodb.conditions import Attr, Key
    from botocore.exceptions import ClientError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError("the DynamoDB store needs boto3: pip install agent-wait-dynamodb") from error


class DynamoDbQuestionStore:
    """The questions a :class:`DynamoDbAnnounce` wrote, and their lifecycle (a ``QuestionStore``).

    Closing a question is one conditional ``UpdateItem`` (``status = "open"``): of any number of
    racing closes exactly one succeeds; the others read the winner's row. A closed row leaves
    the ``open`` partition of the ``by_status`` index, so the overdue query no longer sees it.
    ``find`` with a thread id is a ``GetItem``; without one it scans the table (filtering on
    ``question_id``): pass the thread when you have it. It is a ``SendingStore``: an answer
    being sent is held in the item (``status`` ``sending``, its ``message`` as JSON text), and
    a ``FollowUpStore``: each follow-up of the sweeper is an attribute of the item
    (``followed_up:reminder:1``, ``followed_up:escalated``...), written once by a conditional
    ``UpdateItem``.

    Args:
        table: A boto3 ``Table`` resource (``boto3.resource("dynamodb").Table(name)``).
    """

    def __init__(self, table: Any) -> None:
        self._table = table

    def _get(self, thread_id: str, question_id: str) -> StoredQuestion | None:
        key = {"pk": f"THREAD#{thread_id}", "sk": f"WAIT#{question_id}"}
        item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
        return None if item is None else _stored(item)

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        """The stored questions with this id (in this thread, if given)."""
        if thread_id is not None:
            found = self._get(thread_id, question_id)
            return [] if found is None else [found]
        scan: dict[str, Any] = {
            "FilterExpression": _condition(Attr, "question_id").eq(question_id),
            "ConsistentRead": True,
        }
        items: list[Mapping[str, Any]] = []
        while True:
            page = self._table.scan(**scan)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return [_stored(item) for item in items if str(item.get("sk", "")).startswith("WAIT#")]

    def _partition(self, status: str) -> list[StoredQuestion]:
        query: dict[str, Any] = {
            "IndexName": INDEX_NAME,
            "KeyConditionExpression": _condition(Key, "status").eq(status),
        }
        items: list[Mapping[str, Any]] = []
        while True:
            page = self._table.query(**query)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return [_stored(item) for item in items]
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def closed_questions(self, limit: int, after: HistoryKey | None = None) -> list[StoredQuestion]:
        """Closed questions, most recently closed first (a ``QuestionHistory``).

        The ``answered``, ``expired`` and ``cancelled`` partitions of ``by_status`` are sorted
        by deadline, not by close: every page reads them whole and sorts. Set a TTL on the
        table (the announcer's ``ttl_attribute``) to keep the history that is read bounded.
        """
        check_limit(limit)
        closed = [
            q
            for status in QuestionStatus
            if status is not QuestionStatus.OPEN
            for q in self._partition(status.value)
            if q.answered_at is not None
        ]
        closed.sort(key=history_key, reverse=True)
        if after is not None:
            closed = [q for q in closed if history_key(q) < after]
        return closed[:limit]

    def open_questions(self) -> list[StoredQuestion]:
        """Every open question, earliest deadline first (the ``open`` partition of ``by_status``)."""
        return self._partition(QuestionStatus.OPEN.value)

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        """Open questions whose ``expires_at`` is before ``now`` (a query on ``by_status``)."""
        cutoff = moment(now)
        return [
            StoredQuestion(envelope=envelope, status=QuestionStatus.OPEN.value)
            for envelope in open_questions_past(self._table, cutoff)
        ]

    def sending_questions(self) -> list[StoredQuestion]:
        """Every question in ``sending`` (the ``sending`` partition of ``by_status``)."""
        return self._partition(QuestionStatus.SENDING.value)

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
        who = (by, identity_source)
        return self._close(thread_id, question_id, status.value, who, answer, at, {})

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
        sending = {"message": _message_text(message), "closes_as": status.value}
        who = (by, identity_source)
        return self._close(thread_id, question_id, "sending", who, answer, at, sending)

    def _close(
        self,
        thread_id: str,
        question_id: str,
        status: str,
        who: tuple[str, str | None],
        answer: Any,
        at: datetime | None,
        sending: dict[str, str],
    ) -> Transition:
        stamp = format_utc(moment(at))
        by, source = who
        # Numbers as DynamoDB stores them (Decimal), as the announcer writes the envelope.
        stored = json.loads(json.dumps(answer), parse_float=Decimal)
        fields = {**sending} if source is None else {**sending, "identity_source": source}
        update = "SET #s = :s, answered_at = :at, answered_by = :by, answer = :a"
        update += "".join(f", {name} = :{name}" for name in fields)
        update += " REMOVE refusal"
        if source is None:
            update += ", identity_source"
        values = {":s": status, ":at": stamp, ":by": by, ":a": stored}
        values.update({f":{name}": value for name, value in fields.items()})
        return self._update_open(thread_id, question_id, update, "", values)

    def record_vote(
        self, thread_id: str, question_id: str, vote: dict[str, Any], *, seen: int
    ) -> Transition:
        """Append a vote if the open question still has ``seen`` votes (a ``VotingStore``).

        One conditional ``UpdateItem`` on the size of the ``votes`` list (each vote JSON text):
        of two voters who read the same count, exactly one is recorded.

        Raises:
            ValueError: ``vote`` is not ``{"by", "at", "answer"}``.
            LookupError: No such question.
        """
        values: dict[str, Any] = {":one": [_message_text(check_vote(vote))]}
        if seen == 0:
            update, counted = "SET votes = :one", "attribute_not_exists(votes)"
        else:
            update, counted = "SET votes = list_append(votes, :one)", "size(votes) = :n"
            values[":n"] = seen
        return self._update_open(thread_id, question_id, update, f" AND {counted}", values)

    def _update_open(
        self,
        thread_id: str,
        question_id: str,
        update: str,
        condition: str,
        values: dict[str, Any],
    ) -> Transition:
        # One conditional UpdateItem on a question still open (and ``condition``); when the
        # condition fails, the question as it is now.
        try:
            response = self._table.update_item(
                Key={"pk": f"THREAD#{thread_id}", "sk": f"WAIT#{question_id}"},
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(pk) AND #s = :open{condition}",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":open": QuestionStatus.OPEN.value, **values},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if not already_written(error):
                raise
            current = self._get(thread_id, question_id)
            if current is None:
                raise LookupError(
                    f"no question {question_id!r} in thread {thread_id!r} in table "
                    f"{self._table.name}"
                ) from None
            return Transition(False, current)
        return Transition(True, _stored(response["Attributes"]))

    def reopen(self, closed: StoredQuestion) -> bool:
        """Reopen a question only if it is still as ``closed`` left it (status, time, who)."""
        envelope = closed.envelope
        key = {"pk": f"THREAD#{envelope.thread_id}", "sk": f"WAIT#{envelope.question_id}"}
        return self._reopen_unchanged(key, closed)

    def reopen_refused(self, event: LifecycleEvent) -> bool:
        """Open the question again after the host refused its recorded answer (a ``RefusalStore``).

        Read, checked against the event (:func:`~agent_wait.core.refused_here`), then one
        conditional ``UpdateItem`` on the item as read: of racing refusals exactly one succeeds.
        """
        key = {"pk": f"THREAD#{event.thread_id}", "sk": f"WAIT#{event.question_id}"}
        item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
        if item is None:
            return False
        found = _stored(item)
        if not refused_here(event, found.status, found.answered_by, found.answer):
            return False
        note = refusal_note(event, found.answer)
        return self._reopen_unchanged(key, found, _message_text(note))

    def _reopen_unchanged(
        self, key: dict[str, str], closed: StoredQuestion, refusal: str | None = None
    ) -> bool:
        """One conditional ``UpdateItem``: open again unless changed since ``closed`` was read."""
        values: dict[str, Any] = {
            ":open": QuestionStatus.OPEN.value,
            ":s": closed.status,
            ":at": closed.answered_at,
            ":by": closed.answered_by,
        }
        set_refusal, remove_votes = "", ""
        if refusal is not None:
            # The refused decision is voted on afresh.
            values[":r"] = refusal
            set_refusal, remove_votes = ", refusal = :r", ", votes"
        try:
            self._table.update_item(
                Key=key,
                UpdateExpression=(
                    f"SET #s = :open{set_refusal} "
                    "REMOVE answered_at, answered_by, identity_source, answer, message, "
                    f"closes_as{remove_votes}"
                ),
                ConditionExpression="#s = :s AND answered_at = :at AND answered_by = :by",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if already_written(error):  # the condition failed: someone changed the item
                return False
            raise
        return True

    def close_as_event(self, event: LifecycleEvent) -> bool:
        """Close the open question as a ``wait.answered`` or ``wait.expired`` event says.

        ``status``, ``answered_at`` and ``answered_by`` come from the event; ``answer`` stays
        empty (the event does not carry it). An item closed first, or no item, is left as it
        is. Returns True if this call closed it.
        """
        status = "answered" if event.type == "wait.answered" else "expired"
        values: dict[str, Any] = {
            ":s": status,
            ":at": event.at,
            ":open": QuestionStatus.OPEN.value,
        }
        update = "SET #s = :s, answered_at = :at"
        if event.by is not None:
            update += ", answered_by = :by"
            values[":by"] = event.by
        try:
            self._table.update_item(
                Key={"pk": f"THREAD#{event.thread_id}", "sk": f"WAIT#{event.question_id}"},
                UpdateExpression=f"{update} REMOVE refusal",
                ConditionExpression="attribute_exists(pk) AND #s = :open",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if already_written(error):  # closed first, or no such item
                return False
            raise
        return True

    def end_send(self, sending: StoredQuestion) -> bool:
        """``sending -> closes_as`` if the item is still as ``sending`` left it (a ``SendingStore``)."""
        if sending.status != QuestionStatus.SENDING or sending.message is None:
            return False
        envelope = sending.envelope
        try:
            self._table.update_item(
                Key={"pk": f"THREAD#{envelope.thread_id}", "sk": f"WAIT#{envelope.question_id}"},
                UpdateExpression="SET #s = :closes REMOVE message, closes_as",
                ConditionExpression=(
                    "#s = :sending AND answered_at = :at AND answered_by = :by AND message = :m"
                ),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":closes": sending.closes_as or QuestionStatus.ANSWERED.value,
                    ":sending": QuestionStatus.SENDING.value,
                    ":at": sending.answered_at,
                    ":by": sending.answered_by,
                    ":m": _message_text(sending.message),
                },
            )
        except ClientError as error:
            if already_written(error):  # the condition failed: someone changed the item
                return False
            raise
        return True

    def claim_follow_up(
        self, thread_id: str, question_id: str, step: str, *, at: datetime | None = None
    ) -> bool:
        """Record a follow-up step on an open question, once (a ``FollowUpStore``).

        One conditional ``UpdateItem`` (open, the step's attribute absent): of racing claims
        exactly one succeeds.
        """
        attribute = _FOLLOWED_UP + follow_up_step(step)
        try:
            self._table.update_item(
                Key={"pk": f"THREAD#{thread_id}", "sk": f"WAIT#{question_id}"},
                UpdateExpression="SET #f = :at",
                ConditionExpression="attribute_not_exists(#f) AND #s = :open",
                ExpressionAttributeNames={"#f": attribute, "#s": "status"},
                ExpressionAttributeValues={
                    ":at": format_utc(moment(at)),
                    ":open": QuestionStatus.OPEN.value,
                },
            )
        except ClientError as error:
            if already_written(error):  # claimed first, closed, or no such item
                return False
            raise
        return True

    def audit_log(self) -> DynamoDbAuditLog:
        """The audit log in the same table (see ``agent_wait.core.AuditLog``)."""
        return DynamoDbAuditLog(self._table)

    def close(self) -> None:
        """Nothing to release (the boto3 resource belongs to the caller)."""

    def __repr__(self) -> str:
        return f"<DynamoDbQuestionStore table={self._table.name!r}>"


class _Condition(Protocol):
    """A condition builder (``boto3.dynamodb.conditions.Key`` or ``Attr``)."""

    def eq(self, value: str) -> Any: ...


def _condition(builder: object, name: str) -> _Condition:
    return cast("Callable[[str], _Condition]", builder)(name)


def _message_text(message: Mapping[str, Any]) -> str:
    # JSON text, not a map: it comes back exactly as sent (numbers too), and compares as one.
    return json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


_FOLLOWED_UP = "followed_up:"
"""The prefix of the attributes recording the sweeper's follow-ups (one attribute per step)."""


def _stored(item: Mapping[str, Any]) -> StoredQuestion:
    answer = item.get("answer")
    message = item.get("message")
    refusal = item.get("refusal")
    votes = cast("list[str]", item.get("votes") or [])
    return StoredQuestion(
        envelope=_envelope(item),
        status=cast("str", item["status"]),
        answered_at=cast("str | None", item.get("answered_at")),
        answered_by=cast("str | None", item.get("answered_by")),
        answer=None if answer is None else _plain(answer),
        message=None if message is None else json.loads(cast("str", message)),
        closes_as=cast("str | None", item.get("closes_as")),
        refusal=None if refusal is None else json.loads(cast("str", refusal)),
        votes=tuple(json.loads(vote) for vote in votes),
        follow_ups={
            name[len(_FOLLOWED_UP) :]: cast("str", at)
            for name, at in item.items()
            if name.startswith(_FOLLOWED_UP)
        },
        identity_source=cast("str | None", item.get("identity_source")),
    )


def store_from_options(**options: Any) -> DynamoDbQuestionStore:
    """The store of a ``dynamodb`` announcer, from that announcer's configured options."""
    return DynamoDbQuestionStore(table_from_options(options))


def table_from_options(options: dict[str, Any]) -> Any:
    """The table of a ``dynamodb`` announcer, from that announcer's configured options."""
    parsed = DynamoDbOptions.parse("dynamodb", options)
    session: Any = boto3.Session(profile_name=parsed.profile, region_name=parsed.region)
    if session.region_name is None:
        raise DynamoDbOptions.option_error(
            "dynamodb", "region", "no AWS region given or configured; set it or AWS_REGION", None
        )
    resource: Any = session.resource("dynamodb", endpoint_url=parsed.endpoint_url)
    return resource.Table(parsed.table_name)
