"""The webhook entry point over real HTTP: uvicorn serves the host side, httpx posts."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from agent_wait.core import ConfigError, EntryPoint, entry
from agent_wait.testing import EntryContract
from agent_wait.webhook import WebhookEntry
from agent_wait.webhook._entry import MAX_BODY
from agent_wait.webhook._signing import SigningKey
from tests.entry_serving import check_serve_loop

from .conftest import SECRET, uvicorn_serving


class TestWebhookEntry(EntryContract):
    @pytest.fixture(autouse=True)
    def _home(self, tmp_path: Path) -> None:
        self.path = str(tmp_path / "webhook.sqlite3")

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        return WebhookEntry(
            listen="127.0.0.1:0",
            secret=SECRET,
            path=self.path,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            delivery_retry_delay=0.1,
            flush_timeout=2.0,
            # POSTs arrive one by one: on a loaded machine the kit's batch of two threads' first
            # messages can arrive further apart than the default linger.
            linger=0.5,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        # A POST carries no thread beside the body: thread_id has nowhere to go.
        assert isinstance(entry, WebhookEntry)
        assert entry.target is not None
        if len(body) > MAX_BODY:
            pytest.skip("the webhook server refuses a body over its limit (413) before reading it")
        headers = SigningKey(SECRET).headers(f"msg_{uuid.uuid4().hex}", body)
        # Answered at once: nothing that could be handed out, so never held.
        httpx.post(entry.target, content=body, headers=headers, timeout=30)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[WebhookEntry]:
    with WebhookEntry(
        listen="127.0.0.1:0", secret=SECRET, path=str(tmp_path / "host.sqlite3"), retry_delay=0.0
    ) as built:
        yield built


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[WebhookEntry, str]]:
    """The ASGI app mounted in uvicorn, as a host with its own server would."""
    with (
        WebhookEntry(secret=SECRET, path=str(tmp_path / "mounted.sqlite3")) as built,
        uvicorn_serving(uvicorn.Config(built.app, log_level="warning", interface="asgi3")) as port,
    ):
        yield built, f"http://127.0.0.1:{port}/"


def _answer(thread: str = "order-4471") -> dict[str, object]:
    return {"thread_id": thread, "question_id": "q1", "answer": {"action": "approve"}}


def _post_in_background(
    url: str, body: bytes, headers: dict[str, str]
) -> tuple[threading.Thread, list[httpx.Response]]:
    responses: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: responses.append(httpx.post(url, content=body, headers=headers, timeout=30))
    )
    thread.start()
    return thread, responses


def test_the_request_is_answered_only_after_the_host_acknowledged(host: WebhookEntry) -> None:
    body = b'{"thread_id":"order-4471","question_id":"q1","answer":{"action":"approve"}}'
    headers = {"content-type": "application/json", **SigningKey(SECRET).headers("msg_1", body)}
    assert host.target is not None
    thread, responses = _post_in_background(host.target, body, headers)
    [received] = host.receive(1, wait=5)
    thread.join(0.3)
    assert thread.is_alive(), "the sender was answered before the host handled the message"
    assert host.ack(received)
    thread.join(10)
    assert (responses[0].status_code, responses[0].json()) == (
        200,
        {"status": "handled", "id": "msg_1"},
    )


def test_a_dead_lettered_message_is_answered_202_and_kept(host: WebhookEntry) -> None:
    body = b'{"thread_id":"t-dead","question_id":"q1","answer":1}'
    headers = SigningKey(SECRET).headers("msg_dead", body)
    assert host.target is not None
    thread, responses = _post_in_background(host.target, body, headers)
    [received] = host.receive(1, wait=5)
    assert host.fail(received, "ValueError: bad", retry=False)
    thread.join(10)
    assert responses[0].status_code == 202
    [dead] = host.dead_letters()
    assert (dead.id, dead.thread_id, dead.error) == ("msg_dead", "t-dead", "ValueError: bad")
    # The sender retrying the same webhook-id is told at once it is kept, not handed out again.
    again = httpx.post(host.target, content=body, headers=headers, timeout=10)
    assert again.status_code == 202
    assert host.receive(1, wait=0.2) == []


def test_unsigned_or_altered_requests_are_refused(host: WebhookEntry) -> None:
    body = b'{"thread_id":"t","question_id":"q1","answer":1}'
    assert host.target is not None
    unsigned = httpx.post(host.target, content=body, timeout=10)
    assert unsigned.status_code == 401
    assert "webhook-id" in unsigned.json()["error"]
    headers = SigningKey(SECRET).headers("msg_x", body)
    altered = httpx.post(
        host.target, content=body.replace(b"1}", b"2}"), headers=headers, timeout=10
    )
    assert altered.status_code == 401
    assert host.receive(1, wait=0.2) == []


def test_a_malformed_message_is_dead_lettered_at_once_naming_the_field(
    host: WebhookEntry,
) -> None:
    body = b'{"question_id":"q1","answer":1}'
    assert host.target is not None
    headers = SigningKey(SECRET).headers("msg_m", body)
    response = httpx.post(host.target, content=body, headers=headers, timeout=10)
    assert response.status_code == 202
    assert response.json()["status"] == "dead-lettered"
    assert "thread_id" in response.json()["error"]
    [dead] = host.dead_letters()
    assert (dead.id, dead.attempts, dead.message) == (
        "msg_m",
        1,
        {"question_id": "q1", "answer": 1},
    )
    assert dead.error.startswith("PoisonMessage: not a start message or an answer")
    # The sender retrying it is told the same, and it is kept once.
    again = httpx.post(host.target, content=body, headers=headers, timeout=10)
    assert again.status_code == 202
    assert len(host.dead_letters()) == 1
    assert host.receive(1, wait=0.2) == []


def test_an_unsigned_poison_body_is_refused_not_kept(host: WebhookEntry) -> None:
    assert host.target is not None
    response = httpx.post(host.target, content=b"not json", timeout=10)
    assert response.status_code == 401
    assert host.dead_letters() == []


def test_closing_the_host_answers_held_requests_503_so_senders_retry(tmp_path: Path) -> None:
    host = WebhookEntry(listen="127.0.0.1:0", path=str(tmp_path / "h.sqlite3"))
    body = b'{"thread_id":"t","question_id":"q1","answer":1}'
    assert host.target is not None
    thread, responses = _post_in_background(host.target, body, {"webhook-id": "msg_c"})
    assert host.receive(1, wait=5)
    host.close()
    thread.join(10)
    assert responses[0].status_code == 503


def test_a_consumer_sends_to_a_host_in_another_object(tmp_path: Path, host: WebhookEntry) -> None:
    with entry(
        "webhook", url=host.target, secret=SECRET, path=str(tmp_path / "consumer.sqlite3")
    ) as consumer:
        assert isinstance(consumer, WebhookEntry)
        consumer.send(_answer())
        [received] = host.receive(1, wait=5)
        assert received.message == _answer()
        assert not consumer.flush(0.2), "the consumer's message settled before the host handled it"
        assert host.ack(received)
        assert consumer.flush(10)


def test_an_unreachable_host_keeps_the_message_in_the_outbox(tmp_path: Path) -> None:
    outbox = str(tmp_path / "consumer.sqlite3")
    with WebhookEntry(
        "http://127.0.0.1:9/",
        path=outbox,
        delivery_retry_delay=0.05,
        delivery_attempts=2,
        flush_timeout=5,
    ) as consumer:
        consumer.send(_answer("t-unreachable"))
        assert consumer.flush(5)  # settled: dead-lettered in the outbox, not lost
        [dead] = consumer.dead_letters()
    assert dead.id.startswith("outbox-")
    assert (dead.thread_id, dead.attempts) == ("t-unreachable", 2)
    assert "ConnectError" in dead.error


def test_options_are_checked_by_name() -> None:
    with pytest.raises(Exception, match="listen: expected 'host:port'"):
        entry("webhook", listen="8080")
    with pytest.raises(ConfigError, match="option 'url': expected an http:// or https:// URL"):
        entry("webhook", url="ftp://example.com/")
    with pytest.raises(ConfigError, match=r"option 'max_in_flight'.*got 0"):
        entry("webhook", max_in_flight=0)
    with pytest.raises(ConfigError, match="did you mean 'linger'"):
        entry("webhook", lingr=1)


def test_the_serve_loop_over_real_http(tmp_path: Path) -> None:
    with WebhookEntry(
        listen="127.0.0.1:0", path=str(tmp_path / "serve.sqlite3"), retry_delay=0.0, max_attempts=2
    ) as built:
        check_serve_loop(built)


def test_the_mounted_asgi_app_holds_until_acknowledged(
    mounted: tuple[WebhookEntry, str], tmp_path: Path
) -> None:
    host, url = mounted
    with WebhookEntry(url, secret=SECRET, path=str(tmp_path / "sender.sqlite3")) as consumer:
        consumer.send(_answer("t-mounted"))
        [received] = host.receive(1, wait=5)
        assert received.message == _answer("t-mounted")
        assert not consumer.flush(0.2), "answered before the host handled the message"
        assert host.ack(received)
        assert consumer.flush(10)
    body = b'{"thread_id":"t","question_id":"q1","answer":1}'
    refused = httpx.post(url, content=body, timeout=10)
    assert refused.status_code == 401
    assert httpx.get(url, timeout=10).status_code == 405


def test_reply_to_publishes_the_url_never_the_secret(tmp_path: Path) -> None:
    with WebhookEntry(
        "https://agent.example.com/in", secret=SECRET, path=str(tmp_path / "r.sqlite3")
    ) as messages:
        assert messages.reply_to() == {"use": "webhook", "url": "https://agent.example.com/in"}
    with (
        WebhookEntry(
            "https://agent.example.com/in?token=abc", path=str(tmp_path / "r.sqlite3")
        ) as leaky,
        pytest.raises(ConfigError, match="'token'"),
    ):
        leaky.reply_to()


def test_the_next_sender_delivers_what_a_closed_one_left_in_the_outbox(
    tmp_path: Path, host: WebhookEntry
) -> None:
    outbox = str(tmp_path / "shared-outbox.sqlite3")
    with WebhookEntry(
        "http://127.0.0.1:9/", path=outbox, delivery_retry_delay=1, flush_timeout=0
    ) as gone:
        gone.send(_answer("t-left"))
    assert host.target is not None
    with WebhookEntry(
        host.target, secret=SECRET, path=outbox, delivery_retry_delay=0.1, flush_timeout=5
    ) as sender:
        sender.send(_answer("t-own"))
        first = host.receive(2, wait=5)
        got = {r.thread_id: r for r in first}
        if len(got) < 2:
            got.update({r.thread_id: r for r in host.receive(2, wait=10)})
        assert set(got) == {"t-left", "t-own"}
        assert host.ack(got["t-own"])
        # flush waits for this sender's own message only, not for the one it found there.
        assert sender.flush(5)
        assert host.ack(got["t-left"])


def test_a_consumer_follows_reply_to_with_its_own_secret_and_nothing_else(
    tmp_path: Path, host: WebhookEntry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_wait.core._entries import reply_entry

    monkeypatch.setenv("HOOK_SECRET", SECRET)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    # The consumer's own configuration would listen too; only its secret is taken.
    monkeypatch.setenv(
        "AGENT_WAIT_ENTRY",
        '{"use": "webhook", "listen": "127.0.0.1:0", "secret_env": "HOOK_SECRET"}',
    )
    consumer = reply_entry(host.reply_to())
    assert isinstance(consumer, WebhookEntry)
    with consumer:
        assert consumer.address is None, "the consumer started a server from its own config"
        consumer.send(_answer("t-reply"))
        [received] = host.receive(1, wait=5)  # the host refuses unsigned: the secret was used
        assert received.message == _answer("t-reply")
        assert host.ack(received)
        assert consumer.flush(10)
