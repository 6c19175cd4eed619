"""The execution ledger kit: what every :class:`~agent_wait.core.ExecutionLedger` must do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_wait.core._ledger import ExecutionLedger
from agent_wait.testing._common import race


class LedgerContract:
    """The behaviour every execution ledger must have. Subclass it as ``Test<YourLedger>``.

    Override :meth:`make_ledger`; each call builds a ledger on the same fresh storage (the
    race test opens several, as several workers would).
    """

    racers = 8
    """How many ledgers race to claim one attempt in :meth:`test_racing_claims_have_one_winner`."""

    def make_ledger(self) -> ExecutionLedger:
        """Build a ledger on this test's storage (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_ledger()")

    @pytest.fixture
    def contract_ledger(self) -> Iterator[ExecutionLedger]:
        """A ledger, closed after the test."""
        ledger = self.make_ledger()
        yield ledger
        ledger.close()

    def test_is_an_execution_ledger(self, contract_ledger: ExecutionLedger) -> None:
        """Failure: the object lacks a method of the ExecutionLedger protocol."""
        assert isinstance(contract_ledger, ExecutionLedger)

    def test_one_claim_wins_and_only_its_token_marks_it_done(
        self, contract_ledger: ExecutionLedger
    ) -> None:
        """Failure: two claims of one attempt won, or another token marked it done.

        The body would run twice, or a stale worker would overwrite the record.
        """
        ledger = contract_ledger
        assert ledger.claim("k", 0, "t1") is None
        found = ledger.claim("k", 0, "t2")
        assert found is not None
        assert (found.key, found.attempt, found.token, found.done) == ("k", 0, "t1", False)
        stale = ledger.finish("k", 0, "t2", {"refunded": 1})
        assert (stale.token, stale.done, stale.result) == ("t1", False, None)
        done = ledger.finish("k", 0, "t1", {"refunded": 41000, "note": "ünïcode"})
        assert (done.done, done.result) == (True, {"refunded": 41000, "note": "ünïcode"})
        assert ledger.finish("k", 0, "t1", "other").result == done.result
        ledger.release("k", 0, "t1")  # done stays done
        assert ledger.claim("k", 0, "t3") == done
        assert ledger.claim("k", 1, "t4") is None  # another attempt, another record
        assert ledger.claim("other", 0, "t5") is None  # another key, another record

    def test_a_released_claim_can_be_claimed_again(self, contract_ledger: ExecutionLedger) -> None:
        """Failure: a raised body keeps its claim, or another token's release dropped it.

        A retry would ask a person instead of running, or drop someone else's claim.
        """
        ledger = contract_ledger
        assert ledger.claim("k", 0, "t1") is None
        ledger.release("k", 0, "other")
        assert ledger.claim("k", 0, "t2") is not None
        ledger.release("k", 0, "t1")
        assert ledger.claim("k", 0, "t2") is None

    def test_finish_of_nothing_recorded_raises_lookup_error(
        self, contract_ledger: ExecutionLedger
    ) -> None:
        """Failure: finishing an attempt nobody claimed silently did nothing or made a record."""
        with pytest.raises(LookupError):
            contract_ledger.finish("k", 0, "t", None)

    def test_a_null_result_is_kept_as_done(self, contract_ledger: ExecutionLedger) -> None:
        """Failure: a body that returned None reads back as not done."""
        contract_ledger.claim("k", 0, "t")
        assert contract_ledger.finish("k", 0, "t", None).done
        found = contract_ledger.claim("k", 0, "t2")
        assert found is not None
        assert (found.done, found.result) == (True, None)

    def test_racing_claims_have_one_winner(self) -> None:
        """Failure: two workers both claimed one attempt; its body would run twice."""
        ledgers = [self.make_ledger() for _ in range(self.racers)]
        try:
            claims = race(self.racers, lambda i: ledgers[i].claim("raced", 0, f"t{i}"), "claim")
        finally:
            for ledger in ledgers:
                ledger.close()
        won = [index for index, found in claims.items() if found is None]
        assert len(won) == 1
