"""Conformance kit for announcers (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from ulid import ULID

from agent_wait.core._announce import BaseAnnounce, PublishReport, Receipt
from agent_wait.core._errors import AnnounceFailed
from agent_wait.core._models import WaitEnvelope
from agent_wait.core._publish import apublish, publish
from agent_wait.testing._common import (
    REPLY_TO,
    sample_questions,
)
from agent_wait.testing._options import assert_options_model_matches


class AnnouncerContract:
    """The behaviour every announcer must have. Subclass it as ``Test<YourAnnouncer>``.

    Override :meth:`make_announcer` (required), :meth:`received` (recommended: lets the kit
    check that what arrived equals the envelope, field for field) and
    :meth:`make_failing_announcer` (recommended: lets the kit check failure reporting).
    """

    def make_announcer(self) -> BaseAnnounce:
        """Build a fresh announcer connected to a working transport (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_announcer()")

    def make_failing_announcer(self) -> BaseAnnounce | None:
        """Build an announcer whose transport fails (unreachable endpoint, missing queue, ...).

        Returns None (the default) to skip the failure tests.
        """
        return None

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]] | None:
        """Read back every envelope body the transport holds, as parsed JSON objects.

        Read with a client of your own (the announcer may be closed by then). Returning None
        (the default) skips the body checks.
        """
        return None

    @pytest.fixture
    def contract_announcer(self) -> Iterator[BaseAnnounce]:
        """A fresh announcer, closed after the test."""
        built = self.make_announcer()
        yield built
        built.close()

    def _thread(self) -> str:
        return f"contract-thread-{ULID()}"

    def _assert_bodies(self, announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]) -> None:
        bodies = self.received(announcer)
        if bodies is None:
            return
        by_event = {body.get("event_id"): body for body in bodies if isinstance(body, dict)}  # pyright: ignore[reportUnnecessaryIsInstance]
        for envelope in envelopes:
            assert envelope.event_id in by_event, (
                f"envelope {envelope.event_id} (question {envelope.question_id}) was reported "
                f"delivered but is not among the {len(bodies)} bodies the transport received"
            )
            assert by_event[envelope.event_id] == envelope.to_dict(), (
                "the transport received a body that differs from the envelope contract"
            )

    def _assert_all_ok(self, report: PublishReport, announcer: BaseAnnounce, count: int) -> None:
        assert report.ok, f"deliveries failed: {[d.error for d in report.failures]}"
        assert len(report.deliveries) == count
        assert {d.announcer for d in report.deliveries} == {announcer.name}

    def test_name_is_set(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, the announcer has no usable ``name``.

        Reports and logs identify announcers by name; set a class attribute ``name`` (config
        sets it to the entry-point name).
        """
        name = contract_announcer.name
        assert isinstance(name, str), f"name is {name!r}"  # pyright: ignore[reportUnnecessaryIsInstance]
        assert name.strip(), "name is empty"
        assert name != "BaseAnnounce"

    def test_options_model_matches_the_constructor(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, the announcer's options model is out of step with its constructor.

        A class attribute ``options_model`` (a subclass of
        :class:`agent_wait.core.AnnouncerOptions`) needs one field per keyword argument of the
        constructor (an ``X_env`` argument of a field ``X`` needs no field of its own);
        validate the arguments with ``options_model.parse(self.name, {...})``. Without one,
        core derives the model from the constructor's annotated parameters, which must then
        be named (no ``**kwargs``). Configuration is checked against the model before the
        constructor is called, and ``agent-wait plugins --json`` prints its JSON Schema.
        """
        from agent_wait.core._options import AnnouncerOptions

        assert_options_model_matches(type(contract_announcer), AnnouncerOptions)

    def test_check_connection_on_a_working_transport(
        self, contract_announcer: BaseAnnounce
    ) -> None:
        """If this fails, ``check_connection()`` raises although the transport works.

        It backs ``agent-wait config check --connect``: one cheap round trip that writes
        nothing, True when it ran, False when the announcer has no such check.
        """
        result = contract_announcer.check_connection()
        assert result is True or result is False, f"check_connection() returned {result!r}"

    def test_deliver_one(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing one question does not reach the transport intact.

        Check ``deliver()``: it must send ``envelope.to_json()`` (or an equivalent JSON
        object) and raise on failure, never return silently without sending.
        """
        [question] = sample_questions(1)
        report = publish(
            [question], self._thread(), contract_announcer, reply_to=REPLY_TO, strict=True
        )
        self._assert_all_ok(report, contract_announcer, 1)
        self._assert_bodies(contract_announcer, report.envelopes)

    def test_deliver_many(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing several questions at once loses or corrupts some.

        Check ``deliver_many()``: it must deliver every envelope and return one outcome per
        envelope, in order (None for delivered, the exception otherwise).
        """
        questions = sample_questions(3)
        report = publish(questions, self._thread(), contract_announcer, strict=True)
        self._assert_all_ok(report, contract_announcer, 3)
        assert report.question_ids == [q.question_id for q in questions]
        self._assert_bodies(contract_announcer, report.envelopes)

    def test_deliver_many_returns_one_outcome_per_envelope(
        self, contract_announcer: BaseAnnounce
    ) -> None:
        """If this fails, ``deliver_many()`` breaks its contract.

        It must return a list as long as its input, None or a :class:`Receipt` for each
        delivered envelope (a receipt's ``message_id`` a non-empty string or None, its
        ``attempts`` at least 1 or None). ``publish`` treats any other shape as a failure of the
        whole batch.
        """
        report = publish(sample_questions(4), self._thread(), contract_announcer)
        outcomes = contract_announcer.deliver_many(list(report.envelopes))
        assert isinstance(outcomes, list), f"deliver_many returned {type(outcomes).__name__}"  # pyright: ignore[reportUnnecessaryIsInstance]
        assert len(outcomes) == 4, f"deliver_many returned {len(outcomes)} outcomes for 4 envelopes"
        for outcome in outcomes:
            assert outcome is None or isinstance(outcome, Receipt), f"outcomes: {outcomes!r}"
            if isinstance(outcome, Receipt):
                assert outcome.message_id is None or (
                    isinstance(outcome.message_id, str) and outcome.message_id  # pyright: ignore[reportUnnecessaryIsInstance]
                ), f"receipt message_id: {outcome.message_id!r}"
                assert outcome.attempts is None or outcome.attempts >= 1, f"receipt: {outcome!r}"

    def test_async_path(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, ``apublish`` (``adeliver`` / ``adeliver_many``) is broken.

        The async methods must deliver the same bodies as the sync ones, without blocking the
        event loop, and ``aclose()`` must work inside the loop that used the announcer.
        """
        thread = self._thread()

        async def scenario() -> tuple[PublishReport, PublishReport]:
            one = await apublish(sample_questions(1), thread, contract_announcer, strict=True)
            many = await apublish(sample_questions(3), thread, contract_announcer, strict=True)
            await contract_announcer.aclose()
            return one, many

        one, many = asyncio.run(scenario())
        self._assert_all_ok(one, contract_announcer, 1)
        self._assert_all_ok(many, contract_announcer, 3)
        self._assert_bodies(contract_announcer, [*one.envelopes, *many.envelopes])

    def test_republish_same_question(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing a question again errors or corrupts the first copy.

        Hosts republish on every redelivered start message, with a fresh ``event_id`` and the
        same ``question_id``. The transport may absorb the duplicate (dedupe on
        ``type`` + ``question_id``) or deliver it again; both must count as delivered.
        """
        [question] = sample_questions(1)
        thread = self._thread()
        first = publish([question], thread, contract_announcer, strict=True)
        second = publish([question], thread, contract_announcer, strict=True)
        assert first.ok
        assert second.ok
        assert first.envelopes[0].dedupe_key == second.envelopes[0].dedupe_key
        assert first.envelopes[0].event_id != second.envelopes[0].event_id
        bodies = self.received(contract_announcer)
        if bodies is None:
            return
        published = [first.envelopes[0].to_dict(), second.envelopes[0].to_dict()]
        copies = [b for b in bodies if b.get("question_id") == question.question_id]
        assert copies, "the question is not among the bodies the transport received"
        for copy in copies:
            assert copy in published, "a copy of the question differs from every published envelope"

    def test_failing_transport_is_reported(self) -> None:
        """If this fails, a transport failure escapes ``publish`` or is silently dropped.

        ``deliver``/``deliver_many`` must raise (or return the exception as the outcome) when
        the transport fails; ``publish`` then records it in the ``PublishReport``. Never
        swallow a failure inside the announcer.
        """
        failing = self.make_failing_announcer()
        if failing is None:
            pytest.skip("make_failing_announcer() is not implemented")
        try:
            thread = self._thread()
            one = publish(sample_questions(1), thread, failing)
            many = publish(sample_questions(2), thread, failing)
            asynchronous = asyncio.run(apublish(sample_questions(2), thread, failing))
        finally:
            failing.close()
        for report, count in ((one, 1), (many, 2), (asynchronous, 2)):
            assert not report.ok, "a failing transport was reported as delivered"
            assert len(report.failures) == count
            for delivery in report.failures:
                assert delivery.announcer == failing.name
                assert delivery.error, "a failed delivery carries no error text"
                assert delivery.exception is not None

    def test_strict_raises_announce_failed(self) -> None:
        """If this fails, ``publish(..., strict=True)`` does not raise on a transport failure.

        Hosts use strict mode to leave their inbound message unacknowledged; the failure must
        reach ``publish`` as an exception or an outcome, never be swallowed.
        """
        failing = self.make_failing_announcer()
        if failing is None:
            pytest.skip("make_failing_announcer() is not implemented")
        try:
            with pytest.raises(AnnounceFailed) as raised:
                publish(sample_questions(1), self._thread(), failing, strict=True)
        finally:
            failing.close()
        assert raised.value.report.failures

    def test_close_is_idempotent(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, ``close()``/``aclose()`` cannot be called twice or after use.

        Hosts close announcers on shutdown, sometimes more than once (context managers plus
        explicit calls); closing must be safe in any order.
        """
        publish(sample_questions(1), self._thread(), contract_announcer, strict=True)
        contract_announcer.close()
        contract_announcer.close()
        asyncio.run(contract_announcer.aclose())
        with contract_announcer:
            pass
