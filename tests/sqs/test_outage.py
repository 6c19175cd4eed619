"""Workers on the sqs entry point ride out the SQS endpoint going away twice."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from agent_wait.sqs import SqsEntry
from tests.aws_moto import Aws
from tests.outage import check_rides_out_outages
from tests.sqs.test_entry import fifo_with_dead_letters

pytestmark = pytest.mark.integration


def test_workers_ride_out_sqs_outages(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    url = fifo_with_dead_letters(aws, "outage", 5)

    def make_entry(port: int) -> SqsEntry:
        return SqsEntry(
            url,
            visibility_timeout=20,
            endpoint_url=f"http://127.0.0.1:{port}",
            region=aws.options["region"],
            config={"connect_timeout": 2, "read_timeout": 5},
        )

    # One worker: moto (unlike SQS) does not lock a message group across concurrent receives,
    # so two workers polling at once could each get a message of one thread.
    check_rides_out_outages(urlsplit(aws.url).port or 80, make_entry, caplog, workers_count=1)
