"""A reverse proxy in front of moto that refuses the characters real SQS and SNS refuse.

Real SQS refuses a message body or ``String`` attribute value holding a character outside XML
1.0's set (``#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF``) with
``InvalidMessageContents``, and SNS holds messages and attribute values to the same rule; moto
checks neither. The proxy reads each send request the way the service would (the JSON protocol
boto3 uses for SQS, the query protocol of SNS and of older SQS clients), answers a refused one
with the service's error shape and passes everything else to moto unchanged:

- SQS ``SendMessage``: 400 ``InvalidMessageContents`` (JSON: ``__type`` and the
  ``x-amzn-query-error`` header botocore reads the code from; query: an XML ``ErrorResponse``).
- SQS ``SendMessageBatch`` (JSON): the refused entries in ``Failed`` with that code and
  ``SenderFault`` true, the others sent to moto.
- SNS ``Publish`` and ``PublishBatch``: 400 ``InvalidParameter`` for the whole request.

Use the ``strict_aws`` fixture: an :class:`~tests.aws_moto.Aws` whose ``url`` is the proxy's.
``refusable_questions`` are questions whose argument, thread id and tags hold such characters,
for the SQS, SNS and EventBridge suites alike.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from agent_wait.core import Question, Source, WaitPolicy
from tests.aws_moto import Aws

_REFUSED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ALLOWED = "#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"}
# Query-protocol parameters holding message text: SQS MessageBody and SNS Message, alone or in a
# batch entry, and every attribute's StringValue.
_QUERY_TEXT = re.compile(r"(^|\.)(MessageBody|Message|StringValue)$")


def refusal(text: str, where: str) -> str | None:
    """The service's message for ``text`` (found in ``where``), or None when it is accepted."""
    found = _REFUSED.search(text)
    if found is None:
        return None
    return (
        f"Invalid binary character '#x{ord(found.group()):X}' was found in {where}, the set of "
        f"allowed characters is {_ALLOWED}."
    )


def _sqs_message_refusal(message: dict[str, Any]) -> str | None:
    problem = refusal(str(message.get("MessageBody", "")), "the message body")
    for name, value in (message.get("MessageAttributes") or {}).items():
        problem = problem or refusal(
            str(value.get("StringValue", "")), f"the value of message attribute {name!r}"
        )
    return problem


@dataclass
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def _sqs_json_error(message: str) -> _Answer:
    return _Answer(
        400,
        {
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-query-error": "InvalidMessageContents;Sender",
        },
        json.dumps(
            {"__type": "com.amazonaws.sqs#InvalidMessageContents", "message": message}
        ).encode(),
    )


def _query_error(code: str, message: str) -> _Answer:
    body = (
        "<ErrorResponse><Error><Type>Sender</Type>"
        f"<Code>{code}</Code><Message>{message}</Message></Error>"
        "<RequestId>strict-proxy</RequestId></ErrorResponse>"
    )
    return _Answer(400, {"Content-Type": "text/xml"}, body.encode())


class StrictProxy:
    """The proxy's server thread, and every refusal it answered (the service's messages)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.refused: list[str] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect

            def do_POST(self) -> None:
                proxy._relay(self)

            def do_GET(self) -> None:
                proxy._relay(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and wait for the server thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=30)

    def _note(self, message: str) -> None:
        with self._lock:
            self.refused.append(message)

    def _relay(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        self._answer(handler, self._respond(handler, body))

    def _respond(self, handler: BaseHTTPRequestHandler, body: bytes) -> _Answer:
        target = handler.headers.get("X-Amz-Target", "")
        if target == "AmazonSQS.SendMessage":
            problem = _sqs_message_refusal(json.loads(body))
            if problem:
                self._note(problem)
                return _sqs_json_error(problem)
        elif target == "AmazonSQS.SendMessageBatch":
            return self._send_batch(handler, body)
        elif not target and body:
            form = parse_qsl(body.decode("ascii"), keep_blank_values=True, errors="strict")
            action = dict(form).get("Action", "")
            if action in {"SendMessage", "SendMessageBatch", "Publish", "PublishBatch"}:
                for name, value in form:
                    problem = _QUERY_TEXT.search(name) and refusal(value, f"parameter {name}")
                    if problem:
                        self._note(problem)
                        sns = action.startswith("Publish")
                        code = "InvalidParameter" if sns else "InvalidMessageContents"
                        return _query_error(code, problem)
        return self._forward(handler, body)

    def _send_batch(self, handler: BaseHTTPRequestHandler, body: bytes) -> _Answer:
        request = json.loads(body)
        failed: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []
        for entry in request.get("Entries", []):
            problem = _sqs_message_refusal(entry)
            if problem:
                self._note(problem)
                failed.append(
                    {
                        "Id": entry["Id"],
                        "SenderFault": True,
                        "Code": "InvalidMessageContents",
                        "Message": problem,
                    }
                )
            else:
                kept.append(entry)
        if not failed:
            return self._forward(handler, body)
        answer: dict[str, Any] = {"Successful": []}
        if kept:
            forwarded = self._forward(handler, json.dumps({**request, "Entries": kept}).encode())
            if forwarded.status != 200:
                return forwarded
            answer = json.loads(forwarded.body)
        answer.setdefault("Successful", [])
        answer["Failed"] = [*answer.get("Failed", []), *failed]
        return _Answer(
            200, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(answer).encode()
        )

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> _Answer:
        connection = http.client.HTTPConnection(*self._upstream, timeout=120)
        try:
            headers = {
                name: value
                for name, value in handler.headers.items()
                if name.lower() not in _HOP_BY_HOP
            }
            connection.request(handler.command, handler.path, body, headers)
            response = connection.getresponse()
            data = response.read()
            kept = {
                name: value
                for name, value in response.getheaders()
                if name.lower() not in _HOP_BY_HOP
            }
            return _Answer(response.status, kept, data)
        finally:
            connection.close()

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, answer: _Answer) -> None:
        handler.send_response(answer.status)
        for name, value in answer.headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(answer.body)))
        handler.end_headers()
        handler.wfile.write(answer.body)


# What SQS refuses, each next to text around it: noncharacters stay raw in JSON, control
# characters are escaped by JSON but not in an attribute value.
REFUSED_TEXT = "U+FFFE \ufffe, U+FFFF \uffff, ESC \x1b[31m, NUL \x00, BEL \x07, end"
THREAD_ID = "order\x1b[31m-4471\x00"
TAGS = {"team": "ops\x07desk", "approver_group": "finance\ufffe"}


def refusable_questions(count: int) -> list[Question]:
    """``count`` questions whose argument, thread id and tags hold what SQS and SNS refuse."""
    policy = WaitPolicy(timeout="P3D", tags=TAGS)
    return [
        Question(
            question_id=f"q{i}",
            question={"function": "issue_refund", "args": {"note": REFUSED_TEXT, "i": i}},
            policy=policy,
            source=Source(function="issue_refund"),
        )
        for i in range(count)
    ]


EXPECTED_NOTES = (  # what the delivery of each of those questions reports, in attribute order
    "message attribute 'thread_id': 2 character(s) SNS and SQS refuse replaced by U+FFFD",
    "message attribute 'approver_group': 1 character(s) SNS and SQS refuse replaced by U+FFFD",
    "message attribute 'team': 1 character(s) SNS and SQS refuse replaced by U+FFFD",
)


@dataclass
class StrictAws(Aws):
    """:class:`~tests.aws_moto.Aws` through the proxy; ``refused`` lists what it refused."""

    refused: list[str] = field(default_factory=list[str])


@pytest.fixture
def strict_aws(aws: Aws) -> Iterator[StrictAws]:
    """The reset moto server behind a proxy that refuses what real SQS and SNS refuse."""
    proxy = StrictProxy(aws.url)
    try:
        yield StrictAws(proxy.url, aws.session, proxy.refused)
    finally:
        proxy.close()
