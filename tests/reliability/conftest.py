"""Fixtures of the reliability suite: an AWS environment with test-only credentials, NATS streams."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.aws_moto import aws, moto_server  # noqa: F401 - fixtures, registered by import
from tests.nats.conftest import nats_url, stream  # noqa: F401 - fixtures, registered by import

REGION = "us-east-1"
# Distinctive values, so a test can search logs for them; moto accepts any non-empty keys.
ACCESS_KEY_ID = "AKIARELIABILITY7Q3Z"
SECRET_ACCESS_KEY = "rel/Secret+Access+Key/9f2b7c1e4a"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only test credentials and a region: no profile, endpoint or config file of the machine."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_ENDPOINT_URL_SNS",
        "AWS_MAX_ATTEMPTS",
        "AWS_RETRY_MODE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
