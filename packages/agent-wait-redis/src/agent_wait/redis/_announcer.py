"""RedisAnnounce: one Redis Streams entry per question, pipelined, with an optional dedupe hash."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    import redis
    import redis.asyncio
    from redis.asyncio.client import Pipeline as AsyncPipeline
    from redis.client import Pipeline
except ImportError as error:  # pragma: no cover - the distribution depends on redis
    raise ImportError("RedisAnnounce needs redis-py: pip install agent-wait-redis") from error

from agent_wait.core import (
    BaseAnnounce,
    DeliveryFailed,
    DeliveryOutcome,
    LifecycleEvent,
    Receipt,
    WaitEnvelope,
)
from agent_wait.core.transport import ClientPair, transport_headers
from agent_wait.redis._options import (
    DEFAULT_INDEX_PREFIX,
    DEFAULT_STREAM,
    DEFAULT_URL,
    RedisOptions,
)

# Check-and-add must be one atomic step, or two concurrent republishes could both XADD; only a
# script can make XADD conditional. KEYS[1] = stream, KEYS[2] = the question's hash.
# ARGV[1] = MAXLEN or "", ARGV[2] = hash TTL in ms or "", ARGV[3..] = the entry's field/value pairs.
# Returns the new entry id, or false when the hash already existed (a republish).
_ADD_ONCE = """
if redis.call('EXISTS', KEYS[2]) == 1 then
  return false
end
local fields = {}
for i = 3, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local id
if ARGV[1] == '' then
  id = redis.call('XADD', KEYS[1], '*', unpack(fields))
else
  id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(fields))
end
redis.call('HSET', KEYS[2], 'status', 'open', 'stream_id', id, unpack(fields))
if ARGV[2] ~= '' then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return id
"""

# A lifecycle event updates the question's hash, never creates one: KEYS[1] = the hash,
# ARGV[1] = its new status. Returns 1 when the hash existed.
_SET_STATUS = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
return 1
"""
# A refused answer leaves its question waiting for another.
_STATUS = {"wait.answered": "answered", "wait.expired": "expired", "wait.answer_refused": "open"}


class RedisAnnounce(BaseAnnounce):
    """Adds one entry per question to a Redis stream (``XADD``), several envelopes per round trip.

    The entry's fields are ``envelope`` (the contract JSON), ``dedupe_key``, ``type``,
    ``thread_id``, ``question_id`` and one ``tag:<name>`` field per tag. Consumers read the
    stream with a consumer group (``XREADGROUP``) and deduplicate on ``dedupe_key``.

    With ``index=True`` a hash ``<index_prefix><dedupe_key>`` (the same fields plus
    ``status = "open"`` and ``stream_id``) is written together with the entry, only if it does not
    exist yet, in one atomic script. A republish of a question whose hash exists then writes
    nothing (no second entry, the hash is not overwritten) and counts as delivered.

    Opted in to lifecycle events (``with_lifecycle_events``), it adds each as an entry of the
    same stream (fields ``event``, the event's JSON, ``dedupe_key``, ``type``, ``thread_id``,
    ``question_id``); with ``index`` it also sets the question's hash ``status`` to
    ``answered`` or ``expired`` when the hash exists.

    Args:
        url: ``redis://``, ``rediss://`` or ``unix://`` URL (may carry credentials and the db).
        stream: The stream key.
        maxlen: Trim the stream to about this many entries on every add (``MAXLEN ~``); None
            keeps every entry.
        index: Write the per-question hash and skip republishes of questions it already holds.
        index_prefix: Key prefix of the per-question hashes.
        index_ttl: Seconds the hash lives (``PEXPIRE``); after that a republish adds a new entry.
            None keeps it until a consumer deletes it.
        timeout: Seconds to wait to connect and for each reply.

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "redis"
    options_model = RedisOptions

    def __init__(
        self,
        url: str = DEFAULT_URL,
        stream: str = DEFAULT_STREAM,
        maxlen: int | None = None,
        index: bool = False,
        index_prefix: str = DEFAULT_INDEX_PREFIX,
        index_ttl: float | None = None,
        timeout: float = 5.0,
    ) -> None:
        options = RedisOptions.parse(
            self.name,
            {
                "url": url,
                "stream": stream,
                "maxlen": maxlen,
                "index": index,
                "index_prefix": index_prefix,
                "index_ttl": index_ttl,
                "timeout": timeout,
            },
        )
        self.url = options.url
        self.stream = options.stream
        self.maxlen = options.maxlen
        self.index = options.index
        self.index_prefix = options.index_prefix
        self.index_ttl = options.index_ttl
        self.timeout = options.timeout
        # Built on first use and reused (redis-py pools and re-opens connections itself); an
        # asyncio client per running event loop.
        self._clients = ClientPair[redis.Redis, redis.asyncio.Redis](self._build, self._abuild)

    def _fields(self, envelope: WaitEnvelope) -> dict[str, str]:
        fields = {
            "envelope": envelope.to_json().decode("utf-8"),
            "dedupe_key": envelope.dedupe_key,
            "type": envelope.type,
            "thread_id": envelope.thread_id,
            "question_id": envelope.question_id,
        }
        fields.update({f"tag:{name}": value for name, value in envelope.tags.items()})
        # Plugins' headers (a trace context) as fields of their own, never replacing ours.
        for name, value in transport_headers(envelope).items():
            fields.setdefault(name, value)
        return fields

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Add every envelope in one pipeline; one outcome per envelope, in order.

        Each outcome is the receipt with the stream entry id, None for a republish skipped
        because ``index`` holds it, or :class:`~agent_wait.core.DeliveryFailed`: the server is
        unreachable (retryable) or refused the command. ``deliver`` is a batch of one.
        """
        if not envelopes:
            return []
        replies = self._pipelined([self._command(envelope) for envelope in envelopes])
        if isinstance(replies, DeliveryFailed):
            return [replies] * len(envelopes)
        return _outcomes(replies)

    def _pipelined(self, commands: Sequence[list[str]]) -> list[Any] | DeliveryFailed:
        """Each command's reply (or its error), in one round trip; the failure of the trip."""
        pipe: Pipeline = self._clients.sync().pipeline(transaction=False)  # pyright: ignore[reportUnknownMemberType]
        try:
            for command in commands:
                pipe.execute_command(*command)  # pyright: ignore[reportUnknownMemberType]
            return pipe.execute(raise_on_error=False)
        except redis.RedisError as error:
            return _failed(error)
        finally:
            pipe.reset()

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Async :meth:`deliver_many`."""
        if not envelopes:
            return []
        try:
            client = await self._clients.async_client()
        except redis.RedisError as error:
            return [_failed(error)] * len(envelopes)
        assert client is not None  # built here, never None
        pipe: AsyncPipeline = client.pipeline(transaction=False)  # pyright: ignore[reportUnknownMemberType]
        try:
            for envelope in envelopes:
                pipe.execute_command(*self._command(envelope))  # pyright: ignore[reportUnknownMemberType]
            replies = await pipe.execute(raise_on_error=False)
        except redis.RedisError as error:
            return [_failed(error)] * len(envelopes)
        finally:
            await pipe.reset()
        return _outcomes(replies)

    def deliver_event(self, event: LifecycleEvent) -> Receipt:
        """Add the event to the stream (and, with ``index``, set its question's status).

        Raises:
            DeliveryFailed: The server is unreachable (retryable) or refused the command.
        """
        fields = {
            "event": event.to_json().decode("utf-8"),
            "dedupe_key": event.dedupe_key,
            "type": event.type,
            "thread_id": event.thread_id,
            "question_id": event.question_id,
        }
        for name, value in transport_headers(event).items():
            fields.setdefault(name, value)
        pairs = [item for pair in fields.items() for item in pair]
        trim = [] if self.maxlen is None else ["MAXLEN", "~", str(self.maxlen)]
        commands = [["XADD", self.stream, *trim, "*", *pairs]]
        if self.index and event.type in _STATUS:  # a follow-up leaves the question open
            key = self.index_prefix + event.question_dedupe_key
            commands.append(["EVAL", _SET_STATUS, "1", key, _STATUS[event.type]])
        replies = self._pipelined(commands)
        if isinstance(replies, DeliveryFailed):
            raise replies
        for reply in replies:
            if isinstance(reply, Exception):
                raise _failed(reply)
        entry_id = replies[0]
        return Receipt(
            entry_id.decode("ascii") if isinstance(entry_id, bytes) else str(entry_id), 1
        )

    def _command(self, envelope: WaitEnvelope) -> list[str]:
        # One Redis command per envelope, the same for the sync and the asyncio pipeline.
        fields: list[str] = []
        for name, value in self._fields(envelope).items():
            fields += (name, value)
        if not self.index:
            trim = [] if self.maxlen is None else ["MAXLEN", "~", str(self.maxlen)]
            return ["XADD", self.stream, *trim, "*", *fields]
        maxlen = "" if self.maxlen is None else str(self.maxlen)
        ttl = "" if self.index_ttl is None else str(max(1, round(self.index_ttl * 1000)))
        key = self.index_prefix + envelope.dedupe_key
        return ["EVAL", _ADD_ONCE, "2", self.stream, key, maxlen, ttl, *fields]

    def _build(self) -> redis.Redis:
        return redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            self.url, socket_timeout=self.timeout, socket_connect_timeout=self.timeout
        )

    def _abuild(self) -> redis.asyncio.Redis:
        return redis.asyncio.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            self.url, socket_timeout=self.timeout, socket_connect_timeout=self.timeout
        )

    @property
    def destination(self) -> str:
        """The stream's key."""
        return self.stream

    def check_connection(self) -> bool:
        """``PING`` the server (``agent-wait config check --connect``)."""
        self._clients.sync().ping()  # pyright: ignore[reportUnknownMemberType]
        return True

    def close(self) -> None:
        """Close the sync client's connections (a later delivery reconnects)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the asyncio client of the running loop, then the sync client."""
        await self._clients.aclose()


def _outcomes(replies: list[Any]) -> list[DeliveryOutcome]:
    # A reply is an entry id, None for a skipped republish, or the command's own error.
    return [_outcome(reply) for reply in replies]


def _outcome(reply: object) -> DeliveryOutcome:
    if isinstance(reply, Exception):
        return _failed(reply)
    if isinstance(reply, bytes):
        return Receipt(reply.decode("ascii"), 1)
    return None if reply is None else Receipt(str(reply), 1)


def _failed(error: Exception) -> DeliveryFailed:
    # Connection errors and timeouts (loading and busy servers included) may pass later; a
    # command the server refused (a wrong type, a script error, OOM) will not by itself.
    retryable = isinstance(error, redis.ConnectionError | redis.TimeoutError)
    failed = DeliveryFailed(
        f"Redis: {type(error).__name__}: {error}",
        retryable=retryable,
        code=type(error).__name__,
        attempts=1,
    )
    failed.__cause__ = error
    return failed
