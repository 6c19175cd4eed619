"""docs/examples/webhook_receiver.py served by uvicorn on 127.0.0.1, fed by WebhookAnnounce."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import uvicorn

from agent_wait.core import apublish, publish
from agent_wait.webhook import WebhookAnnounce

from .conftest import SECRET, make_question, uvicorn_serving

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "webhook_receiver.py"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("AGENT_WAIT_WEBHOOK_SECRET", SECRET)
    spec = importlib.util.spec_from_file_location("webhook_receiver_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def served(example: ModuleType) -> Iterator[str]:
    config = uvicorn.Config(example.app, log_level="warning", lifespan="off")
    with uvicorn_serving(config) as port:
        yield f"http://127.0.0.1:{port}/hooks/agent-wait"


def test_example_verifies_and_deduplicates(example: ModuleType, served: str) -> None:
    question = make_question(7)
    with WebhookAnnounce(served, secret=SECRET) as hook:
        first = publish([question], "order-4471", hook)
        again = publish([question], "order-4471", hook)  # a republish: new event_id, same question
    assert first.ok
    assert again.ok
    assert first.envelopes[0].event_id != again.envelopes[0].event_id
    assert example.inbox == [first.envelopes[0].to_dict()]


async def test_example_receives_an_async_batch(example: ModuleType, served: str) -> None:
    async with WebhookAnnounce(served, secret=SECRET) as hook:
        report = await apublish([make_question(n) for n in range(3)], "order-4471", hook)
    assert report.ok
    assert sorted(e["question_id"] for e in example.inbox) == ["q-0", "q-1", "q-2"]


def test_example_rejects_unsigned_wrong_secret_and_tampered(
    example: ModuleType, served: str
) -> None:
    with WebhookAnnounce(served, backoff=0.01) as unsigned:
        report = publish([make_question()], "order-4471", unsigned)
    assert report.failures[0].error is not None
    assert "HTTP 400 Bad Request (1 attempt)" in report.failures[0].error

    with WebhookAnnounce(served, secret="not the receiver's secret") as wrong:
        report = publish([make_question()], "order-4471", wrong)
    assert not report.ok

    # A signed request captured on the way and altered: the body no longer matches.
    captured: list[httpx.Request] = []
    with WebhookAnnounce(served, secret=SECRET) as hook:
        hook._clients.sync().event_hooks["request"].append(captured.append)
        assert publish([make_question(8)], "order-4471", hook).ok
    request = captured[0]
    body = request.content.replace(b"issue_refund", b"delete_all_data")
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    response = httpx.post(served, content=body, headers=headers)
    assert response.status_code == 400
    assert "no signature matches" in response.json()["error"]
    assert [e["question_id"] for e in example.inbox] == ["q-8"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("webhook-timestamp", "9" * 400),
        ("webhook-timestamp", "9" * 5000),
        ("webhook-signature", "v1,\u00e9t\u00e9"),
    ],
)
def test_example_answers_hostile_headers_with_400(
    example: ModuleType, served: str, name: str, value: str
) -> None:
    headers = {
        "content-type": "application/json",
        "webhook-id": "msg-1",
        "webhook-timestamp": str(int(time.time())),
        "webhook-signature": "v1,AAAA",
        name: value,
    }
    # httpx sends str header values as ASCII; the raw bytes carry any other text.
    raw = {k: v.encode("utf-8") for k, v in headers.items()}
    response = httpx.post(served, content=b"{}", headers=raw)
    assert response.status_code == 400
    assert example.inbox == []
