"""EventBridgeAnnounce: one event per question, PutEvents in batches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.core import BatchEntryFailed, DeliveryOutcome, WaitEnvelope
from agent_wait.core.transport import (
    AwsSdk,
    ClientAnnounce,
    Exchange,
    aws_client_pair,
    aws_receipt,
    chunk,
    utf8_size,
)
from agent_wait.eventbridge._options import EventBridgeOptions

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        HTTPClientError,
        ProfileNotFound,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError(
        "EventBridgeAnnounce needs boto3: pip install agent-wait-eventbridge"
    ) from error


def _aio_session() -> type[Any]:
    # Imported on the async path's first use: aiobotocore is the [async] extra.
    from aiobotocore.session import AioSession

    return AioSession


_SDK = AwsSdk(
    boto3.Session,
    _aio_session,
    ProfileNotFound,
    Config,
    "agent-wait-eventbridge",
    client_error=ClientError,
    sdk_error=BotoCoreError,
    connection_errors=(BotoConnectionError, HTTPClientError),
)

ENTRY_LIMIT = 262_144
"""Bytes of one entry as EventBridge counts it (UTF-8 of Source, DetailType and Detail)."""
REQUEST_LIMIT = 262_144
"""Bytes of all entries of one PutEvents request (why 256 KiB: see EventBridgeAnnounce)."""
BATCH_LIMIT = 10
"""Entries per PutEvents request (AWS)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    index: int
    params: dict[str, Any]
    size: int


class EventBridgeAnnounce(ClientAnnounce):
    """Puts each envelope on an EventBridge bus as one event; PutEvents in batches.

    ``DetailType`` is the envelope's ``type`` (``"wait.created"``), ``Detail`` the envelope
    JSON and ``Source`` the ``source`` option, so a rule matches questions with
    ``{"source": ["agent-wait"], "detail-type": ["wait.created"]}`` and can route on any
    envelope field, ``detail.tags.approver_group`` included.

    Sizes are checked in UTF-8 bytes before sending, the way EventBridge counts an entry
    (Source + DetailType + Detail): an entry over 256 KiB fails alone. A request holds at most
    10 entries and 256 KiB in all. botocore 1.43's PutEvents reference allows 1 MB per request
    and per entry, older EventBridge guides and several targets (SNS, Lambda async) 256 KB; 256
    KiB is accepted everywhere and every envelope agent-wait publishes fits it. When
    ``FailedEntryCount`` is not zero, each refused entry is a failure of its envelope in the
    report (:class:`agent_wait.core.BatchEntryFailed` with EventBridge's error code).

    Args:
        bus_name: The event bus: a name (``"default"`` for the account's default bus) or an ARN.
        source: The events' ``Source`` (``aws.`` is reserved for AWS services).
        client: A boto3 EventBridge client to use (and not close) instead of building one.
        async_client: An aiobotocore EventBridge client to use (and not close) on the async path.
        endpoint_url: Endpoint of the built clients (LocalStack, moto, a VPC endpoint).
        region: Region of the built clients; default: the bus ARN's, else the AWS config's.
        profile: AWS config profile of the built clients.
        config: A ``botocore.config.Config`` (or a table of its options) merged over the built
            clients' own: standard retries and an ``agent-wait/<version>`` User-Agent suffix.

    Raises:
        ConfigError: An option is invalid; the message names it and the value.
    """

    name = "eventbridge"
    options_model = EventBridgeOptions

    def __init__(
        self,
        bus_name: str,
        source: str = "agent-wait",
        *,
        client: Any = None,
        async_client: Any = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        config: Any = None,
    ) -> None:
        options = EventBridgeOptions.parse(
            self.name,
            {
                "bus_name": bus_name,
                "source": source,
                "client": client,
                "async_client": async_client,
                "endpoint_url": endpoint_url,
                "region": region,
                "profile": profile,
                "config": config,
            },
        )
        self.bus_name = options.bus_name
        self.source = options.source
        options = options.model_copy(update={"region": options.region_or_default()})
        self.clients = aws_client_pair("events", _SDK, options, name=self.name)

    def check_connection(self) -> bool:
        """Describe the bus (``DescribeEventBus``; ``agent-wait config check --connect``)."""
        self.clients.sync().describe_event_bus(Name=self.bus_name)
        return True

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """PutEvents requests of at most 10 entries and 256 KiB."""
        entries: list[_Entry] = []
        for index, envelope in enumerate(envelopes):
            detail = envelope.to_json().decode("utf-8")
            size = utf8_size(self.source, envelope.type, detail)
            if size > ENTRY_LIMIT:
                outcomes[index] = ValueError(
                    f"the EventBridge entry of question {envelope.question_id!r} is {size} bytes "
                    f"(Source, DetailType and Detail), over the {ENTRY_LIMIT}-byte limit"
                )
                continue
            params = {
                "EventBusName": self.bus_name,
                "Source": self.source,
                "DetailType": envelope.type,
                "Detail": detail,
            }
            entries.append(_Entry(index, params, size))
        batches = chunk(entries, max_count=BATCH_LIMIT, max_bytes=REQUEST_LIMIT, size=_size)
        return [self._put(batch, outcomes) for batch in batches]

    def _put(self, batch: list[_Entry], outcomes: list[DeliveryOutcome]) -> Exchange:
        result = yield "put_events", {"Entries": [entry.params for entry in batch]}
        if isinstance(result, BaseException):
            for entry in batch:
                outcomes[entry.index] = result
            return
        # The response lists one result per entry, in request order.
        results = cast("Mapping[str, Any]", result).get("Entries", [])
        for entry, answer in zip(batch, results, strict=False):
            if answer.get("ErrorCode"):
                outcomes[entry.index] = BatchEntryFailed(
                    "EventBridge", answer["ErrorCode"], answer.get("ErrorMessage", "")
                )
            else:
                outcomes[entry.index] = aws_receipt(result, answer.get("EventId"))


def _size(entry: _Entry) -> int:
    return entry.size
