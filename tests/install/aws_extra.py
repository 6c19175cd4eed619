"""Run by ``nox -s aws_extra``: the AWS announcers installed with or without their ``[async]`` extra.

Not a pytest module: it needs an environment holding only the AWS distributions (plus moto), which
the test suite's environment is not. Against a moto server it publishes through every AWS
announcer on the sync path, then on the async path, which either delivers (aiobotocore installed)
or reports an ImportError naming ``pip install 'agent-wait-<x>[async]'``.

Usage: ``python tests/install/aws_extra.py with-async|without-async``
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from importlib.metadata import version
from pathlib import Path
from typing import Any

import boto3

from agent_wait.core import BaseAnnounce, PublishReport, Question, WaitPolicy, apublish, publish
from agent_wait.dynamodb import DynamoDbAnnounce, create_table
from agent_wait.eventbridge import EventBridgeAnnounce
from agent_wait.sns import SnsAnnounce
from agent_wait.sqs import SqsAnnounce

REGION = "us-east-1"


def _moto() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(server), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.1)


def _announcers(url: str) -> dict[str, BaseAnnounce]:
    session = boto3.Session(region_name=REGION)
    options: dict[str, Any] = {"endpoint_url": url, "region": REGION}
    queue = session.client("sqs", endpoint_url=url).create_queue(QueueName="approvals")
    topic = session.client("sns", endpoint_url=url).create_topic(Name="approvals")
    create_table(session.client("dynamodb", endpoint_url=url), "questions")
    return {
        "agent-wait-sqs": SqsAnnounce(queue["QueueUrl"], **options),
        "agent-wait-sns": SnsAnnounce(topic["TopicArn"], **options),
        "agent-wait-eventbridge": EventBridgeAnnounce("default", **options),
        "agent-wait-dynamodb": DynamoDbAnnounce("questions", **options),
    }


def _question(number: int) -> list[Question]:
    policy = WaitPolicy(timeout="P3D", default={"action": "reject"})
    return [Question(question_id=f"q{number}", question={"amount": 41000}, policy=policy)]


async def _apublish(announce: BaseAnnounce, thread_id: str) -> PublishReport:
    try:
        return await apublish(_question(2), thread_id, announce)
    finally:
        await announce.aclose()


def main(mode: str) -> None:
    """Check one install: ``with-async`` or ``without-async``."""
    has_async = importlib.util.find_spec("aiobotocore") is not None
    assert has_async == (mode == "with-async"), f"aiobotocore installed: {has_async}"
    print(f"boto3 {version('boto3')}, botocore {version('botocore')}, aiobotocore: {has_async}")
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    process, url = _moto()
    try:
        for distribution, announce in _announcers(url).items():
            report = publish(_question(1), f"{distribution}-sync", announce)
            assert report.ok, f"{distribution} sync: {report.failures}"
            report = asyncio.run(_apublish(announce, f"{distribution}-async"))
            if has_async:
                assert report.ok, f"{distribution} async: {report.failures}"
            else:
                assert not report.ok, f"{distribution} async delivered without aiobotocore"
                (failure,) = report.failures
                hint = f"pip install '{distribution}[async]'"
                assert isinstance(failure.exception, ImportError), failure.error
                assert hint in str(failure.exception), failure.error
            print(f"{distribution}: sync delivered; async", "delivered" if has_async else "hint ok")
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main(sys.argv[1])
