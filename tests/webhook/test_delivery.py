"""Sync delivery against a real HTTP server on 127.0.0.1 (stdlib ThreadingHTTPServer)."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import standardwebhooks

from agent_wait.core import AnnounceFailed, DeliveryFailed, publish
from agent_wait.webhook import WebhookAnnounce, WebhookDeliveryError, verify
from agent_wait.webhook._announcer import retry_after_seconds

from .conftest import SECRET, Receiver, Step, make_envelope, make_question

FAST = {"backoff": 0.01}


def test_body_and_headers_are_the_contract(receiver: Receiver) -> None:
    url = receiver.script("/hook", Step(204))
    envelope = make_envelope()
    with WebhookAnnounce(url, secret=SECRET, headers={"Authorization": "Bearer t0ken"}) as hook:
        hook.deliver(envelope)
    [request] = receiver.requests("/hook")
    assert request.body == envelope.to_json()
    assert json.loads(request.body) == envelope.to_dict()
    headers = request.headers
    assert headers["content-type"] == "application/json"
    assert headers["x-agent-wait-event"] == "wait.created"
    assert (
        headers["x-agent-wait-dedupe-key"] == envelope.dedupe_key == "wait.created:order-4471:q-1"
    )
    assert headers["authorization"] == "Bearer t0ken"
    assert headers["webhook-id"] == envelope.event_id
    assert headers["user-agent"].startswith("agent-wait-webhook/")
    assert verify(request.body, headers, SECRET) == envelope.to_dict()
    assert standardwebhooks.Webhook(SECRET).verify(request.body, headers) == envelope.to_dict()


def test_unsigned_requests_carry_no_signature_headers(receiver: Receiver) -> None:
    url = receiver.script("/plain")
    with WebhookAnnounce(url) as hook:
        hook.deliver(make_envelope())
    [request] = receiver.requests("/plain")
    assert not {"webhook-id", "webhook-timestamp", "webhook-signature"} & set(request.headers)


def test_what_the_server_received_fails_verification_when_altered(receiver: Receiver) -> None:
    url = receiver.script("/hook")
    with WebhookAnnounce(url, secret=SECRET) as hook:
        hook.deliver(make_envelope())
    [request] = receiver.requests("/hook")
    tampered = request.body.replace(b"order-4471", b"order-9999")
    with pytest.raises(Exception, match="no signature matches"):
        verify(tampered, request.headers, SECRET)
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(SECRET).verify(tampered, request.headers)
    later = datetime.now(UTC) + timedelta(minutes=10)
    with pytest.raises(Exception, match="stale or replayed"):
        verify(request.body, request.headers, SECRET, now=later)


def test_500_then_200_is_retried(receiver: Receiver) -> None:
    url = receiver.script("/flaky", Step(500), Step(503), Step(200))
    envelope = make_envelope()
    with WebhookAnnounce(url, secret=SECRET, retries=3, **FAST) as hook:
        receipt = hook.deliver(envelope)
    attempts = receiver.requests("/flaky")
    assert len(attempts) == 3
    assert receipt.attempts == 3
    # Every attempt is the same message: same body and webhook-id, each validly signed.
    assert {a.body for a in attempts} == {envelope.to_json()}
    assert {a.headers["webhook-id"] for a in attempts} == {envelope.event_id}
    for attempt in attempts:
        assert verify(attempt.body, attempt.headers, SECRET)


def test_retries_are_bounded(receiver: Receiver) -> None:
    url = receiver.script("/down", Step(502))
    with (
        WebhookAnnounce(url, retries=2, **FAST) as hook,
        pytest.raises(WebhookDeliveryError) as caught,
    ):
        hook.deliver(make_envelope())
    assert len(receiver.requests("/down")) == 3
    error = caught.value
    assert (error.status_code, error.attempts) == (502, 3)
    assert "HTTP 502 Bad Gateway" in str(error)
    # Only the retry budget ran out: the same delivery may pass later.
    assert isinstance(error, DeliveryFailed)
    assert (error.retryable, error.code) == (True, "502")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_other_4xx_is_not_retried(receiver: Receiver, status: int) -> None:
    url = receiver.script("/reject", Step(status))
    with (
        WebhookAnnounce(url, retries=3, **FAST) as hook,
        pytest.raises(WebhookDeliveryError) as caught,
    ):
        hook.deliver(make_envelope())
    assert len(receiver.requests("/reject")) == 1
    assert caught.value.status_code == status
    assert caught.value.attempts == 1
    assert caught.value.retryable is False


def test_redirect_is_not_followed(receiver: Receiver) -> None:
    url = receiver.script("/moved", Step(307, {"Location": "/elsewhere"}))
    with (
        WebhookAnnounce(url, retries=3, **FAST) as hook,
        pytest.raises(WebhookDeliveryError) as caught,
    ):
        hook.deliver(make_envelope())
    assert len(receiver.requests("/moved")) == 1
    assert receiver.requests("/elsewhere") == []
    assert caught.value.status_code == 307
    assert "redirect to '/elsewhere' not followed" in str(caught.value)


def test_429_retry_after_seconds_is_honoured(receiver: Receiver) -> None:
    url = receiver.script("/busy", Step(429, {"Retry-After": "1"}), Step(200))
    with WebhookAnnounce(url, backoff=0, total_timeout=10) as hook:
        hook.deliver(make_envelope())
    first, second = receiver.requests("/busy")
    # backoff=0 would retry at once: the gap is the server's Retry-After.
    assert second.at - first.at >= 0.9


def test_retry_after_http_date_is_honoured(receiver: Receiver) -> None:
    when = datetime.now(UTC) + timedelta(seconds=2)
    url = receiver.script(
        "/busy", Step(503, {"Retry-After": format_datetime(when, usegmt=True)}), Step(200)
    )
    with WebhookAnnounce(url, backoff=0, total_timeout=10) as hook:
        hook.deliver(make_envelope())
    first, second = receiver.requests("/busy")
    assert (
        second.at - first.at >= 0.5
    )  # the date has whole seconds: at least 1 s minus clock jitter


def test_retry_after_beyond_the_budget_fails_at_once(receiver: Receiver) -> None:
    url = receiver.script("/busy", Step(429, {"Retry-After": "3600"}))
    hook = WebhookAnnounce(url, total_timeout=5, **FAST)
    started = time.monotonic()
    with hook, pytest.raises(WebhookDeliveryError) as caught:
        hook.deliver(make_envelope())
    assert time.monotonic() - started < 4  # generous: it did not wait for the Retry-After
    assert len(receiver.requests("/busy")) == 1
    assert caught.value.status_code == 429
    assert "Retry-After 3600 s is beyond the remaining total_timeout budget" in str(caught.value)


def test_hanging_receiver_is_reported_within_the_budget(receiver: Receiver) -> None:
    url = receiver.script("/hang", Step(hang=True))
    hook = WebhookAnnounce(url, timeout=30, total_timeout=1, retries=5, **FAST)
    started = time.monotonic()
    report = publish([make_question()], "order-4471", hook)
    assert time.monotonic() - started < 10
    [failure] = report.failures
    assert failure.error is not None
    assert failure.error.startswith("WebhookDeliveryError: ")
    assert "timed out" in failure.error
    assert "total_timeout of 1 s used up" in failure.error
    assert isinstance(failure.exception, WebhookDeliveryError)
    assert failure.exception.status_code is None
    hook.close()


@pytest.mark.parametrize(
    ("retries", "reason"),
    [(0, "timed out after 1.0 s (1 attempt)"), (5, "total_timeout of 3 s used up")],
)
def test_trickled_headers_are_cut_off_within_the_budget(
    receiver: Receiver, retries: int, reason: str
) -> None:
    # Every byte arrives within the 1 s step timeout: only a bound on the exchange ends it.
    url = receiver.script("/trickle", Step(trickle=0.4))
    with WebhookAnnounce(url, timeout=1, total_timeout=3, retries=retries, **FAST) as hook:
        started = time.monotonic()
        report = publish([make_question()], "order-4471", hook)
        elapsed = time.monotonic() - started
    assert elapsed < 3 + 2
    [failure] = report.failures
    assert isinstance(failure.exception, WebhookDeliveryError)
    assert failure.exception.status_code is None
    assert reason in str(failure.exception)
    assert len(receiver.requests("/trickle")) == failure.exception.attempts


def test_trickled_headers_through_an_environment_proxy_are_cut_off(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The receiver plays the HTTP proxy, so the request line carries the absolute URL.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", receiver.base_url)
    target = "http://receiver.invalid/trickle"
    receiver.scripts[target] = [Step(trickle=0.4)]
    with WebhookAnnounce(target, timeout=1, total_timeout=3, retries=0) as hook:
        started = time.monotonic()
        report = publish([make_question()], "order-4471", hook)
        elapsed = time.monotonic() - started
    assert elapsed < 3 + 2
    assert len(receiver.requests(target)) == 1
    [failure] = report.failures
    assert "timed out after 1.0 s (1 attempt)" in (failure.error or "")


def test_trickled_body_after_a_2xx_is_cut_off_at_total_timeout(receiver: Receiver) -> None:
    url = receiver.script("/trickle", Step(200, trickle_body=0.4))
    with WebhookAnnounce(url, timeout=1, total_timeout=3, retries=0) as hook:
        started = time.monotonic()
        report = publish([make_question()], "order-4471", hook)
        elapsed = time.monotonic() - started
    assert elapsed < 3 + 2
    assert report.ok


def test_accepted_but_stalled_body_counts_as_delivered(receiver: Receiver) -> None:
    # The 2xx status decides; retrying would deliver the question twice for nothing.
    url = receiver.script("/stall", Step(200, stall_body=True))
    started = time.monotonic()
    with WebhookAnnounce(url, timeout=30, total_timeout=1, **FAST) as hook:
        report = publish([make_question()], "order-4471", hook)
    assert time.monotonic() - started < 10
    assert report.ok
    assert len(receiver.requests("/stall")) == 1


def test_connection_refused_is_reported(closed_port: int) -> None:
    hook = WebhookAnnounce(f"http://127.0.0.1:{closed_port}/hook", retries=1, **FAST)
    report = publish([make_question()], "order-4471", hook)
    [failure] = report.failures
    assert failure.announcer == "webhook"
    assert failure.question_id == "q-1"
    assert isinstance(failure.exception, WebhookDeliveryError)
    assert failure.exception.attempts == 2  # a connection error is retried
    assert failure.exception.retryable
    assert failure.attempts == 2
    assert "ConnectError" in failure.exception.reason
    assert f"http://127.0.0.1:{closed_port} request failed" in str(failure.exception)


def test_strict_publish_raises_announce_failed(receiver: Receiver) -> None:
    url = receiver.script("/down", Step(500))
    with WebhookAnnounce(url, retries=1, **FAST) as hook, pytest.raises(AnnounceFailed) as caught:
        publish([make_question()], "order-4471", hook, strict=True)
    [failure] = caught.value.report.failures
    assert "HTTP 500 Internal Server Error (2 attempts)" in (failure.error or "")


def test_failures_never_leak_the_secret_or_url_path(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    url = receiver.script("/hooks/T0K3N-in-path?token=q-s3cret", Step(500))
    raw = "raw-secret-VALUE-42"
    hook = WebhookAnnounce(
        url, secret=raw, headers={"Authorization": "Bearer h3ader"}, retries=1, **FAST
    )
    with caplog.at_level(logging.DEBUG):
        report = publish([make_question()], "order-4471", hook)
    hook.close()
    [failure] = report.failures
    # httpx itself logs request URLs at INFO (documented); everything agent-wait says omits the path.
    ours = "\n".join(
        r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))
    )
    assert "webhook" in ours
    assert raw not in str(vars(hook))  # the key object masks itself too
    for text in (failure.error or "", repr(failure), repr(hook), ours):
        for secret in (raw, "T0K3N", "q-s3cret", "h3ader"):
            assert secret not in text
    # Nobody, httpx's debug logs included, ever logs the signing secret or header values.
    for secret in (raw, "h3ader"):
        assert secret not in caplog.text
    assert failure.error == (
        f"WebhookDeliveryError: {receiver.base_url} answered HTTP 500 Internal Server Error (2 attempts)"
    )


def test_several_envelopes_sync_one_request_each_in_order_on_one_connection(
    receiver: Receiver,
) -> None:
    url = receiver.script("/hook")
    with WebhookAnnounce(url, secret=SECRET) as hook:
        report = publish([make_question(n) for n in range(1, 5)], "order-4471", hook)
    assert report.ok
    requests = receiver.requests("/hook")
    assert [r.headers["x-agent-wait-dedupe-key"] for r in requests] == [
        f"wait.created:order-4471:q-{n}" for n in range(1, 5)
    ]
    assert [r.body for r in requests] == [e.to_json() for e in report.envelopes]
    assert len({r.client_port for r in requests}) == 1  # the connection was reused


def test_one_failing_envelope_does_not_fail_the_others(receiver: Receiver) -> None:
    url = receiver.script("/hook", Step(200), Step(400), Step(200))
    with WebhookAnnounce(url, **FAST) as hook:
        report = publish([make_question(n) for n in range(1, 4)], "order-4471", hook)
    assert [d.ok for d in report.deliveries] == [True, False, True]
    assert report.failures[0].question_id == "q-2"


def test_client_is_reopened_after_close(receiver: Receiver) -> None:
    url = receiver.script("/hook")
    hook = WebhookAnnounce(url)
    hook.deliver(make_envelope(1))
    hook.close()
    hook.close()  # idempotent
    hook.deliver(make_envelope(2))
    hook.close()
    first, second = receiver.requests("/hook")
    assert first.client_port != second.client_port


def test_retry_after_parsing() -> None:
    now = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
    assert retry_after_seconds(None, now) is None
    assert retry_after_seconds("120", now) == 120.0
    assert retry_after_seconds(" 0 ", now) == 0.0
    assert retry_after_seconds("Fri, 11 Sep 2026 09:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Fri, 11 Sep 2026 08:59:00 GMT", now) == 0.0  # already past
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds("-5", now) is None
