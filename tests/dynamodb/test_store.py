"""DynamoDbQuestionStore: the question lifecycle on the DynamoDB announcer's table (moto server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, Question, QuestionStore, SqliteEntry, WaitPolicy, publish
from agent_wait.dynamodb import DynamoDbAnnounce, DynamoDbQuestionStore, create_table
from agent_wait.host import QuestionClosed, answer, sweep
from agent_wait.testing import StoreContract
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

    @pytest.mark.skip(
        reason="moto applies concurrent conditional writes without isolation (two racing "
        "UpdateItems both pass the condition); DynamoDB itself applies a conditional write "
        "atomically, which is what the store relies on"
    )
    def test_racing_closes_have_one_winner(self, contract_store: QuestionStore) -> None:
        """Not checkable on moto (see the skip reason)."""

    @pytest.mark.skip(reason="moto: racing conditional writes, as for racing closes")
    def test_racing_sends_have_one_winner(self, contract_store: QuestionStore) -> None:
        """Not checkable on moto (see the skip reason of racing closes)."""

    @pytest.mark.skip(reason="moto: racing conditional writes, as for racing closes")
    def test_racing_refusals_reopen_once(self, contract_store: QuestionStore) -> None:
        """Not checkable on moto (see the skip reason of racing closes)."""

    @pytest.mark.skip(reason="moto: racing conditional writes, as for racing closes")
    def test_racing_follow_up_claims_have_one_winner(self, contract_store: QuestionStore) -> None:
        """Not checkable on moto (see the skip reason of racing closes)."""

    @pytest.mark.skip(reason="moto: racing conditional writes, as for racing closes")
    def test_racing_sweepers_remind_escalate_and_warn_once(
        self, contract_store: QuestionStore
    ) -> None:
        """Not checkable on moto; two sweepers taking turns are checked."""


def ask(aws: Aws, **policy: Any) -> None:
    publish(
        [Question(question_id="q1", question={"n": 1.5}, policy=WaitPolicy(**policy))],
        "t1",
        DynamoDbAnnounce("store", **aws.options),
        strict=True,
    )


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
