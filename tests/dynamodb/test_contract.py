"""The announcer conformance kit, run against DynamoDbAnnounce on a real moto server."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, WaitEnvelope, publish
from agent_wait.dynamodb import DynamoDbAnnounce, create_table
from agent_wait.testing import AnnouncerContract
from tests.aws_moto import Aws, questions


def _as_envelope(row: dict[str, Any]) -> dict[str, Any]:
    """The envelope fields of a row (optional ones where set), numbers and null as in JSON."""
    fields = {name: row[name] for name in WaitEnvelope.model_fields if name in row}
    if fields["expires_at"] == "9999-12-31T23:59:59Z":
        fields["expires_at"] = None
    text = json.dumps(fields, default=lambda d: int(d) if d == d.to_integral_value() else float(d))
    return json.loads(text)


def _rows(aws: Aws, table: str) -> list[dict[str, Any]]:
    resource = aws.session.resource("dynamodb", endpoint_url=aws.url)
    items = resource.Table(table).scan()["Items"]
    return [item for item in items if item["sk"].startswith("WAIT#")]  # not the audit entries


class TestDynamoDbContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _table(self, aws: Aws) -> None:
        self.aws = aws
        create_table(aws.client("dynamodb"), "contract")

    def make_announcer(self) -> BaseAnnounce:
        return DynamoDbAnnounce("contract", **self.aws.options)

    def make_failing_announcer(self) -> BaseAnnounce:
        return DynamoDbAnnounce("missing", **self.aws.options)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [_as_envelope(row) for row in _rows(self.aws, "contract")]


def test_configured_by_the_environment(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    create_table(aws.client("dynamodb"), "from-env")
    entry = {"use": "dynamodb", "table_name": "from-env", **aws.options}
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([entry]))
    report = publish(questions(2), "t-1")
    assert report.ok, report.failures
    assert {d.announcer for d in report.deliveries} == {"dynamodb"}
    assert sorted(row["sk"] for row in _rows(aws, "from-env")) == ["WAIT#q0", "WAIT#q1"]
    assert isinstance(_rows(aws, "from-env")[0]["question"]["args"]["ratio"], Decimal)
