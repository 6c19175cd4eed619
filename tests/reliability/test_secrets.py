"""Secrets and data: nothing sensitive in logs at INFO, and signed webhooks resist tampering.

The log test runs a whole LangGraph thread through configuration (``AGENT_WAIT_ANNOUNCE``):
the run parks, one question goes to a signed webhook (secret from the environment) and to SQS
on a real moto server (credentials from the environment), a first delivery fails, the host's
redelivery republishes, the answer resumes the run. Every logger, the SDKs' included, logs at
INFO into one capture, which must hold neither question nor answer content, nor the webhook
secret, nor the AWS credentials.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from agent_wait.core import AnnounceFailed, Outcome, WaitPolicy
from agent_wait.host._cli import main
from agent_wait.langgraph import handle_message, wait
from agent_wait.webhook import WebhookVerificationError, verify
from tests.aws_moto import Aws
from tests.reliability.conftest import ACCESS_KEY_ID, SECRET_ACCESS_KEY
from tests.reliability.servers import FaultyReceiver

WEBHOOK_SECRET = "whsec_" + base64.b64encode(b"reliability-log-secret-3c9e").decode()
QUESTION_MARKER = "CONFIDENTIAL-customer-note-7f3a9"
AMOUNT_MARKER = 987654321
ANSWER_MARKER = "APPROVER-remark-c2d1"
# Loggers that stay quiet unless asked: set to INFO explicitly (root alone does not reach a
# logger whose level was set by its library).
SDK_LOGGERS = (
    "agent_wait",
    "httpx",
    "httpcore",
    "botocore",
    "boto3",
    "urllib3",
    "aiobotocore",
    "langgraph",
    "langchain",
    "langchain_core",
)


class Everything(logging.Handler):
    """Keeps every record's full text: message, exception, stack and extra fields."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.text = io.StringIO()
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.text.write(self.format(record) + "\n")
        extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        self.text.write(json.dumps(extras, default=repr) + "\n")


_STANDARD = set(vars(logging.LogRecord("n", 0, "p", 0, "m", None, None))) | {"message", "asctime"}


@pytest.fixture
def everything() -> Iterator[Everything]:
    handler = Everything()
    root = logging.getLogger()
    saved = {name: logging.getLogger(name).level for name in SDK_LOGGERS}
    saved_root = root.level
    existing = [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    saved_existing = {logger: logger.level for logger in existing}
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    for logger in existing:
        if logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
        if not logger.propagate:
            logger.addHandler(handler)
    yield handler
    root.removeHandler(handler)
    root.setLevel(saved_root)
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)
    for logger, level in saved_existing.items():
        logger.setLevel(level)
        if handler in logger.handlers:
            logger.removeHandler(handler)


class _State(TypedDict, total=False):
    order_id: str
    amount: int
    note: str
    refund: Any


def _graph(runs: list[dict[str, Any]]) -> Any:
    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int, note: str, decision: Any = None) -> str:
        runs.append({"order_id": order_id, "amount": amount, "decision": decision})
        return "refunded"

    def refund(state: _State) -> _State:
        return {"refund": issue_refund(state["order_id"], state["amount"], state["note"])}

    builder = StateGraph(_State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.integration
def test_a_full_run_logs_no_content_and_no_secret_at_info(
    aws: Aws,
    everything: Everything,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The aws fixture's credentials are replaced by distinctive ones, to be searched for.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
    monkeypatch.setenv("APPROVALS_WEBHOOK_SECRET", WEBHOOK_SECRET)
    receiver = FaultyReceiver(WEBHOOK_SECRET, seed=0, weights={"error": 1.0})
    receiver.start()
    try:
        sqs = aws.client("sqs")
        queue_url = sqs.create_queue(QueueName="approvals")["QueueUrl"]
        monkeypatch.setenv(
            "AGENT_WAIT_ANNOUNCE",
            json.dumps(
                [
                    {"use": "sqs", "queue_url": queue_url, **aws.options},
                    {
                        "use": "webhook",
                        "url": receiver.url,
                        "secret_env": "APPROVALS_WEBHOOK_SECRET",
                        "retries": 0,
                    },
                ]
            ),
        )
        runs: list[dict[str, Any]] = []
        graph = _graph(runs)
        start = {
            "thread_id": "order-4471",
            "input": {"order_id": "order-4471", "amount": AMOUNT_MARKER, "note": QUESTION_MARKER},
        }
        # First delivery: the webhook answers 500; the host leaves the message unacknowledged.
        with pytest.raises(AnnounceFailed):
            handle_message(graph, start, strict=True)
        receiver.faults = False
        redelivered = handle_message(graph, start, strict=True)
        assert redelivered.outcome is Outcome.REPUBLISHED
        [envelope] = receiver.received()
        assert envelope["question"]["args"]["note"] == QUESTION_MARKER
        answer = {**envelope["reply_with"], "answer": {"action": "approve", "note": ANSWER_MARKER}}
        resumed = handle_message(graph, json.dumps(answer), strict=True)
        assert resumed.outcome is Outcome.RESUMED
        assert runs == [
            {
                "order_id": "order-4471",
                "amount": AMOUNT_MARKER,
                "decision": {"action": "approve", "note": ANSWER_MARKER},
            }
        ]
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            assert main(["config", "check"]) == 0
    finally:
        receiver.stop()

    logged = everything.text.getvalue()
    # The capture works, for agent-wait and for the SDKs: deliveries, failures, HTTP requests.
    names = {r.name for r in everything.records}
    assert any(n.startswith("agent_wait") for n in names)
    assert any(n.startswith(("httpx", "botocore")) for n in names), names
    assert "delivery failed" in logged
    assert "order-4471" in logged  # ids are logged; content is not
    shown = logged + out.getvalue() + err.getvalue()
    secrets = {
        "question content": QUESTION_MARKER,
        "question amount": str(AMOUNT_MARKER),
        "answer content": ANSWER_MARKER,
        "webhook secret": WEBHOOK_SECRET,
        "webhook key": WEBHOOK_SECRET.removeprefix("whsec_"),
        "AWS access key id": ACCESS_KEY_ID,
        "AWS secret access key": SECRET_ACCESS_KEY,
    }
    leaked = {what: value for what, value in secrets.items() if value in shown}
    assert not leaked, f"logged at INFO or above: {sorted(leaked)}"


# --- webhook signatures ------------------------------------------------------------------------


@pytest.fixture
def signed_request() -> Iterator[tuple[FaultyReceiver, bytes, dict[str, str]]]:
    """A real signed delivery, as the receiver got it."""
    from agent_wait.core import Question, publish
    from agent_wait.webhook import WebhookAnnounce

    receiver = FaultyReceiver(WEBHOOK_SECRET, seed=0, weights={"ok": 1.0})
    receiver.start()
    try:
        with WebhookAnnounce(receiver.url, secret=WEBHOOK_SECRET) as hook:
            publish(
                [Question(question_id="q-1", question={"amount": 41000})], "t-1", hook, strict=True
            )
        [headers] = receiver.headers
        [body] = receiver.bodies
        yield receiver, body, headers
    finally:
        receiver.stop()


def _other_last_char(text: str) -> str:
    # Always a real change: a fixed replacement would equal the id's own last character 1 time in 32.
    return text[:-1] + ("1" if text.endswith("0") else "0")


def _post(receiver: FaultyReceiver, body: bytes, headers: dict[str, str]) -> int:
    keep = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "host")}
    return httpx.post(receiver.url, content=body, headers=keep, timeout=5).status_code


def test_the_delivered_request_verifies(
    signed_request: tuple[FaultyReceiver, bytes, dict[str, str]],
) -> None:
    _, body, headers = signed_request
    assert verify(body, headers, WEBHOOK_SECRET)["question_id"] == "q-1"


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        pytest.param(
            lambda b, h: (b.replace(b"41000", b"91000"), h), "no signature matches", id="body"
        ),
        pytest.param(lambda b, h: (b + b" ", h), "no signature matches", id="trailing-space"),
        pytest.param(
            lambda b, h: (b, {**h, "webhook-id": _other_last_char(h["webhook-id"])}),
            "no signature matches",
            id="message-id",
        ),
        pytest.param(
            lambda b, h: (b, {**h, "webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)}),
            "no signature matches",
            id="timestamp",
        ),
        pytest.param(
            lambda b, h: (b, {k: v for k, v in h.items() if k.lower() != "webhook-signature"}),
            "missing header webhook-signature",
            id="no-signature",
        ),
        pytest.param(
            lambda b, h: (
                b,
                {**h, "webhook-signature": "v1," + base64.b64encode(b"x" * 32).decode()},
            ),
            "no signature matches",
            id="forged-signature",
        ),
        pytest.param(
            lambda b, h: (b, {**h, "webhook-signature": "v1a," + h["webhook-signature"][3:]}),
            "no v1 signature",
            id="other-scheme",
        ),
    ],
)
def test_tampered_requests_are_rejected(
    signed_request: tuple[FaultyReceiver, bytes, dict[str, str]], tamper: Any, reason: str
) -> None:
    receiver, body, headers = signed_request
    headers = {k.lower(): v for k, v in headers.items()}
    bad_body, bad_headers = tamper(body, headers)
    with pytest.raises(WebhookVerificationError, match=reason):
        verify(bad_body, bad_headers, WEBHOOK_SECRET)
    # Over HTTP, the receiver refuses it and keeps nothing.
    assert _post(receiver, bad_body, bad_headers) == 400
    assert len(receiver.received()) == 1


def test_a_signature_by_another_secret_is_rejected(
    signed_request: tuple[FaultyReceiver, bytes, dict[str, str]],
) -> None:
    _, body, headers = signed_request
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(body, headers, "whsec_" + base64.b64encode(b"another-secret").decode())


def test_replays_are_rejected_outside_the_window_and_deduplicated_inside_it(
    signed_request: tuple[FaultyReceiver, bytes, dict[str, str]],
) -> None:
    receiver, body, headers = signed_request
    sent = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    for late in (timedelta(minutes=5, seconds=2), timedelta(days=1)):
        with pytest.raises(WebhookVerificationError, match="stale or replayed"):
            verify(body, headers, WEBHOOK_SECRET, now=sent + late)
    with pytest.raises(WebhookVerificationError, match="stale or replayed"):
        verify(body, headers, WEBHOOK_SECRET, now=sent - timedelta(minutes=6))
    # Within the tolerance, verify() is stateless: a replay verifies. It is the same envelope
    # (same webhook-id = event_id, same dedupe key), which a receiver drops on type +
    # question_id, as it drops every republish.
    assert _post(receiver, body, headers) == 200
    first, replay = receiver.received()
    assert replay == first
    assert {h["x-agent-wait-dedupe-key"] for h in map(_lower, receiver.headers)} == {
        "wait.created:t-1:q-1"
    }
    assert len({f"{e['type']}:{e['question_id']}" for e in receiver.received()}) == 1


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}
