"""The delivery plan SQS, SNS and EventBridge share: one message per envelope, batch requests.

The three services differ in how an envelope becomes a message and in the shape of a batch
response; the plan, the single-message shortcut and what happens to a refused entry are the
same, so they live here once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from agent_wait.aws._attributes import AWS_MESSAGE_ATTRIBUTES, string_attributes
from agent_wait.aws._client import aws_receipt
from agent_wait.aws._errors import refused_entry
from agent_wait.core import BatchEntryFailed, DeliveryOutcome, Receipt, WaitEnvelope
from agent_wait.core.transport import ClientAnnounce, Exchange, chunk, utf8_size

REFUSED_ENTRY_ATTEMPTS = 2
"""Batch requests one entry goes out in at most: an entry the service refused with a retryable
error (not the entry's fault, or throttling) is sent once more in a new batch request, then
reported; an entry at fault is reported at once."""

Call = tuple[str, dict[str, Any]]
"""One SDK call: the client method's name and its keyword arguments."""

Message = tuple[dict[str, Any], int] | tuple[dict[str, Any], int, Sequence[str]]
"""What :meth:`AwsBatchAnnounce.message` returns: a message's request parameters, its size in
bytes and, optionally, notes on what was changed for the service to take it."""

EntryResult = tuple[str | None, BatchEntryFailed | None]
"""What a batch response says of one entry: its message id when taken, else its refusal."""


@dataclass(frozen=True, slots=True)
class AwsMessage:
    """One envelope as the parameters of its message.

    Attributes:
        index: The envelope's position in the publish.
        params: The message's request parameters (without a batch entry ``Id``).
        size: Its size in bytes as the service counts it against the request limit.
        notes: What was changed for the service to take it, reported on its delivery.
    """

    index: int
    params: dict[str, Any]
    size: int
    notes: tuple[str, ...] = ()


class AwsBatchAnnounce(ClientAnnounce):
    """Base of the AWS announcers that send one message per envelope, in batch requests.

    A subclass writes :meth:`message` and :meth:`batch_request`, and :meth:`single_request`
    when the service has a call for one message (a publish of one envelope then uses it), and
    :meth:`batch_results` when its batch response is not SQS's and SNS's ``Successful`` /
    ``Failed`` lists. :meth:`plan` does the rest: envelopes too large fail alone, batches stay
    within :attr:`batch_limit` entries and :attr:`request_limit` bytes, a failed request fails
    the envelopes it carried, and a refused entry follows :data:`REFUSED_ENTRY_ATTEMPTS`.

    Attributes:
        service: The service's name in error messages ("SQS").
        batch_limit: Entries per batch request.
        request_limit: Bytes per batch request (the sum of the messages' ``size``).
    """

    service: ClassVar[str] = "AWS"
    batch_limit: ClassVar[int] = 10
    request_limit: ClassVar[int] = 262_144

    def message(self, envelope: WaitEnvelope) -> Message:
        """The request parameters of one envelope's message and its size in bytes.

        A third item, when present, lists what was changed for the service to take the message
        (an attribute value's characters replaced); the delivery reports it as ``notes``.

        Raises:
            ValueError: The message is over the service's limits; the envelope fails alone.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement message()")

    def single_request(self, params: dict[str, Any]) -> Call | None:
        """The call that sends one message alone, or None to send it as a batch of one."""
        return None

    def batch_request(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> Call:
        """The call that sends ``entries``: pairs of a batch entry id and message parameters."""
        raise NotImplementedError(f"{type(self).__name__} must implement batch_request()")

    def batch_results(
        self, response: Mapping[str, Any], entry_ids: Sequence[str]
    ) -> dict[str, EntryResult]:
        """What a batch response says of each entry, by entry id.

        The default reads SQS's and SNS's ``Successful`` and ``Failed`` lists; an entry the
        response does not mention is left out (and reported as neither sent nor refused).
        """
        results: dict[str, EntryResult] = {}
        for entry in response.get("Successful", []):
            results[entry["Id"]] = (entry.get("MessageId"), None)
        for entry in response.get("Failed", []):
            results[entry["Id"]] = (
                None,
                refused_entry(
                    self.service,
                    entry.get("Code", "?"),
                    entry.get("Message", ""),
                    entry.get("SenderFault"),
                ),
            )
        return results

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """The single-message call for one envelope when there is one, else batch requests."""
        messages: list[AwsMessage] = []
        for index, envelope in enumerate(envelopes):
            try:
                made = self.message(envelope)
            except ValueError as error:
                outcomes[index] = error
            else:
                notes = tuple(made[2]) if len(made) > 2 else ()
                messages.append(AwsMessage(index, made[0], made[1], notes))
        if len(envelopes) == 1 and messages:
            call = self.single_request(messages[0].params)
            if call is not None:
                return [_send_one(messages[0], call, outcomes)]
        batches = chunk(
            messages, max_count=self.batch_limit, max_bytes=self.request_limit, size=_size
        )
        return [self._send_batch(batch, outcomes) for batch in batches]

    def _send_batch(self, batch: list[AwsMessage], outcomes: list[DeliveryOutcome]) -> Exchange:
        # Entry ids are the envelopes' positions: unique, and in every service's id alphabet.
        pending = {str(message.index): message for message in batch}
        tries = dict.fromkeys(pending, 0)
        for attempt in range(1, REFUSED_ENTRY_ATTEMPTS + 1):
            call = self.batch_request([(entry_id, m.params) for entry_id, m in pending.items()])
            result = yield call
            if isinstance(result, BaseException):
                for message in pending.values():
                    outcomes[message.index] = result
                return
            response = cast("Mapping[str, Any]", result)
            sent = aws_receipt(response).attempts or 1  # the SDK's own retries of the request
            results = self.batch_results(response, list(pending))
            retry: dict[str, AwsMessage] = {}
            for entry_id, message in pending.items():
                tries[entry_id] += sent
                if entry_id not in results:
                    continue
                message_id, refused = results[entry_id]
                if refused is None:
                    outcomes[message.index] = Receipt(message_id, tries[entry_id], message.notes)
                elif refused.retryable and attempt < REFUSED_ENTRY_ATTEMPTS:
                    retry[entry_id] = message
                else:
                    refused.attempts = tries[entry_id]
                    outcomes[message.index] = refused
            if not retry:
                return
            pending = retry


def _send_one(message: AwsMessage, call: Call, outcomes: list[DeliveryOutcome]) -> Exchange:
    result = yield call
    outcomes[message.index] = (
        result
        if isinstance(result, BaseException)
        else aws_receipt(
            result, cast("Mapping[str, Any]", result).get("MessageId"), notes=message.notes
        )
    )


def _size(message: AwsMessage) -> int:
    return message.size


def message_attributes(
    envelope: WaitEnvelope,
    fixed: Mapping[str, str],
    *,
    what: str,
    logger: logging.Logger,
    notes: list[str] | None = None,
) -> tuple[dict[str, dict[str, str]], int]:
    """The SNS/SQS ``MessageAttributes`` of one envelope and their size in bytes.

    ``type``, ``thread_id``, the announcer's fixed attributes and the policy's tags, at most 10
    (see :data:`AWS_MESSAGE_ATTRIBUTES`); tags left out are logged at WARNING on ``logger``,
    named with the reason. Characters the services refuse in a value are replaced (see
    :func:`string_attributes`), logged at WARNING with the attribute's name.

    Args:
        envelope: The envelope.
        fixed: The announcer's fixed attributes, as its options validated them.
        what: How the warning says the message went ("SQS message ... sent").
        logger: The announcer's logger.
        notes: Gets one line per value changed, for the delivery to report.
    """
    routing = AWS_MESSAGE_ATTRIBUTES.select(envelope, fixed)
    if routing.dropped:
        logger.warning(
            "%s of question %s without tags %s",
            what,
            envelope.question_id,
            "; ".join(f"{name!r} ({why})" for name, why in routing.dropped.items()),
        )
    attributes, changed = string_attributes(routing.values)
    if changed:
        logger.warning("%s of question %s: %s", what, envelope.question_id, "; ".join(changed))
        if notes is not None:
            notes.extend(changed)
    size = sum(
        utf8_size(name, "String", value["StringValue"]) for name, value in attributes.items()
    )
    return attributes, size
