"""DynamoDbQuestionStore: the question lifecycle on the DynamoDB announcer's table (moto server)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    BaseAnnounce,
    Question,
    QuestionClosed,
    QuestionStatus,
    QuestionStore,
    SqliteEntry,
    Transition,
    WaitPolicy,
    answer,
    publish,
    sweep,
)
from agent_wait.core.testing import StoreContract
from agent_wait.dynamodb import DynamoDbAnnounce, DynamoDbQuestionStore, create_table
from tests.aws_moto import Aws


class TestDynamoDbQuestionStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _table(self, aws: Aws) -> None:
        self.aws = aws
        create_table(aws.client("dynamodb"), "store")

    def make_store(self) -> QuestionStore:
        resource = self.aws.session.resource("dynamodb", endpoint_url=self.aws.url)
        return DynamoDbQuestionStore(resource.Table("store"))

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        return DynamoDbAnnounce("store", **self.aws.options)


def ask(aws: Aws, **policy: Any) -> None:
    publish(
        [Question(question_id="q1", question={"n": 1.5}, policy=WaitPolicy(**policy))],
        "t1",
        DynamoDbAnnounce("store", **aws.options),
        strict=True,
    )


def test_stores_on_separate_clients_race_to_one_close(aws: Aws) -> None:
    create_table(aws.client("dynamodb"), "store")
    ask(aws)
    stores = [
        DynamoDbQuestionStore(aws.session.resource("dynamodb", endpoint_url=aws.url).Table("store"))
        for _ in range(6)
    ]
    barrier = threading.Barrier(len(stores))
    results: dict[int, Transition] = {}

    def race(index: int) -> None:
        barrier.wait()
        status = QuestionStatus.EXPIRED if index % 2 else QuestionStatus.ANSWERED
        results[index] = stores[index].transition(
            "t1", "q1", status, by=f"r{index}", answer={"n": index, "ratio": 0.5}
        )

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, result in results.items() if result.won]
    assert len(winners) == 1
    final = results[winners[0]].question
    assert (final.answered_by, final.answer) == (f"r{winners[0]}", {"n": winners[0], "ratio": 0.5})
    assert all(result.question == final for result in results.values())


def test_sweep_and_answer_through_the_dynamodb_store(aws: Aws, tmp_path: Path) -> None:
    create_table(aws.client("dynamodb"), "store")
    ask(aws, timeout="PT1H", default={"action": "reject"})
    store = DynamoDbQuestionStore(
        aws.session.resource("dynamodb", endpoint_url=aws.url).Table("store")
    )
    assert [q.envelope.question for q in store.open_questions()] == [{"n": 1.5}]
    with SqliteEntry(tmp_path / "messages.sqlite3") as entry:
        report = sweep(store=store, entry=entry, now="2099-01-01T00:00:00Z")
        assert [q.envelope.question_id for q in report.expired] == ["q1"]
        assert [r.message["answer"] for r in entry.receive(1)] == [{"action": "reject"}]
        with pytest.raises(QuestionClosed, match="already expired by sweeper"):
            answer("q1", "approve", store=store, entry=entry)
    assert store.open_questions() == []
