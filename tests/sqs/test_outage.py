"""Workers on the sqs entry point ride out the SQS endpoint going away twice."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest

from agent_wait.core import Received
from agent_wait.sqs import SqsEntry
from tests.aws_moto import Aws
from tests.outage import check_rides_out_outages
from tests.sqs.test_entry import fifo_with_dead_letters

pytestmark = pytest.mark.integration


class TakingTurns(SqsEntry):
    """An SqsEntry that asks moto for one message per receive, the workers' receives in turn.

    SQS hides a FIFO queue's message group from every receive while a message of it is in
    flight, and hands a group's messages out in order. moto (checked on 5.2) breaks both in
    ways real SQS does not, which two workers through an outage reach:

    - it reads the groups in flight once per ReceiveMessage call, without a lock, and its
      server answers requests on concurrent threads: two receives at once can each take a
      message of one group;
    - a receive that took two messages of one group and whose answer never arrived (the
      proxy cut it) leaves both in flight; when their visibility runs out together, moto skips
      the first (the second still counts as in flight) and hands out the second first.

    One message per call, one call at a time (``turns``, shared by the workers), keeps moto to
    SQS's rules; acknowledgements, lease renewals and retries, and the outages they ride out,
    stay concurrent across the two workers.
    """

    def __init__(self, turns: threading.Lock, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # pyright: ignore[reportArgumentType]
        self._turns = turns

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        with self._turns:
            return super().receive(1, wait)


def test_workers_ride_out_sqs_outages(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    url = fifo_with_dead_letters(aws, "outage", 5)
    turns = threading.Lock()

    def make_entry(port: int) -> SqsEntry:
        return TakingTurns(
            turns,
            url,
            visibility_timeout=20,
            endpoint_url=f"http://127.0.0.1:{port}",
            region=aws.options["region"],
            config={"connect_timeout": 2, "read_timeout": 5},
        )

    check_rides_out_outages(urlsplit(aws.url).port or 80, make_entry, caplog, workers_count=2)
