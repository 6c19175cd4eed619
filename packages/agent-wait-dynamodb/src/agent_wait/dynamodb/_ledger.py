"""The execution ledger on the DynamoDB announcer's table: one item per attempt at a body."""

from __future__ import annotations

import json
from typing import Any

from agent_wait.core import Execution
from agent_wait.dynamodb._audit import DynamoDbAuditLog
from agent_wait.dynamodb._store import table_from_options
from agent_wait.dynamodb._table import already_written

try:
    from botocore.exceptions import ClientError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError("the DynamoDB ledger needs boto3: pip install agent-wait-dynamodb") from error


class DynamoDbLedger:
    """An :class:`~agent_wait.core.ExecutionLedger` in the DynamoDB announcer's table.

    Its items sit beside the questions under their own keys (``pk`` ``EXEC#<key>``, ``sk``
    ``ATTEMPT#<attempt>``) with no ``status``, so no question query or index sees them. A claim
    is one conditional ``PutItem`` (``attribute_not_exists(pk)``): of racing workers exactly one
    writes it; done is one ``UpdateItem`` conditioned on the claim's token. The result is kept
    as JSON text (DynamoDB numbers would not come back as they went in).

    Args:
        table: A boto3 ``Table`` resource (``boto3.resource("dynamodb").Table(name)``).
    """

    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def _key(key: str, attempt: int) -> dict[str, str]:
        return {"pk": f"EXEC#{key}", "sk": f"ATTEMPT#{attempt}"}

    def _get(self, key: str, attempt: int) -> Execution | None:
        item = self._table.get_item(Key=self._key(key, attempt), ConsistentRead=True).get("Item")
        if item is None:
            return None
        result = item.get("result")
        return Execution(
            key,
            attempt,
            str(item["token"]),
            bool(item.get("done", False)),
            None if result is None else json.loads(str(result)),
        )

    def claim(self, key: str, attempt: int, token: str) -> Execution | None:
        """See :meth:`agent_wait.core.ExecutionLedger.claim`."""
        try:
            self._table.put_item(
                Item={**self._key(key, attempt), "token": token, "done": False},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if not already_written(error):  # the condition failed: someone wrote it first
                raise
            return self._get(key, attempt)
        return None

    def finish(self, key: str, attempt: int, token: str, result: Any) -> Execution:
        """See :meth:`agent_wait.core.ExecutionLedger.finish`."""
        try:
            self._table.update_item(
                Key=self._key(key, attempt),
                UpdateExpression="SET done = :yes, #result = :result",
                ConditionExpression="attribute_exists(pk) AND #token = :token AND done = :no",
                ExpressionAttributeNames={"#result": "result", "#token": "token"},
                ExpressionAttributeValues={
                    ":yes": True,
                    ":no": False,
                    ":token": token,
                    ":result": json.dumps(result, ensure_ascii=False, allow_nan=False),
                },
            )
        except ClientError as error:
            if not already_written(error):  # the condition failed: someone wrote it first
                raise
        found = self._get(key, attempt)
        if found is None:
            raise LookupError(f"execution {key!r} attempt {attempt}: nothing recorded")
        return found

    def release(self, key: str, attempt: int, token: str) -> None:
        """See :meth:`agent_wait.core.ExecutionLedger.release`."""
        try:
            self._table.delete_item(
                Key=self._key(key, attempt),
                ConditionExpression="#token = :token AND done = :no",
                ExpressionAttributeNames={"#token": "token"},
                ExpressionAttributeValues={":token": token, ":no": False},
            )
        except ClientError as error:
            if not already_written(error):  # the condition failed: someone wrote it first
                raise

    def audit_log(self) -> DynamoDbAuditLog:
        """The audit log in the same table, beside the questions (``agent_wait.core.AuditLog``)."""
        return DynamoDbAuditLog(self._table)

    def close(self) -> None:
        """Nothing to release: boto3 resources hold no connection to close."""

    def __enter__(self) -> DynamoDbLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<DynamoDbLedger table={self._table.name!r}>"


def ledger_from_options(**options: Any) -> DynamoDbLedger:
    """The ledger in a ``dynamodb`` announcer's table, from that announcer's configured options."""
    return DynamoDbLedger(table_from_options(options))
