"""A real moto server process for the AWS announcers' tests (SNS, SQS, EventBridge, DynamoDB).

One ``moto_server`` process (the venv's executable) on a free 127.0.0.1 port serves every AWS
suite in the session; it is reset before each test that asks for the ``aws`` fixture (SQS sends
get slower with queue depth) and terminated when the session ends. Each suite's conftest
imports the fixtures from here::

    from tests.aws_moto import aws, moto_server  # noqa: F401

Besides the server, this module holds the two test hooks the suites share: counting API
requests through botocore's ``after-call`` event, and fault injection through a ``before-send``
handler that answers with an AWS error response instead of sending (the only mock: throttling
and access denied are faults a moto server cannot produce on demand).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from aiobotocore.awsrequest import AioAWSResponse
from aiobotocore.session import AioSession
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from agent_wait.core import Question, Source, WaitPolicy

REGION = "us-east-1"
ACCOUNT = "123456789012"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
_STARTUP_SECONDS = 30.0


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _executable() -> str:
    # The venv's own moto_server, next to the interpreter running the tests.
    local = Path(sys.executable).with_name("moto_server")
    found = str(local) if local.exists() else shutil.which("moto_server")
    if not found:
        raise RuntimeError("moto_server not found; install the test group (moto[server])")
    return found


class MotoServer:
    """The ``moto_server`` process, started on first use and stopped by its last user."""

    def __init__(self) -> None:
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._recording: Path | None = None
        self._users = 0
        self._lock = threading.Lock()

    def acquire(self) -> MotoServer:
        """Start the server if nobody uses it yet."""
        with self._lock:
            if self._process is None:
                self._start()
            self._users += 1
            return self

    def release(self) -> None:
        """Stop the server when its last user is done."""
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._process is not None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
                self._process = None
                if self._recording is not None:
                    self._recording.unlink(missing_ok=True)
                    self._recording = None

    def _start(self) -> None:
        port = free_port()
        # moto's request recorder writes to the server's working directory unless told where.
        descriptor, recording = tempfile.mkstemp(prefix="moto-recording-")
        os.close(descriptor)
        self._recording = Path(recording)
        process = subprocess.Popen(
            [_executable(), "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "MOTO_RECORDER_FILEPATH": recording},
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + _STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"moto_server exited with {process.returncode} before it was ready"
                )
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=1) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"moto_server not ready on {url} after {_STARTUP_SECONDS}s")
            time.sleep(0.05)
        self._process, self.url = process, url

    def reset(self) -> None:
        """Forget every resource (``POST /moto-api/reset``)."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    def _recorder(self, action: str) -> bytes:
        method = "GET" if action == "download-recording" else "POST"
        request = urllib.request.Request(f"{self.url}/moto-api/recorder/{action}", method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read()

    @contextmanager
    def recording(self) -> Iterator[list[dict[str, Any]]]:
        """Record the requests the server receives in the block (method, url, headers)."""
        requests: list[dict[str, Any]] = []
        self._recorder("reset-recording")
        self._recorder("start-recording")
        try:
            yield requests
        finally:
            self._recorder("stop-recording")
            lines = self._recorder("download-recording").decode("utf-8").splitlines()
            requests.extend(json.loads(line) for line in lines if line.strip())


_SERVER = MotoServer()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """The session's moto server (one process, however many suites use it)."""
    server = _SERVER.acquire()
    try:
        yield server
    finally:
        server.release()


@dataclass
class Aws:
    """Clients and announcer options for the moto server, fresh for one test."""

    url: str
    session: boto3.Session

    @property
    def options(self) -> dict[str, str]:
        """What an announcer needs to reach moto: ``endpoint_url`` and ``region``."""
        return {"endpoint_url": self.url, "region": REGION}

    def client(self, service: str, *, max_attempts: int | None = None) -> Any:
        """A boto3 client of ``service`` on moto."""
        config = None if max_attempts is None else _retries(max_attempts)
        return self.session.client(service, endpoint_url=self.url, config=config)

    @asynccontextmanager
    async def aclient(self, service: str, *, max_attempts: int | None = None) -> AsyncIterator[Any]:
        """An aiobotocore client of ``service`` on moto."""
        config = None if max_attempts is None else _retries(max_attempts)
        creator = AioSession().create_client(
            service, region_name=REGION, endpoint_url=self.url, config=config, **CREDENTIALS
        )
        async with creator as client:
            yield client


def _retries(max_attempts: int) -> Config:
    return Config(retries={"mode": "standard", "total_max_attempts": max_attempts})


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """A reset moto server, and an environment whose only AWS settings are test credentials."""
    moto_server.reset()
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_MAX_ATTEMPTS",
        "AWS_RETRY_MODE",
    ):
        monkeypatch.delenv(name, raising=False)
    for service in ("SNS", "SQS", "EVENTBRIDGE", "DYNAMODB"):
        monkeypatch.delenv(f"AWS_ENDPOINT_URL_{service}", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    # No shared config or credentials file of the machine may leak into a test.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    return Aws(moto_server.url, boto3.Session(region_name=REGION, **CREDENTIALS))


def count_requests(client: Any, service: str, operation: str) -> list[dict[str, Any]]:
    """Record the parameters of every ``operation`` call the client makes (one per request)."""
    calls: list[dict[str, Any]] = []

    def record(**kwargs: Any) -> None:
        calls.append(kwargs["context"].get("params_snapshot", {}))

    def snapshot(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["params_snapshot"] = json.loads(json.dumps(params, default=str))

    client.meta.events.register(f"before-parameter-build.{service}.{operation}", snapshot)
    client.meta.events.register(f"after-call.{service}.{operation}", record)
    return calls


class _Body:
    """A raw HTTP body for both botocore (``stream``) and aiobotocore (``read``)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data

    async def read(self) -> bytes:
        return self._data


def inject_error(
    client: Any,
    service: str,
    operation: str,
    *,
    code: str,
    status: int = 400,
    message: str = "injected fault",
    times: int | None = None,
) -> list[int]:
    """Answer ``operation`` with an AWS error response instead of sending it.

    The response goes through botocore's own parsing and retry handling, so the client raises
    exactly what it would for a real error of that code. Returns a list that grows by one per
    injected response. ``times`` limits how many requests fail (default: all).
    """
    injected: list[int] = []
    protocol = client.meta.service_model.protocol
    is_async = type(client).__module__.startswith("aiobotocore")

    def respond(request: Any, **_: Any) -> AWSResponse | None:
        if times is not None and len(injected) >= times:
            return None
        injected.append(status)
        if protocol == "query":
            body = (
                "<ErrorResponse><Error><Type>Sender</Type>"
                f"<Code>{code}</Code><Message>{message}</Message></Error>"
                "<RequestId>injected</RequestId></ErrorResponse>"
            ).encode()
            headers = {"Content-Type": "text/xml"}
        else:
            body = json.dumps({"__type": code, "message": message}).encode()
            headers = {
                "Content-Type": "application/x-amz-json-1.0",
                "x-amzn-query-error": f"{code};Sender",
            }
        cls = AioAWSResponse if is_async else AWSResponse
        return cls(request.url, status, headers, _Body(body))

    client.meta.events.register(f"before-send.{service}.{operation}", respond)
    return injected


def create_queue(sqs: Any, name: str, **attributes: str) -> tuple[str, str]:
    """Create a queue (FIFO when ``name`` ends in ``.fifo``); return its URL and ARN."""
    if name.endswith(".fifo"):
        attributes.setdefault("FifoQueue", "true")
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message now visible on the queue, with attributes (received ones stay hidden)."""
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)


def questions(
    count: int, *, tags: dict[str, str] | None = None, payload: str = ""
) -> list[Question]:
    """``count`` distinct questions (ids ``q0``...), optionally with tags and a large payload."""
    policy = WaitPolicy(timeout="P3D", default={"action": "reject"}, tags=tags or {})
    return [
        Question(
            question_id=f"q{i}",
            question={
                "function": "issue_refund",
                "args": {"amount": 41000 + i, "ratio": 0.5, "note": payload},
            },
            policy=policy,
            source=Source(function="issue_refund"),
        )
        for i in range(count)
    ]


def lambda_sqs_event(sqs: Any, url: str, arn: str, *, max_messages: int = 10) -> dict[str, Any]:
    """Receive from the queue and build the event Lambda's SQS event source mapping delivers.

    Each record has the shape Lambda gives a function: ``messageId``, ``receiptHandle``,
    ``body``, the system ``attributes`` (``ApproximateReceiveCount``, and on a FIFO queue
    ``MessageGroupId``...), ``messageAttributes`` in Lambda's lower-camel form, ``md5OfBody``,
    ``eventSource`` ``aws:sqs``, ``eventSourceARN`` and ``awsRegion``.
    """
    received = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=max_messages,
        WaitTimeSeconds=1,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message["Attributes"],
                "messageAttributes": {
                    name: {
                        "stringValue": value.get("StringValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": value["DataType"],
                    }
                    for name, value in message.get("MessageAttributes", {}).items()
                },
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": REGION,
            }
            for message in received
        ]
    }


def settle_lambda_batch(
    sqs: Any, url: str, event: dict[str, Any], response: dict[str, Any]
) -> None:
    """What the event source mapping does with a partial batch response.

    The records not named in ``batchItemFailures`` are deleted; the failed ones are left to
    become visible again when their visibility timeout ends.
    """
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    for record in event["Records"]:
        if record["messageId"] not in failed:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=record["receiptHandle"])


_BATCH_ENTRIES = {
    "SendMessageBatch": ("Entries", "MessageBody"),
    "PublishBatch": ("PublishBatchRequestEntries", "Message"),
    "PutEvents": ("Entries", "Detail"),
}


def refuse_entries(
    client: Any,
    service: str,
    operation: str,
    *,
    question_ids: list[str],
    code: str = "ServiceUnavailable",
    sender_fault: bool | None = False,
    times: int | None = 1,
) -> list[list[str]]:
    """Fault injection for refusals the real server cannot produce (throttling, a server fault).

    In the first ``times`` batch requests that carry them (default 1; None: all), the entries of
    ``question_ids`` are taken out before sending, so the server never receives them, and the
    parsed response reports them refused: in ``Failed`` with ``SenderFault`` (SQS, SNS; None
    leaves it out) or, for EventBridge, as an ``ErrorCode`` result in their place. The other
    entries go to the real server. Returns the question ids refused, one list per request.
    """
    refused: list[list[str]] = []
    key, body = _BATCH_ENTRIES[operation]
    mark = f"refused-{id(refused)}"  # several injections on one client keep their own entries

    def take_out(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if times is not None and len(refused) >= times:
            return
        entries = params[key]
        ids = [json.loads(entry[body])["question_id"] for entry in entries]
        chosen = [p for p, question_id in enumerate(ids) if question_id in question_ids]
        if not chosen:
            return
        refused.append([ids[p] for p in chosen])
        context[mark] = [(p, entries[p]) for p in chosen]
        if len(chosen) == len(entries):
            context[f"{mark}-all"] = True  # nothing left to send: answered without a request
        else:
            params[key] = [e for p, e in enumerate(entries) if p not in chosen]

    def answer_alone(context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if not context.get(f"{mark}-all"):
            return None
        cls = AioAWSResponse if type(client).__module__.startswith("aiobotocore") else AWSResponse
        return cls("", 200, {}, _Body(b"")), {}

    def report(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        taken = context.get(mark)
        if not taken:
            return
        if operation == "PutEvents":
            results = parsed.setdefault("Entries", [])
            for position, _entry in taken:
                results.insert(position, {"ErrorCode": code, "ErrorMessage": "injected refusal"})
            parsed["FailedEntryCount"] = parsed.get("FailedEntryCount", 0) + len(taken)
            return
        failed = parsed.setdefault("Failed", [])
        for _position, entry in taken:
            refusal = {"Id": entry["Id"], "Code": code, "Message": "injected refusal"}
            if sender_fault is not None:
                refusal["SenderFault"] = sender_fault
            failed.append(refusal)

    client.meta.events.register(f"before-parameter-build.{service}.{operation}", take_out)
    client.meta.events.register(f"before-call.{service}.{operation}", answer_alone)
    client.meta.events.register(f"after-call.{service}.{operation}", report)
    return refused
