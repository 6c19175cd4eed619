"""The core entry-point conformance kit and the nats entry point's own behaviour, on real NATS."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from agent_wait.core import ConfigError, EntryPoint, entry
from agent_wait.core.transport import MAX_MESSAGE_BYTES
from agent_wait.nats import NatsEntry
from agent_wait.nats._entry import _token  # pyright: ignore[reportPrivateUsage]
from agent_wait.testing import EntryContract
from tests.entry_serving import check_serve_loop
from tests.nats.conftest import Admin, unique, with_jetstream


class TestNatsEntry(EntryContract):
    tells_oldest_waiting = True

    # A receive makes several server round trips per message (the thread's head, the attempts
    # record): on a loaded machine one receive of the kit's messages can outlast a 1 s lease.
    visibility_timeout = 3.0

    @pytest.fixture(autouse=True)
    def _nowhere(self, closed_port: int) -> None:
        self.closed_port = closed_port

    def make_unreachable_entry(self) -> EntryPoint:
        return NatsEntry(f"nats://127.0.0.1:{self.closed_port}", timeout=1.0)

    @pytest.fixture(autouse=True)
    def _server(self, nats_url: str, admin: Admin) -> Iterator[None]:
        self.url = nats_url
        self.streams: list[str] = []
        yield
        for name in self.streams:
            for made in (name, f"{name}_DEAD", f"KV_{name}_ATTEMPTS"):
                admin.drop(made)

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        stream = f"AW_ENTRY_{unique()}"
        self.streams.append(stream)
        return NatsEntry(
            self.url,
            stream=stream,
            subject=f"awtest.{unique()}",
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            hold_delay=0.05,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        assert isinstance(entry, NatsEntry)
        if len(body) > MAX_MESSAGE_BYTES:
            pytest.skip("NATS refuses a payload over its max_payload (1 MiB by default)")
        subject = f"{entry.subject}.{_token(thread_id)}"

        async def publish(session: Any) -> None:
            await session.js.publish(subject, body, stream=entry.stream)

        entry._run(publish)  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def named(nats_url: str, admin: Admin) -> Iterator[tuple[str, str]]:
    """A fresh stream name and subject prefix, with everything made for them dropped after."""
    stream, subject = f"AW_ENTRY_{unique()}", f"awtest.{unique()}"
    yield stream, subject
    for made in (stream, f"{stream}_DEAD", f"KV_{stream}_ATTEMPTS"):
        admin.drop(made)


def test_built_by_name_and_two_hosts_share_the_durable_consumer(
    nats_url: str, named: tuple[str, str]
) -> None:
    stream, subject = named
    first = entry("nats", url=nats_url, stream=stream, subject=subject, hold_delay=0.05)
    second = entry("nats", url=nats_url, stream=stream, subject=subject, hold_delay=0.05)
    try:
        assert isinstance(first, NatsEntry)
        for n in range(2):
            first.send({"thread_id": "t/1 ä", "question_id": f"q{n}", "answer": n})
        [head] = first.receive(10, wait=2.0)
        assert head.message["question_id"] == "q0"
        assert second.receive(10, wait=0.3) == [], "another host got the thread's next message"
        assert first.ack(head)
        [following] = second.receive(10, wait=2.0)
        assert (following.message["question_id"], following.attempt) == ("q1", 1)
        assert second.ack(following)
    finally:
        first.close()
        second.close()


def test_a_message_in_hand_is_not_handed_out_again_within_its_lease(
    nats_url: str, named: tuple[str, str]
) -> None:
    """The server may send a message again, uncounted, while its first delivery is in hand.

    That happens when a one-message pull request ends as it is served, here while held-back
    messages of another thread come round; a second hand-out would take the lease from the
    host that holds it (its ack would then fail).
    """
    stream, subject = named
    with NatsEntry(
        nats_url, stream=stream, subject=subject, visibility_timeout=5.0, hold_delay=0.05
    ) as host:
        for round_ in range(5):
            for n in range(3):
                host.send({"thread_id": f"a{round_}", "question_id": f"q{n}", "answer": n})
            host.send({"thread_id": f"b{round_}", "question_id": "q0", "answer": 0})
            in_hand = host.receive(10, wait=2.0)
            again = host.receive(10, wait=0.0)
            assert not {r.id for r in in_hand} & {r.id for r in again}, round_
            for received in in_hand + again:
                assert host.ack(received), received
            while batch := host.receive(10, wait=0.5):
                for received in batch:
                    assert host.ack(received), received


def test_a_held_back_message_comes_round_as_soon_as_its_thread_goes_on(
    nats_url: str, named: tuple[str, str]
) -> None:
    """Each message of a thread is handed out within the wait once the one before is acked.

    A held-back message falls due ``hold_delay`` after its nak. Some servers lose a
    redelivery that falls due as a waiting pull request expires, until the lease runs out
    (30 s here, far past the 2 s wait); a receive that waits for nothing must not leave such
    a request behind.
    """
    stream, subject = named
    with NatsEntry(
        nats_url, stream=stream, subject=subject, visibility_timeout=30.0, hold_delay=0.05
    ) as host:
        for round_ in range(15):
            thread = f"t{round_}"
            for n in range(3):
                host.send({"thread_id": thread, "question_id": f"q{n}", "answer": n})
            for n in range(3):
                [head] = host.receive(10, wait=2.0)
                assert head.message["question_id"] == f"q{n}", round_
                assert host.receive(10, wait=0.0) == [], round_
                assert host.ack(head)


def test_dead_letters_outlive_the_host_that_buried_them(
    nats_url: str, named: tuple[str, str]
) -> None:
    stream, subject = named
    with NatsEntry(nats_url, stream=stream, subject=subject, max_attempts=1) as host:
        host.send({"thread_id": "t-1", "question_id": "q1", "answer": 1})
        [received] = host.receive(wait=2.0)
        assert host.fail(received, "RuntimeError: boom")
    with NatsEntry(nats_url, stream=stream, subject=subject) as later:
        [letter] = later.dead_letters()
        assert (letter.thread_id, letter.attempts, letter.error) == ("t-1", 1, "RuntimeError: boom")
        assert not later.redrive("999999")


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [
        ("stream", "has.dot", "stream"),
        ("subject", "a.*", "subject"),
        ("max_attempts", 0, "max_attempts"),
        ("retry_delay", -1, "retry_delay"),
        ("visibility_timeout", "soon", "visibility_timeout"),
    ],
)
def test_bad_options_name_the_option_and_value(option: str, value: object, field: str) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"entry point 'nats': option '{field}': .*\(got {re.escape(repr(value))}\)",
    ):
        entry("nats", **{option: value})


def test_a_misspelt_option_gets_a_close_match() -> None:
    with pytest.raises(
        ConfigError, match=r"entry point 'nats': unknown option 'durabel'; did you mean 'durable'\?"
    ):
        entry("nats", durabel="x")
    with pytest.raises(ConfigError, match=r"option 'url': .*\(got 'http://user:\*\*\*@h'\)"):
        entry("nats", url="http://user:s3cret@h")


def test_an_unreachable_server_never_shows_the_password(closed_port: int) -> None:
    with (
        NatsEntry(f"nats://user:s3cret@127.0.0.1:{closed_port}", timeout=1) as unreachable,
        pytest.raises(ConnectionError) as raised,
    ):
        unreachable.send({"thread_id": "t", "question_id": "q", "answer": 1})
    assert "s3cret" not in str(raised.value)
    assert "127.0.0.1" in str(raised.value)


def test_the_serve_loop_keeps_each_thread_in_order(nats_url: str, named: tuple[str, str]) -> None:
    stream, subject = named
    with NatsEntry(
        nats_url, stream=stream, subject=subject, max_attempts=2, retry_delay=0, hold_delay=0.05
    ) as served:
        check_serve_loop(served)


def test_reply_to_names_the_servers_stream_and_subject(nats_url: str) -> None:
    stream, subject = f"AW_ENTRY_{unique()}", f"awtest.{unique()}"
    with NatsEntry(nats_url, stream=stream, subject=subject) as messages:
        # Describing connects to nothing: nothing is created on the server.
        assert messages.reply_to() == {
            "use": "nats",
            "url": nats_url,
            "stream": stream,
            "subject": subject,
        }


def test_a_consumer_gone_from_the_server_is_an_error_not_an_empty_receive(
    nats_url: str, named: tuple[str, str]
) -> None:
    stream, subject = named
    with NatsEntry(nats_url, stream=stream, subject=subject, durable="gone") as host:
        host.send({"thread_id": "t", "question_id": "q0", "answer": 0})
        with_jetstream(lambda js: js.delete_consumer(stream, "gone"))
        for wait in (0.0, 1.0):
            with pytest.raises(
                ConnectionError, match=r"stream 'AW_ENTRY_\w+' has no consumer 'gone'"
            ):
                host.receive(wait=wait)
