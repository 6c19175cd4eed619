"""TemplateAnnounce: each question into the database, where ``TemplateQuestionStore`` reads it."""

from __future__ import annotations

from agent_wait.core import BaseAnnounce, QuestionStatus, StoredQuestion, WaitEnvelope
from agent_wait.template._database import table
from agent_wait.template._options import TemplateOptions


class TemplateAnnounce(BaseAnnounce):
    """Stores each envelope as an open question in the database named ``database``.

    A republished question keeps its row (and how it was closed): the first envelope stays.

    Args:
        database: The database's name; the store built with it reads these questions.

    Raises:
        ConfigError: ``database`` is not a non-empty string.
    """

    name = "template"
    options_model = TemplateOptions

    def __init__(self, database: str) -> None:
        options = TemplateOptions.parse(self.name, {"database": database})
        self.database = options.database
        self._table = table(options.database)

    def deliver(self, envelope: WaitEnvelope) -> None:
        """Insert the question unless it is stored already (``INSERT ... ON CONFLICT DO NOTHING``)."""
        with self._table.lock:
            self._table.rows.setdefault(
                (envelope.thread_id, envelope.question_id),
                StoredQuestion(envelope=envelope, status=QuestionStatus.OPEN.value),
            )
