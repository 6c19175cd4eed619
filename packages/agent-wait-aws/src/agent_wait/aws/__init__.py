"""What the AWS announcers of agent-wait share, for plugin authors; applications need none of it.

agent-wait-sqs, -sns, -eventbridge and -dynamodb depend on this distribution, the way the
OpenTelemetry instrumentations share ``opentelemetry-util-http``, so that core holds no AWS code.
An announcer for another AWS service subclasses :class:`AwsBatchAnnounce` (one message per
envelope, batch requests) or ``ClientAnnounce``, with options inheriting :class:`AwsOptions` and
clients from :func:`aws_client_pair`; the package README shows a complete one.
"""

from __future__ import annotations

from agent_wait.aws._attributes import AWS_MESSAGE_ATTRIBUTES, sendable_json, string_attributes
from agent_wait.aws._batch import (
    REFUSED_ENTRY_ATTEMPTS,
    AwsBatchAnnounce,
    AwsMessage,
    Call,
    EntryResult,
    Message,
    message_attributes,
)
from agent_wait.aws._client import (
    RETRY_MODE,
    AwsOptions,
    AwsSdk,
    aws_client_pair,
    aws_receipt,
    client_config,
    user_agent_extra,
)
from agent_wait.aws._errors import RETRYABLE_CODES, refused_entry
from agent_wait.aws._sdk import boto3_sdk

__all__ = [
    "AWS_MESSAGE_ATTRIBUTES",
    "REFUSED_ENTRY_ATTEMPTS",
    "RETRYABLE_CODES",
    "RETRY_MODE",
    "AwsBatchAnnounce",
    "AwsMessage",
    "AwsOptions",
    "AwsSdk",
    "Call",
    "EntryResult",
    "Message",
    "aws_client_pair",
    "aws_receipt",
    "boto3_sdk",
    "client_config",
    "message_attributes",
    "refused_entry",
    "sendable_json",
    "string_attributes",
    "user_agent_extra",
]
