"""EventBridgeAnnounce: one event per question, PutEvents in batches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_wait.aws import (
    AwsBatchAnnounce,
    Call,
    EntryResult,
    aws_client_pair,
    boto3_sdk,
    refused_entry,
    sendable_json,
)
from agent_wait.core import WaitEnvelope
from agent_wait.core.transport import utf8_size
from agent_wait.eventbridge._options import EventBridgeOptions

ENTRY_LIMIT = 262_144
"""Bytes of one entry as EventBridge counts it (UTF-8 of Source, DetailType and Detail)."""
REQUEST_LIMIT = 262_144
"""Bytes of all entries of one PutEvents request (why 256 KiB: see EventBridgeAnnounce)."""
BATCH_LIMIT = 10
"""Entries per PutEvents request (AWS)."""


class EventBridgeAnnounce(AwsBatchAnnounce):
    """Puts each envelope on an EventBridge bus as one event; PutEvents in batches.

    ``DetailType`` is the envelope's ``type`` (``"wait.created"``), ``Detail`` the envelope
    JSON and ``Source`` the ``source`` option, so a rule matches questions with
    ``{"source": ["agent-wait"], "detail-type": ["wait.created"]}`` and can route on any
    envelope field, ``detail.tags.approver_group`` included. ``Detail`` is valid JSON (a
    question with text JSON cannot carry is refused when asked); characters outside XML 1.0's
    set (U+FFFE, U+FFFF) are escaped in it, as the SQS and SNS announcers do, so a rule's SQS
    or SNS target takes the event too, and the decoded value is the same.

    Sizes are checked in UTF-8 bytes before sending, the way EventBridge counts an entry
    (Source + DetailType + Detail): an entry over 256 KiB fails alone. A request holds at most
    10 entries and 256 KiB in all. botocore 1.43's PutEvents reference allows 1 MB per request
    and per entry, older EventBridge guides and several targets (SNS, Lambda async) 256 KB; 256
    KiB is accepted everywhere and every envelope agent-wait publishes fits it. When
    ``FailedEntryCount`` is not zero, each refused entry is a failure of its envelope in the
    report (:class:`agent_wait.core.BatchEntryFailed` with EventBridge's error code); one
    refused with a throttling or server-fault code is first retried once in a new request.

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
    service = "EventBridge"
    batch_limit = BATCH_LIMIT
    request_limit = REQUEST_LIMIT
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
        self.clients = aws_client_pair(
            "events", boto3_sdk("agent-wait-eventbridge"), options, name=self.name
        )

    @property
    def destination(self) -> str:
        """The event bus's name."""
        return self.bus_name

    def check_connection(self) -> bool:
        """Describe the bus (``DescribeEventBus``; ``agent-wait config check --connect``)."""
        self.clients.sync().describe_event_bus(Name=self.bus_name)
        return True

    def message(self, envelope: WaitEnvelope) -> tuple[dict[str, Any], int]:
        """The PutEvents entry of one envelope and its size (Source, DetailType and Detail)."""
        detail = sendable_json(envelope.to_json().decode("utf-8"))
        size = utf8_size(self.source, envelope.type, detail)
        if size > ENTRY_LIMIT:
            raise ValueError(
                f"the EventBridge entry of question {envelope.question_id!r} is {size} bytes "
                f"(Source, DetailType and Detail), over the {ENTRY_LIMIT}-byte limit"
            )
        params = {
            "EventBusName": self.bus_name,
            "Source": self.source,
            "DetailType": envelope.type,
            "Detail": detail,
        }
        return params, size

    def batch_request(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> Call:
        """PutEvents (also for one envelope: EventBridge has no single-event call)."""
        return "put_events", {"Entries": [params for _, params in entries]}

    def batch_results(
        self, response: Mapping[str, Any], entry_ids: Sequence[str]
    ) -> dict[str, EntryResult]:
        """The response lists one result per entry, in request order."""
        results: dict[str, EntryResult] = {}
        for entry_id, answer in zip(entry_ids, response.get("Entries", []), strict=False):
            if answer.get("ErrorCode"):
                results[entry_id] = (
                    None,
                    refused_entry(
                        self.service, answer["ErrorCode"], answer.get("ErrorMessage", "")
                    ),
                )
            else:
                results[entry_id] = (answer.get("EventId"), None)
        return results
