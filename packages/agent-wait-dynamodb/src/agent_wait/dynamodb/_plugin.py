"""Registers the ``dynamodb`` announcer, question store and ledger; boto3 and aiobotocore are imported only when it is built."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``dynamodb``: :class:`agent_wait.dynamodb.DynamoDbAnnounce`."""
    register("dynamodb", "agent_wait.dynamodb._announcer:DynamoDbAnnounce")


@hookimpl
def register_question_stores(register: RegisterTarget) -> None:
    """Register the ``dynamodb`` store: :class:`agent_wait.dynamodb.DynamoDbQuestionStore`."""
    register("dynamodb", "agent_wait.dynamodb._store:store_from_options")


@hookimpl
def register_execution_ledgers(register: RegisterTarget) -> None:
    """Register the ``dynamodb`` ledger: :class:`agent_wait.dynamodb.DynamoDbLedger`."""
    register("dynamodb", "agent_wait.dynamodb._ledger:ledger_from_options")
