"""Conformance kit for audit logs (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from agent_wait.core._announce import BaseAnnounce
from agent_wait.core._audit import AuditEntry, AuditLog, audit_log_of, by_question, verify
from agent_wait.core._models import Question
from agent_wait.core._policy import WaitPolicy
from agent_wait.core._publish import publish
from agent_wait.core._sqlite_entry import SqliteEntry
from agent_wait.core._store import QuestionStore
from agent_wait.host._answering import answer
from agent_wait.host._errors import QuestionClosed
from agent_wait.testing._common import race


class AuditLogContract:
    """The behaviour every audit log must have. Subclass it as ``Test<YourLog>``.

    The log is the one beside a question store (``audit_log_of(store)``). Override
    :meth:`make_store` and :meth:`make_announcer` as for
    :class:`~agent_wait.testing.StoreContract`, and :meth:`edit_entry` and :meth:`remove_entry`,
    which change the stored record behind the log's back, as someone with write access to the
    database would.
    """

    racers = 8
    """How many threads append to one question at once in :meth:`test_racing_appends_take_distinct_places`."""

    def make_store(self) -> QuestionStore:
        """Build a fresh, empty store that keeps an audit log (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        """Build an announcer whose published questions ``store`` holds (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_announcer()")

    def edit_entry(self, store: QuestionStore, entry: AuditEntry, data: dict[str, Any]) -> None:
        """Replace the stored ``data`` of ``entry``, leaving its hash as it was (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement edit_entry()")

    def remove_entry(self, store: QuestionStore, entry: AuditEntry) -> None:
        """Delete ``entry`` from the stored record (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement remove_entry()")

    @pytest.fixture
    def contract_store(self) -> Iterator[QuestionStore]:
        """A fresh store, closed after the test."""
        store = self.make_store()
        yield store
        store.close()

    @staticmethod
    def log_of(store: QuestionStore) -> AuditLog:
        """The audit log beside ``store``."""
        log = audit_log_of(store)
        assert log is not None, f"{store!r} keeps no audit log (no audit_log())"
        return log

    def _quorum_question(self, store: QuestionStore, tmp_path: Path) -> tuple[str, str]:
        """Publish a 2-of-3 refund, approved by alice and bob, carol refused; its (thread, id)."""
        thread = f"audit-contract-{ULID()}"
        question = Question(
            question_id="refund",
            question={"function": "issue_refund", "args": {"amount": 41000}},
            policy=WaitPolicy(quorum=2),
        )
        announcer = self.make_announcer(store)
        try:
            publish([question], thread, announcer, strict=True)
        finally:
            announcer.close()
        with SqliteEntry(tmp_path / f"entry-{thread}.sqlite3") as entry:
            first = answer(
                "refund", "approve", by="alice", thread_id=thread, store=store, entry=entry
            )
            assert first.message is None
            decided = answer(
                "refund", "approve", by="bob", thread_id=thread, store=store, entry=entry
            )
            assert decided.message is not None
            with pytest.raises(QuestionClosed, match="already answered by bob"):
                answer("refund", "approve", by="carol", thread_id=thread, store=store, entry=entry)
            assert len(entry.receive(10)) == 1
        return thread, "refund"

    def test_a_quorum_is_recorded_and_verifies(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, the log misses, reorders or alters what happened to a question."""
        thread, question_id = self._quorum_question(contract_store, tmp_path)
        log = self.log_of(contract_store)
        entries = log.entries(question_id, thread)
        assert [e.kind for e in entries] == ["asked", "delivered", "vote", "vote", "answered"]
        assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
        assert [e.data.get("by") for e in entries[2:]] == ["alice", "bob", "bob"]
        assert entries[0].data["call_digest"] == entries[-1].data["call_digest"]
        assert verify(entries) == []
        exported = [e.hash for e in log.since(entries[0].at) if e.thread_id == thread]
        assert exported == [e.hash for e in entries]

    def test_an_edited_entry_is_detected(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, an entry changed in the database still verifies."""
        thread, question_id = self._quorum_question(contract_store, tmp_path)
        log = self.log_of(contract_store)
        vote = log.entries(question_id, thread)[2]
        self.edit_entry(contract_store, vote, {**vote.data, "by": "mallory"})
        edited = log.entries(question_id, thread)
        assert edited[2].data["by"] == "mallory", "edit_entry did not change the stored entry"
        [problem] = verify(edited)
        assert problem.startswith(
            f"entry 3 (vote, {thread}/{question_id}): its content does not match its hash"
        )

    def test_a_removed_entry_is_detected(
        self, contract_store: QuestionStore, tmp_path: Path
    ) -> None:
        """If this fails, an entry deleted from the database leaves a record that verifies."""
        thread, question_id = self._quorum_question(contract_store, tmp_path)
        log = self.log_of(contract_store)
        self.remove_entry(contract_store, log.entries(question_id, thread)[2])
        left = log.entries(question_id, thread)
        assert [e.seq for e in left] == [1, 2, 4, 5]
        [problem] = verify(left)
        assert problem == (
            f"entry 4 (vote, {thread}/{question_id}): does not follow entry 2: an entry was "
            "removed or inserted"
        )

    def test_a_run_with_other_arguments_is_flagged(self, contract_store: QuestionStore) -> None:
        """If this fails, the log reads back a digest other than the one appended."""
        log = self.log_of(contract_store)
        thread = f"audit-contract-{ULID()}"
        approved = {"function": "issue_refund", "call_digest": "sha256:" + "a" * 64}
        log.append(thread, "q1", "answered", {"by": "alice", **approved})
        log.append(thread, "q1", "executed", {**approved, "outcome": "returned"})
        assert verify(log.entries("q1", thread)) == []
        log.append(thread, "q1", "executed", {**approved, "call_digest": "sha256:" + "b" * 64})
        [problem] = verify(log.entries("q1", thread))
        assert "issue_refund ran with arguments other than the approved ones" in problem

    def test_records_are_kept_per_thread(self, contract_store: QuestionStore) -> None:
        """If this fails, two threads asking the same question id share or lose a chain."""
        log = self.log_of(contract_store)
        first, second = f"audit-contract-{ULID()}", f"audit-contract-{ULID()}"
        for thread in (first, second, first):
            log.append(thread, "same", "cancelled", {"by": thread})
        mine = [e for e in log.entries("same") if e.thread_id in (first, second)]
        chains = by_question(mine)
        assert sorted(len(c) for c in chains.values()) == [1, 2]
        assert all(verify(chain) == [] for chain in chains.values())
        assert [e.seq for e in log.entries("same", first)] == [1, 2]
        assert [e.data["by"] for e in log.entries("same", second)] == [second]

    def test_since_exports_from_a_moment_in_time_order(self, contract_store: QuestionStore) -> None:
        """If this fails, ``agent-wait audit --export --since`` misses or misorders entries."""
        log = self.log_of(contract_store)
        thread = f"audit-contract-{ULID()}"
        log.append(thread, "b", "cancelled", {"by": "x"}, at="2026-09-11T09:00:00Z")
        log.append(thread, "a", "cancelled", {"by": "y"}, at="2026-09-11T10:00:00Z")
        log.append(thread, "b", "resumed", {"outcome": "x"}, at="2026-09-11T11:00:00Z")
        later = [e for e in log.since("2026-09-11T10:00:00Z") if e.thread_id == thread]
        assert [(e.question_id, e.seq, e.at) for e in later] == [
            ("a", 1, "2026-09-11T10:00:00Z"),
            ("b", 2, "2026-09-11T11:00:00Z"),
        ]
        everything = [e for e in log.since() if e.thread_id == thread]
        assert len(everything) == 3

    def test_racing_appends_take_distinct_places(self, contract_store: QuestionStore) -> None:
        """If this fails, two writers appending at once overwrite or fork the chain."""
        log = self.log_of(contract_store)
        thread = f"audit-contract-{ULID()}"
        race(
            self.racers,
            lambda i: log.append(thread, "q1", "vote", {"by": f"voter-{i}"}),
            "append",
        )
        entries = log.entries("q1", thread)
        assert [e.seq for e in entries] == list(range(1, self.racers + 1))
        assert sorted(e.data["by"] for e in entries) == sorted(
            f"voter-{i}" for i in range(self.racers)
        )
        assert verify(entries) == []
