"""An AWS Lambda handler for SQS event source mappings: one framework ``handle`` per record.

Framework-agnostic: it takes the function that handles one message (a framework's
``handle_message`` with the runnable bound, ``strict=True``), so it imports no framework and no
AWS SDK. It answers with Lambda's partial batch response, so only the records that failed go
back to the queue (the event source mapping needs ``FunctionResponseTypes:
["ReportBatchItemFailures"]``); after the queue's ``maxReceiveCount`` receives, its redrive
policy moves a record that keeps failing to the dead-letter queue.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

logger = logging.getLogger(__name__)

LambdaHandler = Callable[[Mapping[str, Any], Any], dict[str, list[dict[str, str]]]]
"""``handler(event, context) -> {"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``."""


def lambda_handler(handle: Callable[[dict[str, Any]], object]) -> LambdaHandler:
    """Build a Lambda handler that calls ``handle`` for each SQS record's message.

    ``handle`` gets the record's body as a JSON object (a start message or an answer). The
    record succeeded if it returns (whatever the outcome: started, resumed, duplicate...), and
    failed if it raises or the body is not a JSON object: the failed records' ``messageId`` are
    returned in ``batchItemFailures``, and only those are delivered again. On a FIFO queue a
    record whose message group already failed in this batch is not handled and is reported
    failed too, so a thread's later message never runs before its earlier one.

    Bind the framework and make a failed publish raise::

        from agent_wait.langgraph import handle_message
        from agent_wait.sqs import lambda_handler

        handler = lambda_handler(lambda m: handle_message(graph, m, announce, strict=True))

    Args:
        handle: Handles one message; raising means "not handled, deliver it again".

    Returns:
        The function to name as the Lambda handler: ``handler(event, context)``.
    """

    def handler(event: Mapping[str, Any], context: Any) -> dict[str, list[dict[str, str]]]:
        records = event.get("Records")
        if not isinstance(records, list):
            raise ValueError(
                f"event: expected an SQS event with a 'Records' list, got keys {sorted(event)!r}"
            )
        failures: list[dict[str, str]] = []
        failed_groups: set[str] = set()
        for record in cast("list[Mapping[str, Any]]", records):
            message_id = str(record["messageId"])
            attributes: Mapping[str, Any] = record.get("attributes") or {}
            group = attributes.get("MessageGroupId")
            attempt = attributes.get("ApproximateReceiveCount", "?")
            if group is not None and group in failed_groups:
                failures.append({"itemIdentifier": message_id})
                continue
            try:
                message = json.loads(record["body"])
                if not isinstance(message, dict):
                    kind = type(message).__name__
                    raise ValueError(f"body: expected a JSON object, got {kind}")
                result = handle(cast("dict[str, Any]", message))
            except Exception as error:  # every failure goes back to the queue
                # The type only: an error's text may quote the question or the answer.
                logger.warning(
                    "SQS message %s (receive %s) failed: %s; it goes back to the queue",
                    message_id,
                    attempt,
                    type(error).__name__,
                )
                logger.debug("SQS message %s failed with", message_id, exc_info=error)
                failures.append({"itemIdentifier": message_id})
                if group is not None:
                    failed_groups.add(group)
            else:
                logger.info(
                    "SQS message %s (receive %s): %s",
                    message_id,
                    attempt,
                    getattr(result, "outcome", "handled"),
                )
        return {"batchItemFailures": failures}

    return handler
