"""Listing 10,000 open questions: every page is one walk of the status index from its cursor."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    Question,
    QuestionStatus,
    SqliteAnnounce,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.inbox._query import Filters, Listing


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "inbox.sqlite3"
    questions = [
        Question(
            question_id=f"q{n:05}",
            question={"function": "issue_refund", "args": {"amount": n}},
            policy=WaitPolicy(timeout=f"PT{(n % 97) + 1}M", tags={"team": f"t{n % 5}"}),
        )
        for n in range(10_000)
    ]
    publish(questions, "bulk", SqliteAnnounce(path), strict=True)
    return path


def plans(path: Path, run: Callable[[], object]) -> list[str]:
    """The query plans of the statements ``run`` sends to sqlite."""
    statements: list[str] = []
    original = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = original(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", traced)
        run()
    with sqlite3.connect(path) as connection:
        return [
            " / ".join(row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
            for sql in statements
            if sql.startswith("SELECT")
        ]


def test_a_deep_page_walks_the_index_from_its_cursor(big: Path) -> None:
    listing = Listing(SqliteQuestionStore(big))
    page = listing.open_page(Filters(), None, 50)
    for _ in range(40):  # 2,000 questions in
        assert page.next_cursor is not None
        page = listing.open_page(Filters(), page.next_cursor, 50)
    assert len(page.questions) == 50
    cursor = page.next_cursor
    [plan] = plans(big, lambda: listing.open_page(Filters(), cursor, 50))
    assert "USING INDEX agent_wait_inbox_by_status (status=? AND expires_at>?)" in plan
    assert "TEMP B-TREE" not in plan  # no sort: the index order is the page order
    filtered = plans(big, lambda: listing.open_page(Filters(tag=("team", "t3")), cursor, 50))
    assert "agent_wait_inbox_by_status" in filtered[0]
    assert "TEMP B-TREE" not in filtered[0]


def test_pages_are_in_deadline_order_without_gaps(big: Path) -> None:
    listing = Listing(SqliteQuestionStore(big))
    seen: list[str] = []
    deadlines: list[str] = []
    cursor = None
    while True:
        page = listing.open_page(Filters(), cursor, 500)
        seen += [q.envelope.question_id for q in page.questions]
        deadlines += [q.envelope.expires_at or "" for q in page.questions]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 10_000
    assert deadlines == sorted(deadlines)


def test_the_change_marker_moves_on_every_new_and_closed_question(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    listing = Listing(SqliteQuestionStore(path))

    def ask(question_id: str) -> None:
        question = Question(question_id=question_id, question="Refund?")
        publish([question], f"t-{question_id}", SqliteAnnounce(path), strict=True)

    empty = listing.change_marker()  # no file yet
    ask("q1")
    asked = listing.change_marker()
    assert asked != empty
    assert listing.change_marker() == asked  # nothing changed: the same marker
    # Closed through the very store the listing reads, on its own connection.
    listing.store.transition("t-q1", "q1", QuestionStatus.ANSWERED, by="alice", answer={})
    closed = listing.change_marker()
    assert closed != asked
    ask("q2")
    assert listing.change_marker() not in (empty, asked, closed)
    # Another listing (another worker process, say) computes the same marker for the same state:
    # the live-update stream compares a page's marker with its own.
    assert Listing(SqliteQuestionStore(path)).change_marker() == listing.change_marker()


class _Through:
    """The same store, read only through the question store protocol (not as sqlite)."""

    def __init__(self, store: SqliteQuestionStore) -> None:
        self._store = store

    # Spelled out: since Python 3.12 a runtime protocol check looks attributes up statically,
    # so names reached only through __getattr__ would not make this a QuestionHistory.
    def open_questions(self) -> Any:
        return self._store.open_questions()

    def closed_questions(self, limit: int, after: Any = None) -> Any:
        return self._store.closed_questions(limit, after)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.mark.parametrize("through", [False, True], ids=["sql", "protocol"])
def test_filters_by_approver_group_and_state(tmp_path: Path, through: bool) -> None:
    from datetime import UTC, datetime, timedelta

    from agent_wait.core import SqliteEntry
    from agent_wait.host import answer, cancel

    path = tmp_path / "inbox.sqlite3"
    past = datetime.now(UTC) - timedelta(days=2)

    def ask(question_id: str, group: str, timeout: str, clock: Any = None) -> None:
        policy = WaitPolicy(timeout=timeout, tags={"approver_group": group})
        question = Question(question_id=question_id, question=1, policy=policy)
        publish([question], f"t-{question_id}", SqliteAnnounce(path), strict=True, clock=clock)

    ask("late", "finance", "P1D", clock=lambda: past)
    ask("soon", "finance", "PT1H")
    ask("gdpr", "privacy", "PT1H")
    ask("done", "finance", "PT1H")
    ask("gone", "privacy", "PT1H")
    store = SqliteQuestionStore(path)
    with SqliteEntry(path) as entry:
        answer("done", "approve", by="alice", store=store, entry=entry)
    cancel("gone", by="bob", store=store)
    listing = Listing(_Through(store) if through else store)  # pyright: ignore[reportArgumentType]

    def listed(page: Any) -> set[str]:
        return {q.envelope.question_id for q in page.questions}

    def open_of(**params: str) -> set[str]:
        return listed(listing.open_page(Filters.parse(params), None, 50))

    def closed_of(**params: str) -> set[str]:
        return listed(listing.history_page(Filters.parse(params), None, 50))

    assert open_of(group="finance") == {"late", "soon"}
    assert open_of(state="overdue") == {"late"}
    assert open_of(group="privacy", state="overdue") == set()
    assert closed_of(state="answered") == {"done"}
    assert closed_of(state="cancelled", group="privacy") == {"gone"}
    assert closed_of(group="finance") == {"done"}
    with pytest.raises(ValueError, match="state: expected one of overdue, answered, expired"):
        Filters.parse({"state": "open-ish"})
    store.close()
