"""The ``redis`` entry point: a stream read with a consumer group, one message per thread in it."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, cast

import redis
from agent_wait.core import (
    DeadLetter,
    EntryPoint,
    Received,
    format_utc,
    log_safe,
    parse_message,
)
from agent_wait.core.options import redact
from agent_wait.core.transport import (
    Poison,
    check_body_size,
    connection_errors,
    dead_letter,
    read_message,
    transport_headers,
)
from agent_wait.redis._options import (
    DEFAULT_GROUP,
    DEFAULT_MESSAGES_STREAM,
    DEFAULT_URL,
    RedisEntryOptions,
)
from redis.commands.core import Script

logger = logging.getLogger("agent_wait.redis.entry")

_ENTRY_ID = re.compile(r"^\d+-\d+$")
# What may pass by itself: the server unreachable, a dropped connection, a reply too slow (the
# next command takes a fresh connection from the pool).
_CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError)
_OWN_FIELDS = frozenset({"thread", "body"})

# Every step that reads and changes the queue is one script, so concurrent hosts never see it
# half-changed. KEYS[1] = the stream; derived keys (``<stream>:threads`` and so on) are built
# inside, so a cluster needs them in one slot: a stream name with a hash tag.
# The stream holds at most one message per thread; the others wait, in order, in the thread's
# backlog list until it leaves the stream (acknowledged or dead-lettered).
_COMMON = """
local S = KEYS[1]
local G = ARGV[1]
local function fields(flat)
  local f = {}
  for i = 1, #flat, 2 do f[flat[i]] = flat[i + 1] end
  return f
end
-- extra: the plugins' headers (a trace context), name and value pairs, as fields of the entry.
local function add(thread, body, extra)
  redis.call('XADD', S, '*', 'thread', thread, 'body', body, unpack(extra))
end
local function enqueue(thread, body, extra)
  if redis.call('HINCRBY', S .. ':threads', thread, 1) == 1 then
    add(thread, body, extra)
  elseif #extra == 0 and string.sub(body, 1, 1) ~= '[' then
    redis.call('RPUSH', S .. ':backlog:' .. thread, body)
  else
    -- A JSON array in the backlog is a body with its headers (a body that is itself an
    -- array, poison another program sent, is wrapped too).
    redis.call('RPUSH', S .. ':backlog:' .. thread, cjson.encode({body, unpack(extra)}))
  end
end
local function settle(id, thread)
  redis.call('XACK', S, G, id)
  redis.call('XDEL', S, id)
  redis.call('HDEL', S .. ':errors', id)
  redis.call('SREM', S .. ':released', id)
  if redis.call('HINCRBY', S .. ':threads', thread, -1) <= 0 then
    redis.call('HDEL', S .. ':threads', thread)
    return
  end
  local item = redis.call('LPOP', S .. ':backlog:' .. thread)
  if not item then return end
  if string.sub(item, 1, 1) == '[' then
    local extra = cjson.decode(item)
    local body = table.remove(extra, 1)
    add(thread, body, extra)
  else
    add(thread, item, {})
  end
end
-- An entry another program added may lack a field: empty, so the receiver dead-letters it.
local function entry_fields(flat)
  local f = fields(flat)
  f['thread'] = f['thread'] or ''
  f['body'] = f['body'] or ''
  return f
end
local function bury(id, thread, attempts, err, now)
  local entry = redis.call('XRANGE', S, id, id)
  local body = entry_fields(entry[1][2])['body']
  redis.call('XADD', S .. ':dead', '*', 'id', id, 'thread', thread, 'body', body,
    'attempts', attempts, 'error', err, 'dead_at', now)
  settle(id, thread)
end
local function mine(id, consumer, deliveries)
  local p = redis.call('XPENDING', S, G, id, id, 1)
  if #p == 0 or p[1][2] ~= consumer or p[1][4] ~= tonumber(deliveries) then return false end
  return redis.call('SISMEMBER', S .. ':released', id) == 0
end
"""

# ARGV: group, thread, body, then the headers' names and values.
_SEND = (
    _COMMON
    + """
local extra = {}
for i = 4, #ARGV do extra[#extra + 1] = ARGV[i] end
enqueue(ARGV[2], ARGV[3], extra)
return 1
"""
)

# ARGV: group, consumer, lease ms, count, max attempts, now, never-acknowledged reason.
# Returns {handed out: {id, thread, body, deliveries}..., dead-lettered: {id, thread, attempts,
# error}...}.
_RECEIVE = (
    _COMMON
    + """
local consumer, lease, count, max = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local out, buried = {}, {}
-- XAUTOCLAIM inspects at most COUNT x 10 pending entries per call: follow its cursor through
-- the whole pending list (at most one entry per thread) until enough are taken over.
local cursor = '0-0'
repeat
  local claimed = redis.call('XAUTOCLAIM', S, G, consumer, lease, cursor, 'COUNT', count - #out)
  cursor = claimed[1]
  for _, e in ipairs(claimed[2]) do
    local id, f = e[1], entry_fields(e[2])
    local d = redis.call('XPENDING', S, G, id, id, 1)[1][4]
    if d > max then
      local err = redis.call('HGET', S .. ':errors', id)
      if not err then err = 'never acknowledged in ' .. (d - 1) .. ARGV[7] end
      bury(id, f['thread'], d - 1, err, ARGV[6])
      buried[#buried + 1] = {id, f['thread'], d - 1, err}
    else
      redis.call('SREM', S .. ':released', id)
      out[#out + 1] = {id, f['thread'], f['body'], d}
    end
  end
until cursor == '0-0' or #out >= count
if #out < count then
  local fresh = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', count - #out,
    'STREAMS', S, '>')
  if fresh then
    for _, e in ipairs(fresh[1][2]) do
      local f = entry_fields(e[2])
      out[#out + 1] = {e[1], f['thread'], f['body'], 1}
    end
  end
end
return {out, buried}
"""
)

# ARGV: group, id, consumer, deliveries, thread.
_ACK = (
    _COMMON
    + """
if not mine(ARGV[2], ARGV[3], ARGV[4]) then return 0 end
settle(ARGV[2], ARGV[5])
return 1
"""
)

# ARGV: group, id, consumer, deliveries. Re-claiming resets the entry's idle time (JUSTID: the
# delivery count stays).
_EXTEND = (
    _COMMON
    + """
if not mine(ARGV[2], ARGV[3], ARGV[4]) then return 0 end
redis.call('XCLAIM', S, G, ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
"""
)

# ARGV: group, id, consumer, deliveries, thread, error, "1" to dead-letter, idle ms, now.
# Returns 0 (lease ran out), 1 (released for a retry) or 2 (dead-lettered). A retry sets the
# entry's idle time so that it reaches the lease (and XAUTOCLAIM hands it out) after the delay.
_FAIL = (
    _COMMON
    + """
local id = ARGV[2]
if not mine(id, ARGV[3], ARGV[4]) then return 0 end
if ARGV[7] == '1' then
  bury(id, ARGV[5], ARGV[4], ARGV[6], ARGV[9])
  return 2
end
redis.call('HSET', S .. ':errors', id, ARGV[6])
redis.call('SADD', S .. ':released', id)
redis.call('XCLAIM', S, G, ARGV[3], 0, id, 'IDLE', ARGV[8], 'JUSTID')
return 1
"""
)

# ARGV: group, id, consumer, deliveries, lease ms. Idle for a whole lease: the next XAUTOCLAIM
# takes it over at once (counting a delivery); it is still its thread's only entry in the stream.
_RELEASE = (
    _COMMON
    + """
local id = ARGV[2]
if not mine(id, ARGV[3], ARGV[4]) then return 0 end
redis.call('SADD', S .. ':released', id)
redis.call('XCLAIM', S, G, ARGV[3], 0, id, 'IDLE', ARGV[5], 'JUSTID')
return 1
"""
)

# ARGV: group, dead-letter entry id.
_REDRIVE = (
    _COMMON
    + """
local entry = redis.call('XRANGE', S .. ':dead', ARGV[2], ARGV[2])
if #entry == 0 then return 0 end
local f = fields(entry[1][2])
redis.call('XDEL', S .. ':dead', ARGV[2])
enqueue(f['thread'], f['body'], {})
return 1
"""
)


class RedisEntry(EntryPoint):
    """Messages in a Redis stream read by a consumer group, one message of each thread at a time.

    ``send`` adds the message to the stream when its thread has none in it, or else appends it
    to the thread's backlog list (``<stream>:backlog:<thread>``); when a thread's message leaves
    the stream (acknowledged or dead-lettered) the next one of its backlog is added. So the
    stream never holds two messages of a thread, and any number of hosts reading it with
    ``XREADGROUP`` handle a thread's messages one at a time, in send order.

    A received entry is pending in the group for this host's consumer. ``ack`` is ``XACK`` (and
    ``XDEL``); ``extend`` re-claims it, resetting its idle time. An entry idle for
    ``visibility_timeout`` (the host died) is taken over with ``XAUTOCLAIM`` by the next
    receiver; the attempt is the entry's delivery count (``XPENDING``). ``fail`` sets the idle
    time so that the entry is reclaimed after an exponential backoff (``retry_delay`` doubled
    per attempt, at most ``visibility_timeout``); ``release`` sets it to a whole lease, so the
    next receiver takes the entry over at once (another delivery, so another attempt). After ``max_attempts`` deliveries the entry
    moves to the dead-letter stream ``<stream>:dead`` (with its attempts, last error and time),
    logged at ERROR.

    Args:
        url: ``redis://``, ``rediss://`` or ``unix://`` URL (may carry credentials and the db).
        stream: The stream key; the other keys are named after it.
        group: The consumer group every host reads with.
        consumer: This host's consumer name (default: host name, process id and a random part).
        visibility_timeout: Seconds a received message stays leased.
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again (doubled per attempt).
        poll_interval: Seconds a waiting receiver blocks before looking for lapsed leases.
        timeout: Seconds to wait to connect and for each reply.

    Raises:
        ConfigError: An option is invalid (the message names it; never the password).
    """

    name = "redis"
    options_model = RedisEntryOptions

    def __init__(
        self,
        url: str = DEFAULT_URL,
        stream: str = DEFAULT_MESSAGES_STREAM,
        group: str = DEFAULT_GROUP,
        consumer: str | None = None,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        poll_interval: float = 1.0,
        timeout: float = 5.0,
    ) -> None:
        options = RedisEntryOptions.parse(
            self.name,
            {
                "url": url,
                "stream": stream,
                "group": group,
                "consumer": consumer,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "poll_interval": poll_interval,
                "timeout": timeout,
            },
        )
        self.url = options.url
        self.stream = options.stream
        self.group = options.group
        self.consumer = options.consumer or (
            f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        )
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self.poll_interval = options.poll_interval
        self.timeout = options.timeout
        self._client: redis.Redis | None = None
        self._scripts: dict[str, Script] = {}

    def _redis(self) -> redis.Redis:
        if self._client is None:
            client = redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
                self.url,
                decode_responses=True,
                # Bytes that are not UTF-8 (another program's) stay readable, and go back as
                # they came in a dead letter.
                encoding_errors="surrogateescape",
                socket_connect_timeout=self.timeout,
                # A waiting receiver blocks up to poll_interval on the same connection.
                socket_timeout=self.timeout + self.poll_interval,
            )
            try:
                client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
            except redis.ResponseError as error:
                if "BUSYGROUP" not in str(error):
                    client.close()
                    raise
            self._scripts = {
                name: client.register_script(text)
                for name, text in (
                    ("send", _SEND),
                    ("receive", _RECEIVE),
                    ("ack", _ACK),
                    ("extend", _EXTEND),
                    ("fail", _FAIL),
                    ("release", _RELEASE),
                    ("redrive", _REDRIVE),
                )
            }
            self._client = client
        return self._client

    def _reachable(self) -> AbstractContextManager[None]:
        return connection_errors(_CONNECTION_ERRORS, f"Redis at {redact(self.url)}")

    def _run(self, script: str, *args: str | int) -> Any:
        with self._reachable():
            self._redis()
            return self._scripts[script](keys=[self.stream], args=[self.group, *args])

    def send(self, message: Mapping[str, Any]) -> None:
        """Add the message to the stream, or to its thread's backlog if the thread has one there.

        The plugins' headers (a trace context) are fields of the entry beside ``thread`` and
        ``body`` (which they never replace), kept with the message while it waits in the backlog.
        """
        headers = transport_headers(parse_message(message))
        body = check_body_size(json.dumps(dict(message), ensure_ascii=False, separators=(",", ":")))
        extra = [
            item
            for name, value in headers.items()
            if name not in _OWN_FIELDS
            for item in (name, value)
        ]
        self._run("send", message["thread_id"], body, *extra)

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Take over lapsed leases, then read new entries, waiting up to ``wait`` seconds."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            received = self._claim(max_messages)
            remaining = deadline - time.monotonic()
            if received or remaining <= 0:
                return received
            # Block for a new entry; lapsed leases are looked for again after poll_interval.
            block = max(1, int(min(self.poll_interval, remaining) * 1000))
            with self._reachable():
                fresh = self._redis().xreadgroup(
                    self.group, self.consumer, {self.stream: ">"}, count=max_messages, block=block
                )
            entries = cast("list[tuple[str, list[tuple[str, dict[str, str]]]]]", fresh or [])
            if entries and entries[0][1]:
                received = self._read(
                    (entry_id, f.get("thread", ""), f.get("body", ""), 1)
                    for entry_id, f in entries[0][1]
                )
                if received:
                    return received

    def _claim(self, count: int) -> list[Received]:
        never = (
            f" deliveries (the host crashed or took longer than "
            f"visibility_timeout={self.visibility_timeout}s)"
        )
        out, buried = cast(
            "tuple[list[list[Any]], list[list[Any]]]",
            self._run(
                "receive",
                self.consumer,
                int(self.visibility_timeout * 1000),
                count,
                self.max_attempts,
                format_utc(datetime.now(UTC)),
                never,
            ),
        )
        for entry_id, thread, attempts, error in buried:
            self._log_dead(entry_id, thread, int(attempts), error)
        return self._read(
            (entry_id, thread, body, int(deliveries)) for entry_id, thread, body, deliveries in out
        )

    def _read(self, entries: Iterable[tuple[str, str, str, int]]) -> list[Received]:
        """The entries as received messages; poison is dead-lettered at once instead."""
        received: list[Received] = []
        for entry_id, thread, body, deliveries in entries:
            message = read_message(body)
            # The receipt names the consumer and the delivery count the lease was given with:
            # a takeover by XAUTOCLAIM changes one of them.
            lease = Received(
                entry_id,
                thread,
                message if isinstance(message, dict) else {},
                deliveries,
                f"{self.consumer}/{deliveries}",
            )
            if isinstance(message, Poison):
                self.fail(lease, message.error, retry=False)
            else:
                received.append(lease)
        return received

    def _log_dead(self, entry_id: str, thread: str, attempts: int, error: str) -> None:
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in stream %s",
            entry_id,
            thread,
            attempts,
            error.partition(":")[0],
            f"{self.stream}:dead",
        )

    def _lost(self, received: Received) -> bool:
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            log_safe(received.id),
            log_safe(received.thread_id),
        )
        return False

    def ack(self, received: Received) -> bool:
        """``XACK`` and delete the entry; False if its lease had run out."""
        consumer, deliveries = _lease(received)
        if self._run("ack", received.id, consumer, deliveries, received.thread_id) == 1:
            return True
        return self._lost(received)

    def extend(self, received: Received) -> bool:
        """Reset the entry's idle time: leased for another ``visibility_timeout`` seconds."""
        consumer, deliveries = _lease(received)
        if self._run("extend", received.id, consumer, deliveries) == 1:
            return True
        return self._lost(received)

    def release(self, received: Received) -> bool:
        """Lapse the lease now: the next receive takes the entry over; False if it had run out."""
        consumer, deliveries = _lease(received)
        lease = int(self.visibility_timeout * 1000)
        if self._run("release", received.id, consumer, deliveries, lease) == 1:
            return True
        return self._lost(received)

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after a backoff, or dead-letter it."""
        consumer, deliveries = _lease(received)
        bury = not retry or received.attempt >= self.max_attempts
        delay = min(self.retry_delay * 2 ** (received.attempt - 1), self.visibility_timeout)
        outcome = self._run(
            "fail",
            received.id,
            consumer,
            deliveries,
            received.thread_id,
            error,
            "1" if bury else "0",
            int((self.visibility_timeout - delay) * 1000),
            format_utc(datetime.now(UTC)),
        )
        if outcome == 0:
            return self._lost(received)
        if outcome == 2:
            self._log_dead(received.id, received.thread_id, received.attempt, error)
        return outcome == 2

    def oldest_waiting(self) -> float | None:
        """Seconds since the stream's oldest entry was added, by the server's clock, or None.

        Every message neither acknowledged nor dead-lettered is the stream's entry of its
        thread or waits behind it in the thread's backlog, so the oldest entry is the oldest
        message waiting, its entry id the time it was added: when it was sent, or, for a
        message that waited in a backlog, when the one before it was settled (its age then
        counts from that moment).
        """
        with self._reachable():
            client = self._redis()
            first = cast("list[tuple[str, Any]]", client.xrange(self.stream, count=1))
            if not first:
                return None
            seconds, micros = client.time()  # pyright: ignore[reportUnknownMemberType]
        added_ms = int(first[0][0].partition("-")[0])
        return max(0.0, seconds + micros / 1e6 - added_ms / 1000)

    def dead_letters(self) -> list[DeadLetter]:
        """Every entry of the dead-letter stream, oldest first (ids are that stream's)."""
        with self._reachable():
            entries = cast(
                "list[tuple[str, dict[str, str]]]", self._redis().xrange(f"{self.stream}:dead")
            )
        return [
            dead_letter(
                entry_id,
                f.get("thread", ""),
                f.get("body", ""),
                int(f["attempts"]),
                f["error"],
                f["dead_at"],
            )
            for entry_id, f in entries
        ]

    def redrive(self, message_id: str) -> bool:
        """Send a dead letter again as a new message (at the end of its thread's queue).

        A poison message comes back as it was and is dead-lettered again at its next receive,
        unless this host can read it now.
        """
        if not isinstance(message_id, str) or not _ENTRY_ID.match(message_id):  # pyright: ignore[reportUnnecessaryIsInstance]
            return False
        return self._run("redrive", message_id) == 1

    def describe(self) -> dict[str, Any]:
        """``url`` (refused with a password in it) and ``stream``."""
        return {"url": self.url, "stream": self.stream}

    def close(self) -> None:
        """Close the connection pool (a later call reopens it)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __repr__(self) -> str:
        return (
            f"<RedisEntry {self.name!r} url={redact(self.url)!r} stream={self.stream!r} "
            f"consumer={self.consumer!r}>"
        )


def _lease(received: Received) -> tuple[str, int]:
    consumer, _, deliveries = received.receipt.rpartition("/")
    return consumer, int(deliveries)
