"""The transport building blocks of agent_wait.core.transport."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from agent_wait.core import ConfigError, Question, WaitPolicy, build_envelope
from agent_wait.core.transport import (
    AttributeRules,
    ClientAnnounce,
    ClientPair,
    chunk,
    fit_identifier,
    utf8_size,
)


def test_utf8_size_counts_bytes_not_characters() -> None:
    assert utf8_size("abc") == 3
    assert utf8_size("é" * 10) == 20
    assert utf8_size("a", "€", "😀") == 1 + 3 + 4
    assert utf8_size() == 0


def test_chunk_respects_count_and_bytes_in_order() -> None:
    sizes = [4, 4, 4, 9, 1, 1, 1, 1]
    batches = chunk(sizes, max_count=3, max_bytes=10, size=lambda s: s)
    assert batches == [[4, 4], [4], [9, 1], [1, 1, 1]]
    assert [x for b in batches for x in b] == sizes
    assert chunk([1] * 25, max_count=10, max_bytes=1000, size=lambda s: s) == [
        [1] * 10,
        [1] * 10,
        [1] * 5,
    ]
    assert chunk([], max_count=10, max_bytes=10, size=lambda s: s) == []


def test_chunk_refuses_an_item_over_the_budget() -> None:
    with pytest.raises(ValueError, match="11 bytes exceeds the 10-byte"):
        chunk([11], max_count=10, max_bytes=10, size=lambda s: s)


def test_fit_identifier_keeps_valid_ids_and_hashes_the_rest() -> None:
    assert fit_identifier("wait.created:a1b2") == "wait.created:a1b2"
    long = "x" * 129
    assert fit_identifier(long) == hashlib.sha256(long.encode()).hexdigest()
    assert fit_identifier("order 4471") == hashlib.sha256(b"order 4471").hexdigest()
    assert fit_identifier("cliente-ñ") != fit_identifier("cliente-n")
    assert len(fit_identifier("é", max_length=10)) == 10


def _envelope(tags: dict[str, str]):
    policy = WaitPolicy(tags=tags)
    return build_envelope(Question(question_id="q1", question={}, policy=policy), "t-1")


def test_attribute_rules_order_and_drop_tags_one_by_one() -> None:
    rules = AttributeRules(
        max_count=4,
        name_error=lambda name: "no upper case" if name != name.lower() else None,
        service="test header",
    )
    chosen = rules.select(_envelope({"b": "2", "a": "1", "Up": "x", "empty": "", "c": "3"}), {})
    assert list(chosen.values) == ["type", "thread_id", "a", "b"]
    assert chosen.dropped == {
        "Up": "invalid name: no upper case",
        "c": "over the 4-attribute limit",
        "empty": "empty value",
    }
    assert rules.fixed("x", None) == {}
    with pytest.raises(ConfigError, match="'Up' is not a valid test header name: no upper case"):
        rules.fixed("headers", {"Up": "x"})


class _Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False

    def close(self) -> None:
        self.closed = True


class _AsyncClient:
    def __init__(self) -> None:
        self.open = True


def _pair(opened: list[_AsyncClient]) -> ClientPair[_Client, _AsyncClient]:
    @asynccontextmanager
    async def open_async() -> AsyncIterator[_AsyncClient]:
        client = _AsyncClient()
        opened.append(client)
        try:
            yield client
        finally:
            client.open = False

    return ClientPair(lambda: _Client("built"), open_async)


async def test_client_pair_opens_one_async_client_per_loop_and_closes_it() -> None:
    opened: list[_AsyncClient] = []
    pair = _pair(opened)
    clients = await asyncio.gather(*(pair.async_client() for _ in range(5)))
    assert len(opened) == 1
    assert all(c is opened[0] for c in clients)
    sync = pair.sync()
    assert pair.sync() is sync
    await pair.aclose()
    assert not opened[0].open
    assert sync.closed
    again = await pair.async_client()
    assert again is not opened[0]
    assert again is opened[1]
    await pair.aclose()


def test_client_pair_reopens_on_a_new_event_loop() -> None:
    opened: list[_AsyncClient] = []
    pair = _pair(opened)
    first = asyncio.run(pair.async_client())
    second = asyncio.run(pair.async_client())
    assert first is not second
    assert len(opened) == 2


async def test_client_pair_never_closes_injected_clients() -> None:
    sync, aio = _Client("injected"), _AsyncClient()
    pair: ClientPair[_Client, _AsyncClient] = ClientPair(
        lambda: _Client("built"), None, sync_client=sync, async_client=aio
    )
    assert pair.sync() is sync
    assert await pair.async_client() is aio
    await pair.aclose()
    assert not sync.closed
    assert aio.open


async def test_client_pair_without_async_opener_runs_sync() -> None:
    pair: ClientPair[_Client, _AsyncClient] = ClientPair(lambda: _Client("built"), None)
    assert await pair.async_client() is None


async def test_client_pair_retries_an_async_client_that_failed_to_open() -> None:
    attempts: list[int] = []

    @asynccontextmanager
    async def flaky() -> AsyncIterator[_AsyncClient]:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("no route")
        yield _AsyncClient()

    pair: ClientPair[_Client, _AsyncClient] = ClientPair(lambda: _Client("built"), flaky)
    with pytest.raises(OSError, match="no route"):
        await pair.async_client()
    assert isinstance(await pair.async_client(), _AsyncClient)
    await pair.aclose()


class _Recorder:
    """A tiny in-process 'SDK client': records calls, fails the ones it is told to."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.fail = fail or set()
        self.closed = False

    def put(self, **kwargs: object) -> dict[str, object]:
        self.calls.append(("put", kwargs))
        if kwargs["key"] in self.fail:
            raise ConnectionError(f"refused {kwargs['key']}")
        return {"ok": kwargs["key"]}

    def close(self) -> None:
        self.closed = True


class _AsyncRecorder:
    def __init__(self, sync: _Recorder) -> None:
        self.sync = sync

    async def put(self, **kwargs: object) -> dict[str, object]:
        return self.sync.put(**kwargs)


class _KeyAnnounce(ClientAnnounce):
    """Rejects questions named 'bad' before sending, sends the rest one call each."""

    def __init__(self, client: _Recorder, async_client: _AsyncRecorder | None = None) -> None:
        self.clients = ClientPair(
            lambda: client, None, sync_client=client, async_client=async_client
        )

    def plan(self, envelopes, outcomes):
        exchanges = []
        for index, envelope in enumerate(envelopes):
            if envelope.question_id == "bad":
                outcomes[index] = ValueError("rejected before sending")
            elif envelope.question_id == "broken":
                exchanges.append(self._broken())
            else:
                exchanges.append(self._send(index, envelope, outcomes))
        return exchanges

    @staticmethod
    def _send(index, envelope, outcomes):
        result = yield "put", {"key": envelope.question_id}
        outcomes[index] = result if isinstance(result, BaseException) else None

    @staticmethod
    def _broken():
        yield "put", {"key": "broken"}
        raise KeyError("bug in the exchange")


def _envelopes(*ids: str):
    return [build_envelope(Question(question_id=q, question={}), "t-1") for q in ids]


def test_client_announce_runs_the_plan_and_contains_each_failure() -> None:
    client = _Recorder(fail={"down"})
    outcomes = _KeyAnnounce(client).deliver_many(_envelopes("a", "bad", "down", "broken", "b"))
    assert outcomes[0] is None
    assert isinstance(outcomes[1], ValueError)
    assert isinstance(outcomes[2], ConnectionError)
    assert isinstance(outcomes[3], KeyError)
    assert outcomes[4] is None
    assert [c[1]["key"] for c in client.calls] == ["a", "down", "broken", "b"]


async def test_client_announce_async_plan_matches_sync() -> None:
    client = _Recorder(fail={"down"})
    announce = _KeyAnnounce(client, _AsyncRecorder(client))
    outcomes = await announce.adeliver_many(_envelopes("a", "bad", "down", "b"))
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType",
        "ValueError",
        "ConnectionError",
        "NoneType",
    ]
    with pytest.raises(ConnectionError):
        await announce.adeliver(_envelopes("down")[0])
    await announce.adeliver(_envelopes("c")[0])
    assert client.calls[-1] == ("put", {"key": "c"})


async def test_client_announce_runs_an_injected_sync_client_in_a_thread() -> None:
    client = _Recorder()
    outcomes = await _KeyAnnounce(client).adeliver_many(_envelopes("a", "b"))
    assert outcomes == [None, None]
    assert len(client.calls) == 2
    with pytest.raises(ValueError, match="rejected"):
        _KeyAnnounce(client).deliver(_envelopes("bad")[0])


async def test_client_pair_with_only_an_injected_sync_client_runs_it_in_a_thread() -> None:
    opened: list[int] = []

    @asynccontextmanager
    async def open_async() -> AsyncIterator[_AsyncClient]:
        opened.append(1)
        yield _AsyncClient()

    sync = _Client("injected")
    pair = ClientPair(lambda: _Client("built"), open_async, sync_client=sync)
    assert await pair.async_client() is None
    assert opened == []
    assert pair.sync() is sync
