"""The ``redis`` entry point against the real server: the conformance kit, plus its own parts."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from agent_wait.core import ConfigError, EntryPoint, entry
from agent_wait.redis import RedisEntry
from agent_wait.testing import EntryContract


class TestRedisEntry(EntryContract):
    tells_oldest_waiting = True

    @pytest.fixture(autouse=True)
    def _nowhere(self, closed_port: int) -> None:
        self.closed_port = closed_port

    def make_unreachable_entry(self) -> EntryPoint:
        return RedisEntry(
            f"redis://127.0.0.1:{self.closed_port}/0", stream=self.stream, timeout=1.0
        )

    @pytest.fixture(autouse=True)
    def _server(self, redis_url: str, names: tuple[str, str]) -> None:
        self.url = redis_url
        self.stream = names[0]

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        return RedisEntry(
            self.url,
            stream=self.stream,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        # Through the entry point's own queueing script, unchecked: the thread's order holds.
        assert isinstance(entry, RedisEntry)
        entry._run("send", thread_id, body)  # pyright: ignore[reportPrivateUsage]


def _answer(thread: str, n: int) -> dict[str, object]:
    return {"thread_id": thread, "question_id": f"q{n}", "answer": {"n": n}}


def test_hosts_on_separate_consumers_never_hold_one_thread_at_once(
    redis_url: str, names: tuple[str, str]
) -> None:
    """If this fails, two consumers of the group can handle one thread concurrently."""
    stream = names[0]
    with (
        RedisEntry(redis_url, stream=stream, consumer="a") as a,
        RedisEntry(redis_url, stream=stream, consumer="b") as b,
    ):
        for n in range(3):
            a.send(_answer("shared", n))
        a.send(_answer("other", 0))
        held_by_b = b.receive(5)
        assert [(r.thread_id, r.message["question_id"]) for r in held_by_b] == [
            ("shared", "q0"),
            ("other", "q0"),
        ]
        assert a.receive(5) == [], "a thread's second message was handed to another consumer"
        assert b.ack(held_by_b[0])
        [following] = a.receive(5)
        assert (following.message["question_id"], following.attempt) == ("q1", 1)
        assert a.ack(following)
        assert b.ack(held_by_b[1])


def test_a_crashed_consumer_s_message_is_taken_over(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    """If this fails, a message pending for a dead consumer is never handed out again."""
    stream = names[0]
    with (
        RedisEntry(redis_url, stream=stream, consumer="dies", visibility_timeout=0.5) as dies,
        RedisEntry(redis_url, stream=stream, consumer="lives", visibility_timeout=0.5) as lives,
    ):
        dies.send(_answer("crash", 1))
        [lost] = dies.receive(1)
        time.sleep(0.6)
        [taken] = lives.receive(1)
        assert (taken.id, taken.attempt) == (lost.id, 2)
        [pending] = client.xpending_range(stream, "agent-wait-hosts", "-", "+", 10)
        assert (pending["consumer"], pending["times_delivered"]) == ("lives", 2)
        assert not dies.ack(lost)
        assert lives.ack(taken)
        assert client.xlen(stream) == 0


def test_retries_back_off_exponentially(redis_url: str, names: tuple[str, str]) -> None:
    """If this fails, a failing message is retried at a fixed pace (or not at all)."""
    with RedisEntry(redis_url, stream=names[0], retry_delay=0.4, poll_interval=0.1) as messages:
        messages.send(_answer("backoff", 1))
        [first] = messages.receive(1)
        assert not messages.fail(first, "RuntimeError: one")
        assert messages.receive(1) == []
        assert not messages.ack(first), "a released message was still acknowledged"
        [second] = messages.receive(1, wait=3.0)
        messages.fail(second, "RuntimeError: two")
        time.sleep(0.5)
        assert messages.receive(1) == [], "the second retry came after one retry_delay"
        [third] = messages.receive(1, wait=3.0)
        assert third.attempt == 3
        assert messages.ack(third)


def test_a_waiting_receiver_wakes_on_a_new_message(redis_url: str, names: tuple[str, str]) -> None:
    """If this fails, a waiting host only sees a new message after its poll interval."""
    with (
        RedisEntry(redis_url, stream=names[0], poll_interval=30) as waiting,
        RedisEntry(redis_url, stream=names[0]) as sender,
    ):
        waiting.receive(1)  # connects and creates the group before the wait starts
        got: list[float] = []

        def wait() -> None:
            [received] = waiting.receive(1, wait=20.0)
            got.append(time.monotonic())
            waiting.ack(received)

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.5)
        sent = time.monotonic()
        sender.send(_answer("wake", 1))
        waiter.join(25)
        assert got, "the receiver got nothing"
        assert got[0] - sent < 10, "the receiver was not woken by the new entry"


def test_options_are_checked_and_the_password_never_shown() -> None:
    """If this fails, a bad option is accepted or an error leaks the password."""
    with pytest.raises(
        ConfigError, match=r"entry point 'redis': option 'max_attempts': .* \(got 0\)"
    ):
        RedisEntry(max_attempts=0)
    with pytest.raises(
        ConfigError, match=r"entry point 'redis': option 'url': .*\(got 'http://user:\*\*\*@"
    ) as error:
        RedisEntry("http://user:s3cret@example.com")
    assert "s3cret" not in str(error.value)
    with pytest.raises(ConfigError, match=r"option 'stream': .* \(got ''\)"):
        entry("redis", stream="")
    with pytest.raises(ConfigError, match=r"option 'retry_delay': .* \(got -1\)"):
        entry("redis", retry_delay=-1)
    with pytest.raises(
        ConfigError,
        match=r"entry point 'redis': unknown option 'poll_intervall'; did you mean 'poll_interval'\?",
    ):
        entry("redis", poll_intervall=1)
    with pytest.raises(ConfigError, match="give 'url' or 'url_env', not both"):
        entry("redis", url="redis://x", url_env="REDIS_URL")
    built = entry("redis", url="redis://app:s3cret@127.0.0.1:1/0")
    assert isinstance(built, RedisEntry)
    assert "s3cret" not in repr(built)


def test_a_lapsed_lease_behind_many_live_ones_is_taken_over(
    redis_url: str, names: tuple[str, str]
) -> None:
    """If this fails, a crashed host's message behind a long pending list is never redelivered."""
    stream = names[0]
    with (
        RedisEntry(redis_url, stream=stream, consumer="busy", visibility_timeout=1.0) as busy,
        RedisEntry(redis_url, stream=stream, consumer="other", visibility_timeout=1.0) as other,
    ):
        for n in range(30):
            busy.send(_answer(f"thread-{n}", n))
        held = busy.receive(30)
        assert len(held) == 30
        time.sleep(1.1)
        # Every lease lapsed; renewing all but the newest leaves it, behind 29 live ones, the
        # only entry idle long enough to be taken over.
        for received in held[:-1]:
            assert busy.extend(received)
        [taken] = other.receive(1)
        assert (taken.id, taken.attempt) == (held[-1].id, 2)


def test_reply_to_names_the_stream_and_refuses_a_password(
    redis_url: str, names: tuple[str, str]
) -> None:
    with RedisEntry(redis_url, stream=names[0]) as messages:
        assert messages.reply_to() == {"use": "redis", "url": redis_url, "stream": names[0]}
    with (
        RedisEntry("redis://:hunter2@localhost:6379/0", stream=names[0]) as guarded,
        pytest.raises(ConfigError, match="a password in the URL") as caught,
    ):
        guarded.reply_to()
    assert "hunter2" not in str(caught.value)


def test_an_entry_another_program_added_without_our_fields_is_dead_lettered(
    redis_url: str, names: tuple[str, str]
) -> None:
    """If this fails, a stray XADD to the stream stops every host reading it."""
    stream = names[0]
    with RedisEntry(redis_url, stream=stream) as messages:
        messages.send(_answer("t1", 0))
        raw = redis.Redis.from_url(redis_url)  # pyright: ignore[reportUnknownMemberType]
        raw.xadd(stream, {"note": b"\xff not ours"})
        raw.close()
        messages.send(_answer("t2", 0))
        handled = []
        for _ in range(5):
            for received in messages.receive(10, wait=1.0):
                handled.append(received.thread_id)
                assert messages.ack(received)
            if len(handled) == 2:
                break
        assert sorted(handled) == ["t1", "t2"]
        [dead] = messages.dead_letters()
        assert (dead.thread_id, dead.message, dead.body, dead.attempts) == ("", {}, "", 1)
        assert dead.error.startswith("PoisonMessage: not JSON")
