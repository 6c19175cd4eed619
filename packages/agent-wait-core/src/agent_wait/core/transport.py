"""Building blocks for transport plugins: what several announcers need, without any SDK.

Plugins never import each other, so logic that SQS, SNS, EventBridge, Redis, NATS, RabbitMQ and
PostgreSQL announcers share lives here: sizes in UTF-8 bytes, batching by count and bytes, the
routing attributes an envelope becomes, identifiers that fit a transport's character rules, destination templates, a
long-lived sync/async client pair (and its AWS construction), and :class:`ClientAnnounce`, which runs one delivery plan on
either client. Application code does not need this module.
"""

from __future__ import annotations

from agent_wait.core._aws import (
    AWS_MESSAGE_ATTRIBUTES,
    AwsOptions,
    AwsSdk,
    aws_client_pair,
    aws_receipt,
)
from agent_wait.core._clients import ClientPair
from agent_wait.core._errors import BatchEntryFailed
from agent_wait.core._exchange import ClientAnnounce, Exchange
from agent_wait.core._routing import AttributeRules, RoutingAttributes
from agent_wait.core._sizing import chunk, fit_identifier, utf8_size
from agent_wait.core._template import EnvelopeTemplate

__all__ = [
    "AWS_MESSAGE_ATTRIBUTES",
    "AttributeRules",
    "AwsOptions",
    "AwsSdk",
    "BatchEntryFailed",
    "ClientAnnounce",
    "ClientPair",
    "EnvelopeTemplate",
    "Exchange",
    "RoutingAttributes",
    "aws_client_pair",
    "aws_receipt",
    "chunk",
    "fit_identifier",
    "utf8_size",
]
