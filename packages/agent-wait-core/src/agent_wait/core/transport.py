"""Building blocks for transport plugins: what several announcers need, without any SDK.

Plugins never import each other, so logic that several announcers share lives here: sizes in
UTF-8 bytes, batching by count and bytes, the routing attributes an envelope becomes,
identifiers that fit a transport's character rules, destination templates, the headers plugins
add (``transport_headers``: a trace context), a long-lived sync/async client pair,
:class:`ClientAnnounce`, which runs one delivery plan on either client, what every entry point
does with a received body (``read_message``: the message, or :class:`Poison` to dead-letter at
once; ``dead_letter``: a dead letter from a stored body, readable or not), and an entry point's
connection errors as ``ConnectionError`` (``connection_errors``). What only the AWS
announcers share (client construction from boto3, AWS error codes, batch requests) lives in
``agent_wait.aws`` (the ``agent-wait-aws`` distribution), so core holds no AWS code. Application code does not need this module.
"""

from __future__ import annotations

from agent_wait.core._clients import ClientPair
from agent_wait.core._entry import (
    MAX_MESSAGE_BYTES,
    Poison,
    check_body_size,
    connection_errors,
    dead_letter,
    read_message,
)
from agent_wait.core._errors import BatchEntryFailed
from agent_wait.core._exchange import ClientAnnounce, Exchange
from agent_wait.core._publish import transport_headers
from agent_wait.core._routing import AttributeRules, RoutingAttributes
from agent_wait.core._sizing import chunk, fit_identifier, utf8_size
from agent_wait.core._template import EnvelopeTemplate

__all__ = [
    "MAX_MESSAGE_BYTES",
    "AttributeRules",
    "BatchEntryFailed",
    "ClientAnnounce",
    "ClientPair",
    "EnvelopeTemplate",
    "Exchange",
    "Poison",
    "RoutingAttributes",
    "check_body_size",
    "chunk",
    "connection_errors",
    "dead_letter",
    "fit_identifier",
    "read_message",
    "transport_headers",
    "utf8_size",
]
