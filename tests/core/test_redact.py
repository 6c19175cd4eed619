"""One redaction routine hides secrets in URLs, DSNs, header and option maps, and free text."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretBytes, SecretStr

from agent_wait.core.options import redact

CASES: list[tuple[object, object]] = [
    # userinfo
    ("redis://:s3cret@cache:6379/0", "redis://***@cache:6379/0"),
    ("redis://user:hunter2@localhost:6379/0", "redis://user:***@localhost:6379/0"),
    ("nats://token@nats:4222", "nats://***@nats:4222"),
    ("amqp://guest:guest@rabbit/", "amqp://guest:***@rabbit/"),
    # a password containing '@', '/', ':' or a space
    ("redis://user:p@ss@host", "redis://user:***@host"),
    ("redis://user:p@ss@host:6379/0", "redis://user:***@host:6379/0"),
    ("postgresql://app:pa/ss@db/app", "postgresql://app:***@db/app"),
    ("postgresql://app:a:b@db/app", "postgresql://app:***@db/app"),
    ("postgresql://app:pa ss@db:5432/app", "postgresql://app:***@db:5432/app"),
    ("nats://a:4222,nats://u:pw@b:4222", "nats://a:4222,nats://u:***@b:4222"),
    # secret query parameters
    ("redis://host/0?password=s3cret", "redis://host/0?password=***"),
    ("rediss://host:6380/0?db=1&password=s3cret", "rediss://host:6380/0?db=1&password=***"),
    ("https://hooks.example/in?access_token=abc123", "https://hooks.example/in?access_token=***"),
    ("https://hooks.example/in?token=abc&x=1", "https://hooks.example/in?token=***&x=1"),
    ("https://maps.example/api?key=AIzaXYZ&q=1", "https://maps.example/api?key=***&q=1"),
    (
        "https://b.s3.amazonaws.com/o?X-Amz-Credential=AKIA1&X-Amz-Signature=ff&X-Amz-Expires=60",
        "https://b.s3.amazonaws.com/o?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=60",
    ),
    (
        "postgresql://db/app?sslmode=require&password=s3cret#frag",
        "postgresql://db/app?sslmode=require&password=***#frag",
    ),
    # libpq keyword/value strings
    ("host=db port=5432 password=s3cret user=app", "host=db port=5432 password=*** user=app"),
    ("host=db password='with space' dbname=app", "host=db password=*** dbname=app"),
    ("host=db password = s3cret", "host=db password = ***"),
    ("host=db password=pa ss dbname=app", "host=db password=*** dbname=app"),
    ("host=db password='it\\'s' user=app", "host=db password=*** user=app"),
    ("host=db password='it\\'s' user=app", "host=db password=*** user=app"),
    # header maps
    (
        {"Authorization": "Bearer abc", "Cookie": "sid=1", "X-Trace": "1"},
        {"Authorization": "***", "Cookie": "***", "X-Trace": "1"},
    ),
    (
        {"Proxy-Authorization": "Basic x", "X-Api-Key": "k", "Set-Cookie": "a=b"},
        {"Proxy-Authorization": "***", "X-Api-Key": "***", "Set-Cookie": "***"},
    ),
    # free text quoting a URL
    (
        "cannot reach redis://u:pw@cache:6379/0 (refused)",
        "cannot reach redis://u:***@cache:6379/0 (refused)",
    ),
    # nothing secret: unchanged
    ("https://sqs.us-east-1.amazonaws.com/1/q", "https://sqs.us-east-1.amazonaws.com/1/q"),
    ("redis://localhost:6379/0", "redis://localhost:6379/0"),
    ("host=db port=5432", "host=db port=5432"),
    (
        {"routing_key": "q.{tags[team]}", "dedupe_key": "x"},
        {"routing_key": "q.{tags[team]}", "dedupe_key": "x"},
    ),
    (None, None),
    (3, 3),
    # typed secrets are always hidden
    (SecretStr("s3cret"), "***"),
    (SecretBytes(b"s3cret"), "***"),
]


@pytest.mark.parametrize(("value", "shown"), CASES)
def test_redact(value: object, shown: object) -> None:
    assert redact(value) == shown


def test_redacting_twice_changes_nothing() -> None:
    for value, shown in CASES:
        if not isinstance(value, SecretStr | SecretBytes):
            assert redact(shown) == shown, value


def test_option_maps_hide_secret_names_and_show_env_names() -> None:
    options: dict[str, Any] = {
        "url": "redis://user:hunter2@localhost:6379/0",
        "api_key": "k-123",
        "password": "p",
        "token_env": "TOKEN_VAR",
        "headers": {"Authorization": "Bearer abc", "X-Trace": "1"},
        "secrets": ["a"],
        "timeout": 3,
        "nested": [{"url": "amqp://u:pw@h/"}],
    }
    assert redact(options) == {
        "url": "redis://user:***@localhost:6379/0",
        "api_key": "***",
        "password": "***",
        "token_env": "TOKEN_VAR",
        "headers": {"Authorization": "***", "X-Trace": "1"},
        "secrets": "***",
        "timeout": 3,
        "nested": [{"url": "amqp://u:***@h/"}],
    }
