"""Extra request headers: refused at construction when invalid or reserved, never leaked."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from agent_wait.core import AnnounceFailed, ConfigError, apublish, publish
from agent_wait.webhook import WebhookAnnounce

from .conftest import Receiver, Step, make_question

DOC = Path(__file__).parents[2] / "docs" / "announcers" / "webhook.md"
TOKEN = "sk-live-9f8e7d6c5b4a"


def documented_request_headers() -> list[str]:
    """The header column of the table under "## The request" in the webhook docs."""
    section = DOC.read_text().split("## The request", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_the_docs_list_the_reserved_headers() -> None:
    assert documented_request_headers() == [
        "Content-Type",
        "X-Agent-Wait-Event",
        "X-Agent-Wait-Dedupe-Key",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "User-Agent",
    ]


@pytest.mark.parametrize(
    "name",
    [
        *documented_request_headers(),
        # Framing headers httpx computes; the docs name them next to the table.
        "Content-Length",
        "Host",
        "Transfer-Encoding",
    ],
)
def test_every_reserved_header_is_refused_in_any_case(name: str) -> None:
    for spelling in (name, name.lower(), name.upper()):
        with pytest.raises(ConfigError) as caught:
            WebhookAnnounce("https://example.com/hook", headers={spelling: "x"})
        assert str(caught.value) == (
            f"announcer 'webhook': option 'headers': {spelling!r} is set by the webhook "
            "announcer and cannot be overridden (got '***')"
        )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (f"Bearer {TOKEN}\n", "starts or ends with whitespace"),
        (f"Bearer {TOKEN}\r\n", "starts or ends with whitespace"),
        (f" Bearer {TOKEN}", "starts or ends with whitespace"),
        (f"Bearer {TOKEN}\t", "starts or ends with whitespace"),
        (f"Bearer {TOKEN}\nX-Injected: 1", "contains a line break or control character"),
        (f"Bearer {TOKEN}\x00", "contains a line break or control character"),
        (f"Bearer {TOKEN}\x7f", "contains a line break or control character"),
        (f"Bearer {TOKEN}é", "contains a non-ASCII character"),
        (f"Bearer {TOKEN}\u2028", "contains a non-ASCII character"),
    ],
)
def test_an_invalid_value_is_refused_naming_the_header_not_the_value(
    value: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        WebhookAnnounce("https://example.com/hook", headers={"Authorization": value})
    message = str(caught.value)
    assert message.startswith(
        f"announcer 'webhook': option 'headers': the value of 'Authorization' {problem}"
    )
    assert TOKEN not in message
    assert "Bearer" not in message


@pytest.mark.parametrize(
    "name", ["", "X Tenant", "X-Tenant:", "X-Tenant\n", "Tenänt", "X-(Tenant)", "a" * 300 + " "]
)
def test_an_invalid_name_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"option 'headers': .* is not a valid HTTP header name"):
        WebhookAnnounce("https://example.com/hook", headers={name: "acme"})


def test_valid_extra_headers_arrive_as_given(receiver: Receiver) -> None:
    url = receiver.script("/hook", Step(204))
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Tenant": "acme\tcorp  eu", "X-Empty": ""}
    with WebhookAnnounce(url, headers=headers) as hook:
        assert publish([make_question()], "order-4471", hook).ok
    [request] = receiver.requests("/hook")
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["x-tenant"] == "acme\tcorp  eu"
    assert request.headers["x-empty"] == ""


def _smuggle(hook: WebhookAnnounce, value: str) -> None:
    # Fault injection: a value httpx refuses, past the construction check, so the transport
    # error (whose text quotes the value) is what the report would carry.
    hook._headers["Authorization"] = value  # pyright: ignore[reportPrivateUsage]


def _assert_scrubbed(texts: list[str]) -> None:
    for text in texts:
        assert TOKEN not in text
        assert "sk-live" not in text


def test_a_refused_value_never_reaches_the_report_or_the_log(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = receiver.script("/hook")
    with WebhookAnnounce(url, retries=0) as hook:
        _smuggle(hook, f"Bearer {TOKEN}\n")
        with caplog.at_level(logging.WARNING), pytest.raises(AnnounceFailed) as caught:
            publish([make_question()], "order-4471", hook, strict=True)
    [failure] = caught.value.report.failures
    assert "LocalProtocolError" in (failure.error or "")
    assert "***" in (failure.error or "")
    _assert_scrubbed([failure.error or "", str(failure.exception), str(caught.value), caplog.text])
    assert "delivery failed" in caplog.text
    assert receiver.requests("/hook") == []


async def test_a_refused_value_never_reaches_the_async_report_or_the_log(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = receiver.script("/hook")
    async with WebhookAnnounce(url, retries=0) as hook:
        _smuggle(hook, f"Bearer {TOKEN}\r\n")
        with caplog.at_level(logging.WARNING), pytest.raises(AnnounceFailed) as caught:
            await apublish([make_question()], "order-4471", hook, strict=True)
    [failure] = caught.value.report.failures
    assert "LocalProtocolError" in (failure.error or "")
    _assert_scrubbed([failure.error or "", str(failure.exception), str(caught.value), caplog.text])
    assert "delivery failed" in caplog.text
