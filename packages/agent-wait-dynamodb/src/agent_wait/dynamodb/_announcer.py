"""DynamoDbAnnounce: one row per question, written once with a conditional put."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, cast

from agent_wait.aws import aws_client_pair, aws_receipt, boto3_sdk, client_config
from agent_wait.core import FOLLOW_UP_TYPES, DeliveryOutcome, LifecycleEvent, WaitEnvelope
from agent_wait.core.transport import ClientAnnounce, Exchange, utf8_size
from agent_wait.dynamodb._options import DEFAULT_CONCURRENCY, DEFAULT_TTL_AFTER, DynamoDbOptions
from agent_wait.dynamodb._table import NO_EXPIRY, already_written

if TYPE_CHECKING:
    from agent_wait.dynamodb._audit import DynamoDbAuditLog
    from agent_wait.dynamodb._store import DynamoDbQuestionStore

try:
    import boto3
    from boto3.dynamodb.types import TypeSerializer
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError("DynamoDbAnnounce needs boto3: pip install agent-wait-dynamodb") from error

logger = logging.getLogger(__name__)

ITEM_LIMIT = 409_600
"""Bytes of one item, attribute names included (AWS: 400 KB)."""
PARTITION_KEY_LIMIT = 2048
"""Bytes (UTF-8) of a partition key value (AWS)."""
SORT_KEY_LIMIT = 1024
"""Bytes (UTF-8) of a sort key value (AWS)."""

_CONDITION = "attribute_not_exists(pk)"


class _Serializer(Protocol):
    def serialize(self, value: object) -> dict[str, Any]: ...


_serializer = cast("_Serializer", TypeSerializer())


def _row(envelope: WaitEnvelope) -> dict[str, Any]:
    """The row of one question, in Python form (numbers as ``Decimal``), without TTL.

    ``pk = "THREAD#<thread_id>"``, ``sk = "WAIT#<question_id>"``, ``status = "open"``,
    ``dedupe_key`` and every envelope field; ``expires_at`` is :data:`NO_EXPIRY` when the
    question has none.
    """
    # Parsing the contract JSON with Decimal floats is how a float reaches DynamoDB intact:
    # boto3 refuses float, and Decimal(float) carries binary noise.
    fields: dict[str, Any] = json.loads(envelope.to_json(), parse_float=Decimal)
    if fields["expires_at"] is None:
        fields["expires_at"] = NO_EXPIRY
    return {
        "pk": f"THREAD#{envelope.thread_id}",
        "sk": f"WAIT#{envelope.question_id}",
        "status": "open",
        "dedupe_key": envelope.dedupe_key,
        **fields,
    }


class DynamoDbAnnounce(ClientAnnounce):
    """Writes one row per question to a DynamoDB table, and never overwrites it.

    The row (see ``docs/announcers/dynamodb.md``) has ``pk = "THREAD#<thread_id>"``, ``sk =
    "WAIT#<question_id>"``, ``status = "open"``, ``dedupe_key`` and every envelope field as its
    own attribute (maps and lists stay nested; numbers are exact ``N`` values). ``expires_at``
    is ``"9999-12-31T23:59:59Z"`` when the question has none, so a range query on the
    ``by_status`` index never sees it as overdue. The put is conditional
    (``attribute_not_exists(pk)``): a republished question leaves the existing row, which a
    consumer may have marked answered, untouched, and counts as delivered.

    An item over 400 KB or a key over DynamoDB's key size fails alone, before sending.

    DynamoDB has no conditional batch write, so each question is its own ``PutItem``. The puts
    are independent: the sync path sends them one after the other, the async path up to
    ``max_concurrency`` at once.

    Opted in to lifecycle events (``with_lifecycle_events``, or ``lifecycle_events`` in its
    configuration entry), it keeps the rows up to date through its own client:
    ``wait.answer_refused`` opens the question again with the host's reason
    (:meth:`DynamoDbQuestionStore.reopen_refused`: exactly once, only while the row still
    records the refused answer), and ``wait.answered`` / ``wait.expired`` close a row still
    open (answered some other way).

    Args:
        table_name: The table (name or ARN); create it with :func:`create_table`.
        ttl_attribute: Name of the table's TTL attribute; each row gets it as epoch seconds.
        ttl_after: How long a row lives after its question's ``expires_at`` (or after the
            publish when it has none): an ISO 8601 duration or seconds. Default 30 days when
            ``ttl_attribute`` is set.
        client: A boto3 DynamoDB client to use (and not close) instead of building one.
        async_client: An aiobotocore DynamoDB client to use (and not close) on the async path.
        endpoint_url: Endpoint of the built clients (DynamoDB Local, moto, a VPC endpoint).
        region: Region of the built clients; default: the AWS config's.
        profile: AWS config profile of the built clients.
        config: A ``botocore.config.Config`` (or a table of its options) merged over the built
            clients' own: standard retries and an ``agent-wait/<version>`` User-Agent suffix.
        max_concurrency: Puts in flight at once on the async path (default 16; 1 sends them
            one after the other). A built client has botocore's pool of 10 connections, so
            more than 10 queue for one; set ``config={"max_pool_connections": 16}`` (or pass
            an ``async_client``) to go beyond.

    Raises:
        ConfigError: An option is invalid; the message names it and the value.
    """

    name = "dynamodb"
    options_model = DynamoDbOptions

    def __init__(
        self,
        table_name: str,
        ttl_attribute: str | None = None,
        ttl_after: str | float | None = None,
        *,
        client: Any = None,
        async_client: Any = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        config: Any = None,
        max_concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        options = DynamoDbOptions.parse(
            self.name,
            {
                "table_name": table_name,
                "ttl_attribute": ttl_attribute,
                "ttl_after": ttl_after,
                "client": client,
                "async_client": async_client,
                "endpoint_url": endpoint_url,
                "region": region,
                "profile": profile,
                "config": config,
                "max_concurrency": max_concurrency,
            },
        )
        self.table_name = options.table_name
        self.ttl_attribute = options.ttl_attribute
        self.ttl_after = DEFAULT_TTL_AFTER if options.ttl_after is None else options.ttl_after
        self.max_concurrency = options.max_concurrency
        self.clients = aws_client_pair(
            "dynamodb", boto3_sdk("agent-wait-dynamodb"), options, name=self.name
        )
        self._options = options
        self._store: DynamoDbQuestionStore | None = None
        self._store_client: Any = None
        self._store_lock = threading.Lock()

    @property
    def destination(self) -> str:
        """The table's name."""
        return self.table_name

    def check_connection(self) -> bool:
        """Describe the table (``DescribeTable``; ``agent-wait config check --connect``)."""
        self.clients.sync().describe_table(TableName=self.table_name)
        return True

    def deliver_event(self, event: LifecycleEvent) -> None:
        """Bring the question's row up to date with a lifecycle event; never write a new one.

        ``wait.answer_refused`` reopens it with the reason, ``wait.answered`` and
        ``wait.expired`` close it if it is still open.
        """
        if event.type in FOLLOW_UP_TYPES:
            return  # the question is still open; the sweeper recorded the follow-up itself
        store = self._question_store()
        if event.type == "wait.answer_refused":
            store.reopen_refused(event)
        else:
            store.close_as_event(event)

    def _question_store(self) -> DynamoDbQuestionStore:
        # Imported here: the store module imports this one.
        from agent_wait.dynamodb._store import DynamoDbQuestionStore

        with self._store_lock:
            if self._store is None:
                # The store's own resource client (a resource client converts Python values),
                # at the region and endpoint of the announcer's client, injected or built.
                client: Any = self.clients.sync()
                options = self._options
                session: Any = boto3.Session(
                    profile_name=options.profile, region_name=client.meta.region_name
                )
                resource: Any = session.resource(
                    "dynamodb",
                    endpoint_url=client.meta.endpoint_url,
                    config=client_config(boto3_sdk("agent-wait-dynamodb"), options.config),
                )
                table: Any = resource.Table(self.table_name)
                self._store = DynamoDbQuestionStore(table)
                self._store_client = resource.meta.client
            return self._store

    def audit_log(self) -> DynamoDbAuditLog:
        """The audit log in the same table (what was asked and delivered)."""
        return self._question_store().audit_log()

    def _close_store(self) -> None:
        with self._store_lock:
            client, self._store, self._store_client = self._store_client, None, None
        if client is not None:
            client.close()

    def close(self) -> None:
        """Close the clients this announcer built (injected ones stay open)."""
        self._close_store()
        super().close()

    async def aclose(self) -> None:
        """Close the async client opened on the running loop, then the sync ones."""
        self._close_store()
        await super().aclose()

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """One conditional PutItem per envelope (BatchWriteItem cannot be conditional)."""
        exchanges: list[Exchange] = []
        for index, envelope in enumerate(envelopes):
            try:
                item = self._item(envelope)
            except (ValueError, TypeError, ArithmeticError) as error:
                outcomes[index] = error
            else:
                exchanges.append(self._put(index, envelope, item, outcomes))
        return exchanges

    def _item(self, envelope: WaitEnvelope) -> dict[str, Any]:
        row = _row(envelope)
        for key, limit in (("pk", PARTITION_KEY_LIMIT), ("sk", SORT_KEY_LIMIT)):
            if utf8_size(row[key]) > limit:
                raise ValueError(
                    f"the row key {key} of question {envelope.question_id!r} is "
                    f"{utf8_size(row[key])} bytes, over DynamoDB's {limit}-byte limit"
                )
        if self.ttl_attribute is not None:
            expires = envelope.expires_at
            base = time.time() if expires is None else _epoch(expires)
            row[self.ttl_attribute] = int(base + self.ttl_after)
        item = {name: _serializer.serialize(value) for name, value in row.items()}
        size = sum(utf8_size(name) + _value_size(value) for name, value in item.items())
        if size > ITEM_LIMIT:
            raise ValueError(
                f"the DynamoDB item of question {envelope.question_id!r} is about {size} bytes, "
                f"over DynamoDB's {ITEM_LIMIT}-byte (400 KB) item limit"
            )
        return item

    def _put(
        self,
        index: int,
        envelope: WaitEnvelope,
        item: dict[str, Any],
        outcomes: list[DeliveryOutcome],
    ) -> Exchange:
        result = yield (
            "put_item",
            {
                "TableName": self.table_name,
                "Item": item,
                "ConditionExpression": _CONDITION,
            },
        )
        if already_written(result):
            logger.debug("question %s already has its row; left as it is", envelope.question_id)
            result = None
        outcomes[index] = result if isinstance(result, BaseException) else aws_receipt(result)


def _epoch(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _value_size(value: Mapping[str, Any]) -> int:
    # DynamoDB's item-size rules: strings and binary by length, numbers ~1 byte per two
    # significant digits + 1, null and booleans 1 byte, lists and maps 3 bytes plus 1 per
    # element (and, for maps, each key's length).
    ((kind, data),) = value.items()
    if kind == "S":
        return utf8_size(data)
    if kind == "N":
        return _number_size(data)
    if kind == "B":
        return len(data)
    if kind in ("NULL", "BOOL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(utf8_size(k) + 1 + _value_size(v) for k, v in data.items())
    if kind == "SS":
        return sum(utf8_size(s) for s in data)
    if kind == "NS":
        return sum(_number_size(n) for n in data)
    return sum(len(b) for b in data)  # BS


def _number_size(text: str) -> int:
    digits = re.split("[eE]", text)[0].lstrip("-").replace(".", "").strip("0") or "0"
    return (len(digits) + 1) // 2 + 1
