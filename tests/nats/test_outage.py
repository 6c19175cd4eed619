"""Workers on the nats entry point ride out the server going away twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_wait.nats import NatsEntry
from tests.nats.conftest import drop_stream, unique
from tests.outage import check_rides_out_outages


@pytest.fixture
def names(nats_url: str) -> Iterator[tuple[str, str]]:
    stream = f"AW_OUTAGE_{unique()}"
    yield stream, f"awtest.{unique()}"
    for name in (stream, f"{stream}_DEAD", f"KV_{stream}_ATTEMPTS"):
        drop_stream(name)


def test_workers_ride_out_nats_outages(
    names: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    def make_entry(port: int) -> NatsEntry:
        return NatsEntry(
            f"nats://127.0.0.1:{port}",
            stream=names[0],
            subject=names[1],
            visibility_timeout=20.0,
            hold_delay=0.05,
            timeout=2.0,
        )

    check_rides_out_outages(4222, make_entry, caplog)
