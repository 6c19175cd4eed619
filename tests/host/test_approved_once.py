"""arun_approved_once: an approved call's body runs at most once, on a real sqlite ledger."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import Execution, SqliteLedger
from agent_wait.host.adapter import arun_approved_once


class Parked(Exception):
    """What a framework would raise to park the call on its in-doubt question."""

    def __init__(self, found: Execution) -> None:
        super().__init__(f"in doubt: attempt {found.attempt}")
        self.found = found


class Call:
    """A tool body that counts its runs, and the in-doubt answers given so far."""

    def __init__(self, result: Any = "refunded", *, fail: bool = False) -> None:
        self.result = result
        self.fail = fail
        self.runs = 0
        self.replies: dict[int, Mapping[str, Any]] = {}
        self.asked: list[int] = []

    async def body(self) -> Any:
        self.runs += 1
        if self.fail:
            raise RuntimeError("the refund service is down")
        return self.result

    async def in_doubt(self, found: Execution) -> Mapping[str, Any]:
        self.asked.append(found.attempt)
        if found.attempt not in self.replies:
            raise Parked(found)
        return self.replies[found.attempt]


def done_with(ledger: SqliteLedger, key: str, attempt: int) -> Any:
    """The result recorded for a done attempt (fails the test for any other record)."""
    found = ledger.claim(key, attempt, "reader")
    assert found is not None
    assert found.done, found
    return found.result


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


async def test_a_redelivered_approval_returns_the_recorded_result_without_running(
    ledger: SqliteLedger,
) -> None:
    call = Call({"refund": "r-1"})
    assert await arun_approved_once(ledger, "k", "refund", call.body, call.in_doubt) == {
        "refund": "r-1"
    }
    again = Call("other")
    assert await arun_approved_once(ledger, "k", "refund", again.body, again.in_doubt) == {
        "refund": "r-1"
    }
    assert (call.runs, again.runs, again.asked) == (1, 0, [])
    assert done_with(ledger, "k", 0) == {"refund": "r-1"}


async def test_a_body_that_raises_leaves_no_record_and_runs_again(ledger: SqliteLedger) -> None:
    failing = Call(fail=True)
    with pytest.raises(RuntimeError, match="service is down"):
        await arun_approved_once(ledger, "k", "refund", failing.body, failing.in_doubt)
    working = Call("refunded")
    assert await arun_approved_once(ledger, "k", "refund", working.body, working.in_doubt) == (
        "refunded"
    )
    assert (failing.runs, working.runs, working.asked) == (1, 1, [])


async def test_a_result_that_is_not_json_is_logged_and_not_recorded(
    ledger: SqliteLedger, caplog: pytest.LogCaptureFixture
) -> None:
    result = object()
    call = Call(result)
    with caplog.at_level(logging.WARNING, logger="agent_wait.host"):
        assert await arun_approved_once(ledger, "k", "refund", call.body, call.in_doubt) is result
    assert "approved call 'refund': its result is not JSON" in caplog.text
    assert ledger.claim("k", 0, "later") is None  # released: a later run may run it


async def test_a_run_cut_short_parks_on_the_in_doubt_question_and_runs_nothing(
    ledger: SqliteLedger,
) -> None:
    assert ledger.claim("k", 0, "died") is None  # a worker killed inside the body
    call = Call()
    with pytest.raises(Parked) as parked:
        await arun_approved_once(ledger, "k", "refund", call.body, call.in_doubt)
    assert (parked.value.found.attempt, parked.value.found.token) == (0, "died")
    assert (call.runs, call.asked) == (0, [0])


async def test_yes_records_the_given_result_and_no_runs_the_body_once_more(
    ledger: SqliteLedger,
) -> None:
    assert ledger.claim("yes", 0, "died") is None
    said_yes = Call()
    said_yes.replies[0] = {"action": "yes", "result": {"refund": "by hand"}}
    assert await arun_approved_once(ledger, "yes", "refund", said_yes.body, said_yes.in_doubt) == {
        "refund": "by hand"
    }
    assert said_yes.runs == 0
    assert done_with(ledger, "yes", 0) == {"refund": "by hand"}

    assert ledger.claim("no", 0, "died") is None
    said_no = Call("refunded")
    said_no.replies[0] = {"action": "no"}
    assert await arun_approved_once(ledger, "no", "refund", said_no.body, said_no.in_doubt) == (
        "refunded"
    )
    assert (said_no.runs, said_no.asked) == (1, [0])
    assert done_with(ledger, "no", 1) == "refunded"


async def test_a_run_cut_short_after_no_asks_again_for_the_next_attempt(
    ledger: SqliteLedger,
) -> None:
    assert ledger.claim("k", 0, "died") is None
    assert ledger.claim("k", 1, "died again") is None
    call = Call()
    call.replies[0] = {"action": "no"}
    with pytest.raises(Parked) as parked:
        await arun_approved_once(ledger, "k", "refund", call.body, call.in_doubt)
    assert parked.value.found.attempt == 1
    assert (call.runs, call.asked) == (0, [0, 1])
