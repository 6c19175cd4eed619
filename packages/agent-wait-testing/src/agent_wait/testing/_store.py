"""Conformance kit for question stores (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from agent_wait.core._announce import BaseAnnounce, delivers_events
from agent_wait.core._canonical import answer_digest
from agent_wait.core._identity import Identity
from agent_wait.core._memory import MemoryAnnounce
from agent_wait.core._models import (
    ANSWER_REFUSED_TYPE,
    FOLLOW_UP_TYPES,
    LifecycleEvent,
    Question,
    WaitEnvelope,
)
from agent_wait.core._policy import WaitPolicy
from agent_wait.core._publish import publish
from agent_wait.core._sqlite_entry import SqliteEntry
from agent_wait.core._store import (
    FollowUpQuery,
    FollowUpStore,
    QuestionHistory,
    QuestionStatus,
    QuestionStore,
    RefusalStore,
    SendingStore,
    Transition,
    VotingStore,
    history_key,
    identity_keyword,
)
from agent_wait.host._answering import (
    RESEND_AFTER,
    AnswerResult,
    answer,
    answer_many,
    resend,
    sweep,
)
from agent_wait.host._errors import (
    AlreadyVoted,
    QuestionClosed,
    QuorumNotSupported,
    SendUnconfirmed,
)
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from agent_wait.testing._common import race

_T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


class _TimesOutAfterSending(SqliteEntry):
    """Fault injection: the message is stored, then the reply is lost (a stalled transport)."""

    stalled = True

    def send(self, message: Mapping[str, Any]) -> None:
        super().send(message)
        if self.stalled:
            raise TimeoutError("the transport did not answer in time")


def _sending(store: QuestionStore) -> SendingStore:
    if not isinstance(store, SendingStore):
        pytest.skip(f"{type(store).__name__} holds no answer being sent (SendingStore)")
    return store


def _voting(store: QuestionStore) -> VotingStore:
    if not isinstance(store, VotingStore):
        pytest.skip(f"{type(store).__name__} records no votes (VotingStore)")
    return store


def _vote(
    store: QuestionStore,
    envelope: WaitEnvelope,
    entry: SqliteEntry,
    action: str,
    by: str,
    *,
    edit: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> AnswerResult:
    return answer(
        envelope.question_id,
        action,
        answer=edit,
        by=by,
        thread_id=envelope.thread_id,
        store=store,
        entry=entry,
        at=at,
    )


def _refusing(store: QuestionStore) -> RefusalStore:
    if not isinstance(store, RefusalStore):
        pytest.skip(f"{type(store).__name__} does not reopen refused answers (RefusalStore)")
    return store


def _following_up(store: QuestionStore) -> FollowUpStore:
    if not isinstance(store, FollowUpStore):
        pytest.skip(f"{type(store).__name__} records no follow-ups (FollowUpStore)")
    return store


def _refusal(envelope: WaitEnvelope, answer: Any, by: str | None = "alice") -> LifecycleEvent:
    return lifecycle_event(
        ANSWER_REFUSED_TYPE,
        envelope.thread_id,
        envelope.question_id,
        outcome="invalid_answer",
        by=by,
        at=_T0 + timedelta(minutes=6),
        reason="answer.args: ['amont'] are not arguments of 'refund'",
        answer_digest=answer_digest(answer),
    )


class StoreContract:
    """The behaviour every question store must have. Subclass it as ``Test<YourStore>``.

    Override :meth:`make_store` and :meth:`make_announcer` (an announcer whose questions the
    store sees, such as the sqlite announcer on the store's file).
    """

    racers = 8
    """How many threads race to close one question in :meth:`test_racing_closes_have_one_winner`."""

    def make_store(self) -> QuestionStore:
        """Build a fresh, empty store (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        """Build an announcer whose published questions ``store`` holds (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_announcer()")

    @pytest.fixture
    def contract_store(self) -> Iterator[QuestionStore]:
        """A fresh store, closed after the test."""
        store = self.make_store()
        yield store
        store.close()

    def _ask(
        self,
        store: QuestionStore,
        *,
        timeout: str | None = "PT1H",
        default: Any = None,
        count: int = 1,
        thread_id: str | None = None,
        quorum: int | None = None,
        **follow_up: Any,
    ) -> list[WaitEnvelope]:
        thread = thread_id or f"store-contract-{ULID()}"
        policy = WaitPolicy(
            timeout=timeout,
            default=default,
            allowed_actions=["approve", "reject"],
            quorum=quorum,
            **follow_up,
        )
        questions = [
            Question(
                question_id=f"q-{ULID()}",
                question={"function": "f", "args": {"n": n}},
                policy=policy,
            )
            for n in range(count)
        ]
        announcer = self.make_announcer(store)
        try:
            report = publish(questions, thread, announcer, strict=True, clock=lambda: _T0)
        finally:
            announcer.close()
        return list(report.envelopes)

    def _answer_to_refuse(self, store: RefusalStore) -> LifecycleEvent:
        """Ask a question, record alice's answer and return the host's refusal of that answer."""
        [envelope] = self._ask(store)
        refused = {"action": "approve", "n": 1}
        store.transition(
            envelope.thread_id,
            envelope.question_id,
            QuestionStatus.ANSWERED,
            by="alice",
            answer=refused,
        )
        return _refusal(envelope, refused)

    def test_a_published_question_is_open(self, contract_store: QuestionStore) -> None:
        """If this fails, the store does not see what the announcer published, intact."""
        [envelope] = self._ask(contract_store)
        [found] = contract_store.find(envelope.question_id)
        assert found.envelope == envelope
        assert (found.status, found.answered_at, found.answered_by, found.answer) == (
            "open",
            None,
            None,
            None,
        )
        assert found.is_open
        assert contract_store.find(envelope.question_id, thread_id=envelope.thread_id) == [found]
        assert contract_store.find(envelope.question_id, thread_id="another-thread") == []
        assert envelope.question_id in {
            q.envelope.question_id for q in contract_store.open_questions()
        }

    def test_close_records_who_when_and_what(self, contract_store: QuestionStore) -> None:
        """If this fails, closing a question loses its answer, its approver or its time."""
        [envelope] = self._ask(contract_store)
        answer = {"action": "approve", "note": "Rückerstattung ✓", "n": [1, {"deep": None}]}
        moment = _T0 + timedelta(minutes=5)
        done = contract_store.transition(
            envelope.thread_id,
            envelope.question_id,
            QuestionStatus.ANSWERED,
            by="alice",
            answer=answer,
            at=moment,
        )
        assert done.won
        assert (done.question.status, done.question.answered_by) == ("answered", "alice")
        assert done.question.answered_at == "2026-09-11T09:05:00Z"
        assert done.question.answer == answer
        assert contract_store.find(envelope.question_id) == [done.question]
        assert envelope.question_id not in {
            q.envelope.question_id for q in contract_store.open_questions()
        }

    def test_how_the_answerer_was_identified_is_kept_beside_who(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, a read-back (or a resend) loses how the person who answered was identified.

        A store that takes ``identity_source`` in ``transition`` and ``begin_send`` keeps it;
        one written before it records who only (``identity_source`` None).
        """
        if not identity_keyword(contract_store.transition, "oidc"):
            pytest.skip(f"{type(contract_store).__name__} keeps who answered, not how")
        [envelope, other] = self._ask(contract_store, count=2)
        ids = (envelope.thread_id, envelope.question_id)
        closed = contract_store.transition(
            *ids, QuestionStatus.ANSWERED, by="alice", answer="y", identity_source="oidc"
        )
        assert (closed.question.answered_by, closed.question.identity_source) == ("alice", "oidc")
        [found] = contract_store.find(envelope.question_id, envelope.thread_id)
        assert found.identity_source == "oidc"
        assert found.describe_answerer() == "alice (oidc)"
        assert contract_store.reopen(found)
        [reopened] = contract_store.find(envelope.question_id, envelope.thread_id)
        assert (reopened.answered_by, reopened.identity_source) == (None, None)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            who = Identity(subject="bob@example.com", source="proxy")
            done = answer(
                other.question_id,
                "approve",
                identity=who,
                thread_id=other.thread_id,
                store=contract_store,
                entry=entry,
            )
            assert done.question.identity_source == "proxy"
            [kept] = contract_store.find(other.question_id, other.thread_id)
            assert (kept.answered_by, kept.identity_source) == ("bob@example.com", "proxy")
            again = resend(
                other.question_id, thread_id=other.thread_id, store=contract_store, entry=entry
            )
            assert again == done.message
            assert (again["answered_by"], again["identity_source"]) == ("bob@example.com", "proxy")

    def test_a_closed_question_stays_closed(self, contract_store: QuestionStore) -> None:
        """If this fails, a second answer (or the sweeper) overwrote the first one."""
        [envelope] = self._ask(contract_store, default={"action": "reject"})
        first = contract_store.transition(
            envelope.thread_id,
            envelope.question_id,
            QuestionStatus.ANSWERED,
            by="alice",
            answer={"action": "approve"},
        )
        for status in QuestionStatus.EXPIRED, QuestionStatus.ANSWERED, QuestionStatus.CANCELLED:
            late = contract_store.transition(
                envelope.thread_id, envelope.question_id, status, by="bob", answer={"action": "x"}
            )
            assert not late.won
            assert late.question == first.question, "the loser must see the winner's close"

    def test_racing_closes_have_one_winner(self, contract_store: QuestionStore) -> None:
        """If this fails, two approvers racing on one question can both win."""
        [envelope] = self._ask(contract_store)

        def close(index: int) -> Transition:
            return contract_store.transition(
                envelope.thread_id,
                envelope.question_id,
                QuestionStatus.ANSWERED,
                by=f"approver-{index}",
                answer={"action": "approve", "by": index},
            )

        results = race(self.racers, close, "close")
        winners = [index for index, result in results.items() if result.won]
        assert len(winners) == 1, f"{len(winners)} winners: {winners}"
        final = results[winners[0]].question
        assert all(result.question == final for result in results.values())
        assert (final.answered_by, final.answer) == (
            f"approver-{winners[0]}",
            {"action": "approve", "by": winners[0]},
        )

    def test_overdue_lists_only_open_questions_past_their_deadline(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, the sweeper would miss a question or send a default twice."""
        thread = f"store-contract-{ULID()}"
        due, answered = self._ask(contract_store, timeout="PT1H", count=2, thread_id=thread)
        [later] = self._ask(contract_store, timeout="P3D", thread_id=thread)
        [never] = self._ask(contract_store, timeout=None, thread_id=thread)
        contract_store.transition(
            thread, answered.question_id, QuestionStatus.ANSWERED, by="alice", answer=1
        )
        mine = {due.question_id, answered.question_id, later.question_id, never.question_id}

        def overdue(now: datetime | str) -> set[str]:
            return {q.envelope.question_id for q in contract_store.open_questions_past(now)} & mine

        assert overdue(_T0 + timedelta(minutes=59)) == set()
        assert overdue(_T0 + timedelta(hours=2)) == {due.question_id}
        assert overdue("2026-09-15T09:00:00Z") == {due.question_id, later.question_id}

    def test_reopen_undoes_only_an_unchanged_close(self, contract_store: QuestionStore) -> None:
        """If this fails, an answer that could not be sent leaves the question closed forever."""
        [envelope] = self._ask(contract_store)
        ids = (envelope.thread_id, envelope.question_id)
        first = contract_store.transition(*ids, QuestionStatus.ANSWERED, by="alice", answer=1)
        assert contract_store.reopen(first.question)
        assert contract_store.find(envelope.question_id)[0].is_open
        assert not contract_store.reopen(first.question), "reopened a question already open"
        second = contract_store.transition(*ids, QuestionStatus.ANSWERED, by="bob", answer=2)
        assert second.won
        assert not contract_store.reopen(first.question), "reopened someone else's close"
        assert contract_store.find(envelope.question_id) == [second.question]

    def test_closing_an_unknown_question_raises(self, contract_store: QuestionStore) -> None:
        """If this fails, answering a question nobody asked looks like success."""
        with pytest.raises(LookupError, match="no-such-question"):
            contract_store.transition(
                "no-such-thread", "no-such-question", QuestionStatus.ANSWERED, by="alice"
            )

    def test_history_pages_closed_questions_most_recent_first(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, the inbox's history skips, repeats or misorders closed questions."""
        if not isinstance(contract_store, QuestionHistory):
            pytest.skip(f"{type(contract_store).__name__} keeps no history (QuestionHistory)")
        thread = f"store-contract-{ULID()}"
        asked = self._ask(contract_store, count=5, thread_id=thread, default={"action": "no"})
        closes = [
            (asked[0], QuestionStatus.ANSWERED, "alice", {"action": "approve"}, 3),
            (asked[1], QuestionStatus.EXPIRED, "sweeper", {"action": "no"}, 1),
            (asked[2], QuestionStatus.ANSWERED, "bob", {"action": "reject", "reason": "ß"}, 3),
            (asked[3], QuestionStatus.CANCELLED, "carol", None, 2),
        ]
        for envelope, status, by, value, minutes in closes:
            contract_store.transition(
                thread,
                envelope.question_id,
                status,
                by=by,
                answer=value,
                at=_T0 + timedelta(days=400, minutes=minutes),  # after any other test's closes
            )
        # Two closed in the same second are ordered by thread, then question id, descending.
        tied = sorted([asked[0].question_id, asked[2].question_id], reverse=True)
        expected = [*tied, asked[3].question_id, asked[1].question_id]
        seen: list[str] = []
        after = None
        while len(seen) < len(expected):
            page = contract_store.closed_questions(3, after)
            assert page, "the history ended early"
            seen += [q.envelope.question_id for q in page]
            after = history_key(page[-1])
        assert seen[: len(expected)] == expected
        [first] = contract_store.closed_questions(1)
        assert first.envelope.question_id == tied[0]
        assert first.answered_at == "2027-10-16T09:03:00Z"
        assert first.answered_by in ("alice", "bob")
        by_id = {q.envelope.question_id: q for q in contract_store.closed_questions(50)}
        assert asked[4].question_id not in by_id, "an open question is in the history"
        assert (by_id[asked[1].question_id].status, by_id[asked[1].question_id].answer) == (
            "expired",
            {"action": "no"},
        )
        with pytest.raises(ValueError, match="limit: expected a positive integer, got 0"):
            contract_store.closed_questions(0)

    def test_an_answer_being_sent_keeps_every_other_close_out(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, a second answer can follow one whose send had an unknown outcome."""
        store = _sending(contract_store)
        [envelope] = self._ask(store, default={"action": "reject"})
        ids = (envelope.thread_id, envelope.question_id)
        message = {**envelope.reply_with.model_dump(), "answer": {"action": "approve", "x": 1.5}}
        moment = _T0 + timedelta(minutes=5)
        held = store.begin_send(
            *ids,
            QuestionStatus.ANSWERED,
            by="alice",
            answer={"action": "approve", "x": 1.5},
            message=message,
            at=moment,
        )
        assert held.won
        question = held.question
        assert (question.status, question.closes_as, question.answered_by) == (
            "sending",
            "answered",
            "alice",
        )
        assert (question.message, question.answered_at) == (message, "2026-09-11T09:05:00Z")
        assert store.find(envelope.question_id) == [question]
        assert envelope.question_id in {q.envelope.question_id for q in store.sending_questions()}
        assert envelope.question_id not in {q.envelope.question_id for q in store.open_questions()}
        past = {q.envelope.question_id for q in store.open_questions_past("2099-01-01T00:00:00Z")}
        assert envelope.question_id not in past, "the sweeper would send the default too"
        for status in QuestionStatus.ANSWERED, QuestionStatus.EXPIRED, QuestionStatus.CANCELLED:
            late = store.transition(*ids, status, by="bob", answer={"action": "reject"})
            assert (late.won, late.question) == (False, question)
        again = store.begin_send(
            *ids, QuestionStatus.ANSWERED, by="bob", answer=2, message={**message, "answer": 2}
        )
        assert (again.won, again.question) == (False, question)
        assert store.end_send(question)
        [settled] = store.find(envelope.question_id)
        assert (settled.status, settled.answer, settled.message, settled.closes_as) == (
            "answered",
            {"action": "approve", "x": 1.5},
            None,
            None,
        )
        assert not store.end_send(question), "settled twice"
        assert envelope.question_id not in {
            q.envelope.question_id for q in store.sending_questions()
        }

    def test_a_send_refused_before_it_left_reopens_the_question(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, an answer that never left holds its question for good."""
        store = _sending(contract_store)
        [envelope] = self._ask(store)
        message = {**envelope.reply_with.model_dump(), "answer": 1}
        held = store.begin_send(
            envelope.thread_id,
            envelope.question_id,
            QuestionStatus.EXPIRED,
            by="sweeper",
            answer=1,
            message=message,
        )
        assert store.reopen(held.question)
        [question] = store.find(envelope.question_id)
        assert (question.status, question.message, question.closes_as) == ("open", None, None)
        assert not store.end_send(held.question), "settled a question reopened meanwhile"
        with pytest.raises(ValueError, match="status: expected one of"):
            store.begin_send(
                envelope.thread_id,
                envelope.question_id,
                QuestionStatus.CANCELLED,
                by="carol",
                answer=None,
                message=message,
            )

    def test_racing_sends_have_one_winner(self, contract_store: QuestionStore) -> None:
        """If this fails, two approvers racing on one question can both send."""
        store = _sending(contract_store)
        [envelope] = self._ask(store)

        def send(index: int) -> Transition:
            return store.begin_send(
                envelope.thread_id,
                envelope.question_id,
                QuestionStatus.ANSWERED,
                by=f"approver-{index}",
                answer=index,
                message={**envelope.reply_with.model_dump(), "answer": index},
            )

        results = race(self.racers, send, "send")
        winners = [index for index, result in results.items() if result.won]
        assert len(winners) == 1, f"{len(winners)} winners: {winners}"
        assert all(r.question == results[winners[0]].question for r in results.values())

    def test_a_send_with_an_unknown_outcome_answers_exactly_once(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, a timed-out send lets a second approver answer after the first's arrived.

        The agent would apply one answer and the store record another.
        """
        store = _sending(contract_store)
        thread = f"store-contract-{ULID()}"
        first, second = self._ask(store, count=2, thread_id=thread)
        moment = _T0 + timedelta(minutes=5)
        with _TimesOutAfterSending(tmp_path / "entry.sqlite3") as entry:
            with pytest.raises(SendUnconfirmed) as caught:
                answer_many(
                    {first.question_id: {"action": "approve"}, second.question_id: "later"},
                    by="alice",
                    thread_id=thread,
                    store=store,
                    entry=entry,
                    at=moment,
                )
            received = entry.receive(10)
            assert [r.message for r in received] == [caught.value.message], "nothing delivered"
            for copy in received:
                entry.ack(copy)
            with pytest.raises(QuestionClosed, match="being sent") as refused:
                answer(
                    first.question_id,
                    "reject",
                    by="bob",
                    thread_id=thread,
                    store=store,
                    entry=entry,
                )
            assert refused.value.question.answered_by == "alice"
            # The send may still be in flight: the sweeper leaves it alone until RESEND_AFTER.
            assert sweep(store=store, entry=entry, now=moment, announce=()).resent == []
            report = sweep(store=store, entry=entry, now=moment + RESEND_AFTER, announce=())
            assert len(report.failed) == 2, "a send that times out again must be reported"
            assert report.resent == []
            entry.stalled = False
            report = sweep(store=store, entry=entry, now=moment + RESEND_AFTER, announce=())
            assert sorted(q.envelope.question_id for q in report.resent) == sorted(
                [first.question_id, second.question_id]
            )
            assert report.failed == []
            for envelope, value in ((first, {"action": "approve"}), (second, "later")):
                [settled] = store.find(envelope.question_id, thread)
                assert (settled.status, settled.answered_by, settled.answer) == (
                    "answered",
                    "alice",
                    value,
                )
            with pytest.raises(QuestionClosed, match="already answered by alice"):
                answer(first.question_id, "reject", by="bob", thread_id=thread, store=store)
            # Every copy the entry point got is the one message: one answer per question.
            copies = [r.message for r in entry.receive(10)]
            assert copies, "the held message was not sent again"
            assert all(c == caught.value.message for c in copies)
            # A resend of a settled question sends its recorded answer, as always.
            assert resend(first.question_id, thread_id=thread, store=store, entry=entry)[
                "answer"
            ] == {"action": "approve"}

    def test_a_refused_answer_reopens_its_question_once(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, an answer the agent refused strands its question.

        The store would say answered while the thread still waits, and refuse every corrected
        answer as closed.
        """
        store = _refusing(contract_store)
        [envelope] = self._ask(store)
        ids = (envelope.thread_id, envelope.question_id)
        refused = {"action": "approve", "args": {"amont": 1.0}}
        store.transition(*ids, QuestionStatus.ANSWERED, by="alice", answer=refused)
        assert not store.reopen_refused(_refusal(envelope, {"action": "other"})), "another answer"
        assert not store.reopen_refused(_refusal(envelope, refused, by="bob")), "another person"
        # The digest is of the answer's canonical JSON: 1.0 and 1, any key order, agree.
        assert store.reopen_refused(_refusal(envelope, {"args": {"amont": 1}, "action": "approve"}))
        assert not store.reopen_refused(_refusal(envelope, refused)), "reopened twice"
        [question] = store.find(envelope.question_id)
        assert question.is_open
        assert question.refusal is not None
        assert (question.refusal["reason"], question.refusal["answer"]) == (
            "answer.args: ['amont'] are not arguments of 'refund'",
            refused,
        )
        assert (question.refusal["by"], question.refusal["outcome"]) == ("alice", "invalid_answer")
        assert question.describe_refusal() == (
            "the agent refused this answer: answer.args: ['amont'] are not arguments of 'refund'"
        )
        assert envelope.question_id in {q.envelope.question_id for q in store.open_questions()}
        corrected = store.transition(
            *ids, QuestionStatus.ANSWERED, by="alice", answer={"action": "approve"}
        )
        assert corrected.won
        assert corrected.question.refusal is None
        # A late copy of the old refusal leaves the corrected answer alone.
        assert not store.reopen_refused(_refusal(envelope, refused))
        assert store.find(envelope.question_id) == [corrected.question]

    def test_its_announcer_told_of_a_refusal_reopens_the_question(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, the store's announcer opted in to ``wait.answer_refused`` strands it.

        A deployment that opts its announcer in expects the refusal to reopen the question it
        wrote without wiring ``reopen_refused`` by hand. Skipped for announcers that publish no
        lifecycle events.
        """
        store = _refusing(contract_store)
        event = self._answer_to_refuse(store)
        announcer = self.make_announcer(store)
        try:
            if not delivers_events(type(announcer)):
                pytest.skip(f"{type(announcer).__name__} publishes no lifecycle events")
            announcer.with_lifecycle_events(ANSWER_REFUSED_TYPE)
            first, again = publish_events([event, event], announcer)
        finally:
            announcer.close()
        assert (first.ok, again.ok) == (True, True), first.error or again.error
        [question] = store.find(event.question_id)
        assert question.is_open
        assert question.describe_refusal() == (
            "the agent refused this answer: answer.args: ['amont'] are not arguments of 'refund'"
        )

    def test_racing_refusals_reopen_once(self, contract_store: QuestionStore) -> None:
        """If this fails, refusals racing (redelivered events, several hosts) reopen twice.

        The second could undo a corrected answer given in between.
        """
        store = _refusing(contract_store)
        event = self._answer_to_refuse(store)
        results = race(self.racers, lambda _: store.reopen_refused(event), "refusal")
        assert sum(results.values()) == 1, f"{sum(results.values())} reopened it"
        assert store.find(event.question_id)[0].is_open

    def test_a_quorum_question_is_refused_clearly_or_counts_votes(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, a question needing two approvals is decided by one, or fails obscurely.

        A store that records no votes (not a ``VotingStore``) meets this by refusing the vote,
        naming the store; one that does keeps the question open after the first approval.
        """
        [envelope] = self._ask(contract_store, quorum=2)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            if not isinstance(contract_store, VotingStore):
                with pytest.raises(QuorumNotSupported, match=type(contract_store).__name__):
                    answer(envelope.question_id, "approve", by="alice", store=contract_store,
                           thread_id=envelope.thread_id, entry=entry)  # fmt: skip
                [still] = contract_store.find(envelope.question_id, envelope.thread_id)
                assert still.is_open
                assert entry.receive(10) == []
                return
            result = answer(
                envelope.question_id,
                "approve",
                by="alice",
                thread_id=envelope.thread_id,
                store=contract_store,
                entry=entry,
            )
            assert result.message is None
            assert entry.receive(10) == []
            assert result.question.is_open
            assert [v["by"] for v in result.question.votes] == ["alice"]
            assert result.question.describe_votes() == "1 of 2 approvals, waiting for 1 more"
            with pytest.raises(AlreadyVoted, match="alice already voted"):
                answer(envelope.question_id, "approve", by="alice", store=contract_store,
                       thread_id=envelope.thread_id, entry=entry)  # fmt: skip
            decided = answer(
                envelope.question_id,
                "approve",
                by="bob",
                thread_id=envelope.thread_id,
                store=contract_store,
                entry=entry,
            )
            assert decided.message is not None
            assert (decided.question.status, decided.question.answered_by) == ("answered", "bob")
            [received] = entry.receive(10)
            assert received.message == decided.message

    def test_racing_final_votes_send_one_answer(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, two approvers casting the deciding vote at once both send an answer."""
        store = _voting(contract_store)
        [envelope] = self._ask(store, quorum=2)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            _vote(store, envelope, entry, "approve", "alice")

            def vote(index: int) -> AnswerResult | QuestionClosed:
                try:
                    return _vote(store, envelope, entry, "approve", f"voter-{index}")
                except QuestionClosed as refused:
                    return refused

            results = race(self.racers, vote, "vote")
            sent = [r for r in results.values() if isinstance(r, AnswerResult) and r.message]
            assert len(sent) == 1, f"{len(sent)} deciding votes sent an answer"
            refused = [r for r in results.values() if isinstance(r, QuestionClosed)]
            assert len(refused) == self.racers - 1, "every other vote is told it was decided"
            messages = [r.message for r in entry.receive(self.racers + 1)]
            assert messages == [sent[0].message], "exactly one answer message"
            [closed] = store.find(envelope.question_id, envelope.thread_id)
            assert [v["by"] for v in closed.votes] == ["alice", closed.answered_by]

    def test_a_reject_vetoes_a_quorum(self, contract_store: QuestionStore, tmp_path: Path) -> None:
        """If this fails, a rejection on a question needing two approvals does not end it."""
        store = _voting(contract_store)
        [envelope] = self._ask(store, quorum=2)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            _vote(store, envelope, entry, "approve", "alice")
            vetoed = _vote(store, envelope, entry, "reject", "carol")
            assert vetoed.message is not None
            assert vetoed.message["answer"] == {"action": "reject"}
            assert (vetoed.question.status, vetoed.question.answered_by) == ("answered", "carol")
            with pytest.raises(QuestionClosed, match="already answered by carol"):
                _vote(store, envelope, entry, "approve", "bob")
            assert [r.message for r in entry.receive(10)] == [vetoed.message]

    def test_a_differing_edit_restarts_the_count(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, two approvers of different arguments make a quorum neither approved."""
        store = _voting(contract_store)
        [envelope] = self._ask(store, quorum=2)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            _vote(store, envelope, entry, "approve", "alice")
            edited = {"args": {"n": 7}}
            bob = _vote(store, envelope, entry, "approve", "bob", edit=edited)
            assert bob.message is None, "bob's edit is not what alice approved"
            assert "1 of 2 approvals" in (bob.question.describe_votes() or "")
            assert "alice" in (bob.question.describe_votes() or "")
            again = _vote(store, envelope, entry, "approve", "alice", edit=edited)
            assert again.message is not None
            assert again.message["answer"] == {"action": "approve", "args": {"n": 7}}
            assert [r.message for r in entry.receive(10)] == [again.message]

    def test_the_deadline_default_applies_once_to_a_partly_voted_question(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, a question short of its quorum at the deadline is never answered."""
        store = _voting(contract_store)
        default = {"action": "reject"}
        [envelope] = self._ask(store, quorum=2, timeout="PT1H", default=default)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            _vote(store, envelope, entry, "approve", "alice", at=_T0)
            later = _T0 + timedelta(hours=2)
            first = sweep(store=store, entry=entry, now=later, announce=())
            second = sweep(store=store, entry=entry, now=later, announce=())
            assert [q.envelope.question_id for q in first.expired] == [envelope.question_id]
            assert second.expired == []
            [message] = [r.message for r in entry.receive(10)]
            assert message["answer"] == default

    def test_a_follow_up_is_recorded_once_and_only_while_open(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, a reminder or an escalation can go out twice, or after the answer."""
        store = _following_up(contract_store)
        [envelope] = self._ask(store, remind=["PT10M"])
        at = _T0 + timedelta(minutes=10)
        ids = (envelope.thread_id, envelope.question_id)
        assert store.claim_follow_up(*ids, "reminder:1", at=at) is True
        assert store.claim_follow_up(*ids, "reminder:1", at=at) is False
        assert store.claim_follow_up(*ids, "escalated", at=at) is True
        [question] = store.find(envelope.question_id, envelope.thread_id)
        assert dict(question.follow_ups) == {
            "reminder:1": "2026-09-11T09:10:00Z",
            "escalated": "2026-09-11T09:10:00Z",
        }
        assert question.is_open
        store.transition(*ids, QuestionStatus.ANSWERED, by="alice", answer="approve")
        assert store.claim_follow_up(*ids, "last_warning", at=at) is False
        with pytest.raises(ValueError, match="step: expected 'reminder:<n>'"):
            store.claim_follow_up(*ids, "remind", at=at)

    def test_it_lists_the_open_questions_that_ask_for_follow_ups(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, the sweeper misses a reminder, or reminds of a question already closed."""
        store = contract_store
        if not isinstance(store, FollowUpQuery):
            pytest.skip(f"{type(store).__name__} does not list questions to follow up itself")
        [reminded] = self._ask(store, remind=["PT10M"])
        [plain] = self._ask(store)
        [answered] = self._ask(store, escalate={"after": "PT10M", "to": {"team": "leads"}})
        store.transition(
            answered.thread_id,
            answered.question_id,
            QuestionStatus.ANSWERED,
            by="alice",
            answer="approve",
        )
        listed = {
            (q.envelope.thread_id, q.envelope.question_id)
            for q in store.open_questions_to_follow_up()
        }
        assert (reminded.thread_id, reminded.question_id) in listed
        assert (plain.thread_id, plain.question_id) not in listed
        assert (answered.thread_id, answered.question_id) not in listed

    def test_a_failed_follow_up_delivery_is_recorded_beside_it_once(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, a follow-up a channel could not take is lost, or tried twice at once."""
        store = _following_up(contract_store)
        [envelope] = self._ask(store, remind=["PT10M"])
        at = _T0 + timedelta(minutes=10)
        ids = (envelope.thread_id, envelope.question_id)
        assert store.claim_follow_up(*ids, "reminder:1", at=at) is True
        assert store.claim_follow_up(*ids, "failed:1:slack:reminder:1", at=at) is True
        assert store.claim_follow_up(*ids, "retry:2:slack:reminder:1", at=at) is True
        assert store.claim_follow_up(*ids, "retry:2:slack:reminder:1", at=at) is False
        [question] = store.find(envelope.question_id, envelope.thread_id)
        assert set(question.follow_ups) == {
            "reminder:1",
            "failed:1:slack:reminder:1",
            "retry:2:slack:reminder:1",
        }

    def test_racing_follow_up_claims_have_one_winner(self, contract_store: QuestionStore) -> None:
        """If this fails, two sweepers at once both publish the same reminder."""
        store = _following_up(contract_store)
        [envelope] = self._ask(store, remind=["PT10M"])
        results = race(
            self.racers,
            lambda _: store.claim_follow_up(
                envelope.thread_id, envelope.question_id, "reminder:1", at=_T0
            ),
            "follow-up claim",
        )
        assert sum(results.values()) == 1, f"{sum(results.values())} claimed it"

    def _follow_ups_swept(
        self, store: FollowUpStore, sweeps_at: Callable[[MemoryAnnounce, datetime], None]
    ) -> None:
        """Ask with every follow-up, sweep through its life with ``sweeps_at``, check each once."""
        [envelope] = self._ask(
            store,
            timeout="PT8H",
            default="reject",
            remind=["PT1H", "PT2H"],
            escalate={"after": "PT4H", "to": {"approver_group": "finance-leads"}},
            last_warning="PT30M",
        )
        heard = MemoryAnnounce().with_lifecycle_events(*FOLLOW_UP_TYPES)
        for hours in (0.5, 1, 1.5, 2, 4, 7.5, 7.75):
            sweeps_at(heard, _T0 + timedelta(hours=hours))
        mine = [e for e in heard.events if e.question_id == envelope.question_id]
        assert [(e.type, e.reminder) for e in mine] == [
            ("wait.reminder", 1),
            ("wait.reminder", 2),
            ("wait.escalated", None),
            ("wait.last_warning", None),
        ]
        assert mine[2].escalated_to == {"approver_group": "finance-leads"}
        assert mine[0].envelope == envelope
        [question] = store.find(envelope.question_id, envelope.thread_id)
        assert question.escalated_to == {"approver_group": "finance-leads"}
        assert set(question.follow_ups) == {"reminder:1", "reminder:2", "escalated", "last_warning"}

    def test_two_sweepers_remind_escalate_and_warn_once(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, approvers get a reminder, an escalation or a last warning twice."""
        store = _following_up(contract_store)
        other = self.make_store()
        try:

            def sweeps_at(heard: MemoryAnnounce, moment: datetime) -> None:
                for sweeper in (store, other, store):
                    sweep(store=sweeper, now=moment, announce=[heard])

            self._follow_ups_swept(store, sweeps_at)
        finally:
            other.close()

    def test_racing_sweepers_remind_escalate_and_warn_once(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, sweepers running at once send a reminder or an escalation twice."""
        store = _following_up(contract_store)

        def sweeps_at(heard: MemoryAnnounce, moment: datetime) -> None:
            race(self.racers, lambda _: sweep(store=store, now=moment, announce=[heard]), "sweep")

        self._follow_ups_swept(store, sweeps_at)

    def test_its_announcer_told_of_a_follow_up_leaves_the_question_open(
        self, contract_store: QuestionStore
    ) -> None:
        """If this fails, a store's announcer opted in to reminders closes the question on one.

        Skipped for announcers that publish no lifecycle events.
        """
        [envelope] = self._ask(contract_store, remind=["PT10M"])
        announcer = self.make_announcer(contract_store)
        try:
            if not delivers_events(type(announcer)):
                pytest.skip(f"{type(announcer).__name__} publishes no lifecycle events")
            announcer.with_lifecycle_events(*FOLLOW_UP_TYPES)
            events = [
                lifecycle_event(
                    kind,
                    envelope.thread_id,
                    envelope.question_id,
                    outcome="reminded",
                    by="sweeper",
                    envelope=envelope,
                )
                for kind in FOLLOW_UP_TYPES
            ]
            deliveries = publish_events(events, announcer)
        finally:
            announcer.close()
        assert [d.ok for d in deliveries] == [True] * 3, [d.error for d in deliveries]
        [question] = contract_store.find(envelope.question_id, envelope.thread_id)
        assert question.is_open
