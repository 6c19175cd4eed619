"""The questions table: creating it, and the consumer's query for overdue open questions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol, cast

from agent_wait.core import WaitEnvelope, format_utc

try:
    from boto3.dynamodb.conditions import Key
    from botocore.exceptions import ClientError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError("the DynamoDB helpers need boto3: pip install agent-wait-dynamodb") from error

NO_EXPIRY = "9999-12-31T23:59:59Z"
"""``expires_at`` of a row whose question has none: never before "now" in a range query."""
INDEX_NAME = "by_status"
"""The global secondary index: partition ``status``, sort ``expires_at``, all attributes."""


class _Key(Protocol):
    """A key condition builder (``boto3.dynamodb.conditions.Key``)."""

    def eq(self, value: str) -> Any: ...

    def lt(self, value: str) -> Any: ...


class _Table(Protocol):
    """The part of a boto3 ``Table`` resource the query uses."""

    @property
    def name(self) -> str: ...

    def query(self, **kwargs: Any) -> Mapping[str, Any]: ...


def create_table(
    client_or_resource: Any,
    table_name: str,
    *,
    ttl_attribute: str | None = None,
    wait: bool = True,
) -> dict[str, Any]:
    """Create the questions table (on-demand billing) with its ``by_status`` index.

    Keys: ``pk`` (partition) and ``sk`` (sort), both strings. The ``by_status`` global secondary
    index has ``status`` (partition) and ``expires_at`` (sort) and projects every attribute, so
    :func:`open_questions_past` gets whole envelopes from it.

    Args:
        client_or_resource: A boto3 DynamoDB client or service resource.
        table_name: The table to create.
        ttl_attribute: Turn DynamoDB TTL on for this attribute (the announcer's
            ``ttl_attribute``).
        wait: Wait until the table is active.

    Returns:
        The ``TableDescription`` of the new table.

    Raises:
        botocore.exceptions.ClientError: DynamoDB refused (for example the table exists).
    """
    # A service resource carries its client at .meta.client; a client has no such attribute.
    client = getattr(getattr(client_or_resource, "meta", None), "client", client_or_resource)
    strings = ("pk", "sk", "status", "expires_at")
    response = client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in strings],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "expires_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    if wait:
        client.get_waiter("table_exists").wait(TableName=table_name)
    if ttl_attribute is not None:
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute},
        )
    return cast("dict[str, Any]", response["TableDescription"])


def open_questions_past(
    table: Any, now: datetime | None = None, *, page_size: int | None = None
) -> list[WaitEnvelope]:
    """The open questions whose ``expires_at`` is before ``now``, oldest deadline first.

    A query on the ``by_status`` index (``status = "open"`` and ``expires_at < now``), every
    page of it. Rows a consumer marked otherwise (``status = "answered"``, say) are not in the
    ``open`` partition; rows without a deadline carry ``9999-12-31T23:59:59Z`` and never match.
    The consumer then sends each one's ``default`` as its answer.

    Args:
        table: A boto3 ``Table`` resource (``boto3.resource("dynamodb").Table(name)``).
        now: The moment to compare with (aware); default: the current time.
        page_size: Rows per query request (``Limit``); default: DynamoDB's 1 MB pages.

    Returns:
        The envelopes, as published.

    Raises:
        ValueError: ``page_size`` is not positive, or a row in the index is not an agent-wait
            question (the message names its key).
    """
    typed = cast("_Table", table)
    moment = format_utc(now or datetime.now(UTC))
    key = cast("Callable[[str], _Key]", Key)
    condition = key("status").eq("open") & key("expires_at").lt(moment)
    query: dict[str, Any] = {"IndexName": INDEX_NAME, "KeyConditionExpression": condition}
    if page_size is not None:
        if page_size < 1:
            raise ValueError(f"page_size: expected a positive number of rows, got {page_size!r}")
        query["Limit"] = page_size
    envelopes: list[WaitEnvelope] = []
    while True:
        page = typed.query(**query)
        envelopes.extend(_envelope(item) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return envelopes
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _envelope(item: Mapping[str, Any]) -> WaitEnvelope:
    fields = {name: _plain(item.get(name)) for name in WaitEnvelope.model_fields}
    if fields["expires_at"] == NO_EXPIRY:
        fields["expires_at"] = None
    try:
        return WaitEnvelope.model_validate(fields)
    except ValueError as error:
        raise ValueError(
            f"row pk={item.get('pk')!r} sk={item.get('sk')!r} is not an agent-wait question: {error}"
        ) from error


def _plain(value: object) -> object:
    # The resource layer returns every number as Decimal: back to int, or float when it has
    # a fraction, as the envelope JSON had it.
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in cast("Mapping[str, object]", value).items()}
    if isinstance(value, list):
        return [_plain(v) for v in cast("list[object]", value)]
    return value


def already_written(result: object) -> bool:
    """True for the refusal of a conditional write: the condition failed (the row is there)."""
    if not isinstance(result, ClientError):
        return False
    response = cast("Mapping[str, Any]", getattr(result, "response", {}))
    return response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def moment(value: datetime | str | None) -> datetime:
    """``value`` as an aware datetime (RFC 3339 text or aware datetime); None: now."""
    if value is None:
        return datetime.now(UTC)
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"now: expected an aware datetime, got naive {value.isoformat()!r}")
    return value
