"""The audit trail in the DynamoDB announcer's table: one hash-chained record per question."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, cast

from agent_wait.core import AuditEntry, canonical_json, chained, format_utc
from agent_wait.dynamodb._table import already_written, moment

try:
    from boto3.dynamodb.conditions import Attr, Key
    from botocore.exceptions import ClientError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError(
        "the DynamoDB audit log needs boto3: pip install agent-wait-dynamodb"
    ) from error

AUDIT_PREFIX = "AUDIT#"
"""The start of every audit item's ``pk``."""
_FIELDS = ("thread_id", "question_id", "seq", "at", "kind", "data", "prev", "hash")


class _Condition(Protocol):
    """A condition builder (``Key`` or ``Attr`` of ``boto3.dynamodb.conditions``)."""

    def eq(self, value: str) -> Any: ...

    def gte(self, value: str) -> Any: ...

    def begins_with(self, value: str) -> Any: ...


def _on(builder: object, name: str) -> _Condition:
    return cast("Callable[[str], _Condition]", builder)(name)


def audit_key(thread_id: str, question_id: str) -> str:
    """The ``pk`` of a question's audit items: ``AUDIT#`` and the JSON list ``[thread, question]``.

    JSON, not a separator: no thread or question id can make two questions share a key.
    """
    return AUDIT_PREFIX + json.dumps([thread_id, question_id], ensure_ascii=False)


class DynamoDbAuditLog:
    """An :class:`~agent_wait.core.AuditLog` in the questions' table, beside their items.

    A question's entries share one partition (``pk`` from :func:`audit_key`), one item per
    entry (``sk`` ``ENTRY#<seq, ten digits>``), with no ``status``, so no question query or
    index sees them. Appending reads the question's last entry, then is one conditional
    ``PutItem`` (``attribute_not_exists(pk)``) on the next place: of two writers taking the
    same place one writes, the other reads again and appends after it. ``data`` is kept as the
    canonical JSON text the hash covers, so it reads back exactly as hashed.

    Reading one question's record in a named thread is a ``Query``; without the thread, and
    :meth:`since`, scan the table (filtering on the audit items).

    Args:
        table: A boto3 ``Table`` resource (``boto3.resource("dynamodb").Table(name)``).
    """

    def __init__(self, table: Any) -> None:
        self._table = table

    def _last(self, key: str) -> tuple[int, str] | None:
        page = self._table.query(
            KeyConditionExpression=_on(Key, "pk").eq(key),
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = page.get("Items", [])
        return None if not items else (int(items[0]["seq"]), str(items[0]["hash"]))

    def append(
        self,
        thread_id: str,
        question_id: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        at: datetime | str | None = None,
    ) -> AuditEntry:
        """See :meth:`agent_wait.core.AuditLog.append`."""
        key = audit_key(thread_id, question_id)
        while True:
            last = self._last(key)
            seq, prev = (1, None) if last is None else (last[0] + 1, last[1])
            entry = chained(thread_id, question_id, seq, kind, data, prev, at)
            item = {
                "pk": key,
                "sk": f"ENTRY#{entry.seq:010d}",
                **{name: getattr(entry, name) for name in _FIELDS},
                "data": canonical_json(entry.data),
            }
            try:
                self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")
            except ClientError as error:
                if not already_written(error):  # the place was taken: append after it
                    raise
                continue
            return entry

    def _read(self, request: Callable[..., Mapping[str, Any]], **query: Any) -> list[AuditEntry]:
        items: list[Mapping[str, Any]] = []
        while True:
            page = request(**query, ConsistentRead=True)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return [_entry(item) for item in items]
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def entries(self, question_id: str, thread_id: str | None = None) -> list[AuditEntry]:
        """See :meth:`agent_wait.core.AuditLog.entries`."""
        if thread_id is not None:
            key = _on(Key, "pk").eq(audit_key(thread_id, question_id))
            return self._read(self._table.query, KeyConditionExpression=key)
        found = self._read(
            self._table.scan,
            FilterExpression=_on(Attr, "pk").begins_with(AUDIT_PREFIX)
            & _on(Attr, "question_id").eq(question_id),
        )
        return sorted(found, key=lambda e: (e.thread_id, e.seq))

    def since(self, since: datetime | str | None = None) -> list[AuditEntry]:
        """See :meth:`agent_wait.core.AuditLog.since`."""
        condition = _on(Attr, "pk").begins_with(AUDIT_PREFIX)
        if since is not None:
            condition = condition & _on(Attr, "at").gte(format_utc(moment(since)))
        found = self._read(self._table.scan, FilterExpression=condition)
        return sorted(found, key=_in_time)

    def close(self) -> None:
        """Nothing to release (the boto3 resource belongs to the caller)."""

    def __repr__(self) -> str:
        return f"<DynamoDbAuditLog table={self._table.name!r}>"


def _in_time(entry: AuditEntry) -> tuple[str, str, str, int]:
    return entry.at, entry.thread_id, entry.question_id, entry.seq


def _entry(item: Mapping[str, Any]) -> AuditEntry:
    fields: Sequence[Any] = [item[name] for name in _FIELDS]
    thread_id, question_id, seq, at, kind, data, prev, digest = fields
    return AuditEntry(
        str(thread_id),
        str(question_id),
        int(seq),
        str(at),
        str(kind),
        json.loads(str(data)),
        str(prev),
        str(digest),
    )
