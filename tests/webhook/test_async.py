"""Async delivery (httpx.AsyncClient) against the real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import re
import time

import pytest

from agent_wait.core import AnnounceFailed, apublish
from agent_wait.webhook import WebhookAnnounce, WebhookDeliveryError, verify

from .conftest import SECRET, Receiver, Step, make_envelope, make_question

FAST = {"backoff": 0.01}


async def test_async_delivery_is_the_same_contract(receiver: Receiver) -> None:
    url = receiver.script("/hook", Step(202))
    envelope = make_envelope()
    async with WebhookAnnounce(url, secret=SECRET) as hook:
        await hook.adeliver(envelope)
    [request] = receiver.requests("/hook")
    assert request.body == envelope.to_json()
    assert request.headers["x-agent-wait-dedupe-key"] == envelope.dedupe_key
    assert request.headers["x-agent-wait-event"] == "wait.created"
    assert verify(request.body, request.headers, SECRET) == envelope.to_dict()


async def test_several_envelopes_are_sent_concurrently(receiver: Receiver) -> None:
    # Each request is held until all four are in flight: sequential delivery never gets there.
    url = receiver.script("/meet", Step(meet=4))
    async with WebhookAnnounce(url, secret=SECRET, max_concurrency=8) as hook:
        report = await apublish([make_question(n) for n in range(1, 5)], "order-4471", hook)
    assert report.ok
    assert receiver.peak["/meet"] == 4
    keys = sorted(r.headers["x-agent-wait-dedupe-key"] for r in receiver.requests("/meet"))
    assert keys == [f"wait.created:order-4471:q-{n}" for n in range(1, 5)]


async def test_concurrency_is_bounded(receiver: Receiver) -> None:
    url = receiver.script("/meet", Step(meet=2))
    async with WebhookAnnounce(url, max_concurrency=2) as hook:
        report = await apublish([make_question(n) for n in range(1, 7)], "order-4471", hook)
    assert report.ok
    assert len(receiver.requests("/meet")) == 6
    assert receiver.peak["/meet"] == 2


async def test_async_retry_then_success(receiver: Receiver) -> None:
    url = receiver.script("/flaky", Step(500), Step(429), Step(200))
    async with WebhookAnnounce(url, secret=SECRET, **FAST) as hook:
        await hook.adeliver(make_envelope())
    assert len(receiver.requests("/flaky")) == 3


async def test_async_4xx_and_3xx_fail_without_retry(receiver: Receiver) -> None:
    bad = receiver.script("/bad", Step(422))
    moved = receiver.script("/moved", Step(301, {"Location": "https://example.invalid/x"}))
    async with WebhookAnnounce(bad, **FAST) as hook:
        with pytest.raises(WebhookDeliveryError, match="HTTP 422"):
            await hook.adeliver(make_envelope())
    async with WebhookAnnounce(moved, **FAST) as hook:
        with pytest.raises(
            WebhookDeliveryError, match=re.escape("redirect to 'https://example.invalid/x'")
        ):
            await hook.adeliver(make_envelope())
    assert len(receiver.requests("/bad")) == len(receiver.requests("/moved")) == 1


async def test_async_hang_is_reported_within_the_budget(receiver: Receiver) -> None:
    url = receiver.script("/hang", Step(hang=True))
    started = time.monotonic()
    async with WebhookAnnounce(url, timeout=30, total_timeout=1, **FAST) as hook:
        report = await apublish([make_question(1), make_question(2)], "order-4471", hook)
    assert time.monotonic() - started < 10
    assert [d.ok for d in report.deliveries] == [False, False]
    for failure in report.failures:
        assert "timed out" in (failure.error or "")
        assert "total_timeout of 1 s used up" in (failure.error or "")


@pytest.mark.parametrize(
    ("retries", "reason"),
    [(0, "timed out after 1.0 s (1 attempt)"), (5, "total_timeout of 3 s used up")],
)
async def test_async_trickled_headers_are_cut_off_within_the_budget(
    receiver: Receiver, retries: int, reason: str
) -> None:
    # Every byte arrives within the 1 s step timeout: only a bound on the exchange ends it.
    url = receiver.script("/trickle", Step(trickle=0.4))
    async with WebhookAnnounce(url, timeout=1, total_timeout=3, retries=retries, **FAST) as hook:
        started = time.monotonic()
        report = await apublish([make_question()], "order-4471", hook)
        elapsed = time.monotonic() - started
    assert elapsed < 3 + 2
    [failure] = report.failures
    assert isinstance(failure.exception, WebhookDeliveryError)
    assert failure.exception.status_code is None
    assert reason in str(failure.exception)
    assert len(receiver.requests("/trickle")) == failure.exception.attempts


async def test_async_trickled_body_after_a_2xx_is_cut_off_at_total_timeout(
    receiver: Receiver,
) -> None:
    url = receiver.script("/trickle", Step(200, trickle_body=0.4))
    async with WebhookAnnounce(url, timeout=1, total_timeout=3, retries=0) as hook:
        started = time.monotonic()
        report = await apublish([make_question()], "order-4471", hook)
        elapsed = time.monotonic() - started
    assert elapsed < 3 + 2
    assert report.ok


async def test_async_accepted_but_stalled_body_counts_as_delivered(receiver: Receiver) -> None:
    url = receiver.script("/stall", Step(202, stall_body=True))
    started = time.monotonic()
    async with WebhookAnnounce(url, timeout=30, total_timeout=1, **FAST) as hook:
        report = await apublish([make_question()], "order-4471", hook)
    assert time.monotonic() - started < 10
    assert report.ok
    assert len(receiver.requests("/stall")) == 1


async def test_async_connection_refused_and_strict(closed_port: int) -> None:
    hook = WebhookAnnounce(f"http://127.0.0.1:{closed_port}/", retries=2, **FAST)
    with pytest.raises(AnnounceFailed) as caught:
        await apublish([make_question()], "order-4471", hook, strict=True)
    await hook.aclose()
    [failure] = caught.value.report.failures
    assert isinstance(failure.exception, WebhookDeliveryError)
    assert failure.exception.attempts == 3
    assert "ConnectError" in failure.exception.reason


async def test_async_connection_is_reused(receiver: Receiver) -> None:
    url = receiver.script("/hook")
    async with WebhookAnnounce(url) as hook:
        for n in range(3):
            await hook.adeliver(make_envelope(n))
    assert len({r.client_port for r in receiver.requests("/hook")}) == 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_async_client_follows_the_event_loop(receiver: Receiver) -> None:
    # A host calling asyncio.run() per message without aclose(): the next loop must not reuse
    # connections of the closed one (the dropped transports complain when collected).
    url = receiver.script("/hook")
    hook = WebhookAnnounce(url)

    async def deliver_and_close(n: int) -> None:
        async with hook:
            await hook.adeliver(make_envelope(n))

    asyncio.run(hook.adeliver(make_envelope(1)))
    asyncio.run(deliver_and_close(2))
    asyncio.run(deliver_and_close(3))
    gc.collect()
    first, second, third = receiver.requests("/hook")
    assert len({first.client_port, second.client_port, third.client_port}) == 3
