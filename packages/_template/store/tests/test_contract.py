"""agent-wait's question-store conformance kit, run against TemplateQuestionStore."""

from __future__ import annotations

import uuid

import pytest

from agent_wait.core import BaseAnnounce, QuestionStore, announcer, question_store
from agent_wait.template import TemplateQuestionStore
from agent_wait.testing import StoreContract


class TestTemplateQuestionStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _database(self) -> None:
        # A new database for each test, as the kit asks (with yours: a new schema, or empty it).
        self.database = f"contract-{uuid.uuid4().hex}"

    def make_store(self) -> QuestionStore:
        # By name, with the announcer's options, as tools build it: this also proves the store
        # is installed.
        store = question_store("template", database=self.database)
        assert isinstance(store, TemplateQuestionStore)
        return store

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        return announcer("template", database=self.database)
