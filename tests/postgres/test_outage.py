"""Workers on the postgres entry point ride out the server going away twice."""

from __future__ import annotations

import pytest

from agent_wait.postgres import PostgresEntry
from tests.outage import check_rides_out_outages
from tests.postgres.test_entry import entry_table as entry_table


def test_workers_ride_out_postgres_outages(
    postgres_url: str, entry_table: str, caplog: pytest.LogCaptureFixture
) -> None:
    def make_entry(port: int) -> PostgresEntry:
        return PostgresEntry(
            f"postgresql://postgres@127.0.0.1:{port}/test",
            table=entry_table,
            channel=entry_table,
            visibility_timeout=20.0,
            retry_delay=0.1,
            poll_interval=0.5,
            timeout=2.0,
        )

    check_rides_out_outages(5432, make_entry, caplog)
