"""``WebhookAnnounce``: POST each envelope, signed the Standard Webhooks way, with bounded retries."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
import time
from collections.abc import Collection, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

try:
    import httpx
except ImportError as error:  # a broken install: say which distribution brings httpx
    raise ImportError(
        f"agent-wait-webhook needs httpx ({error}); reinstall it: pip install agent-wait-webhook"
    ) from error

from agent_wait.core import BaseAnnounce, DeliveryOutcome, LifecycleEvent, Receipt, WaitEnvelope
from agent_wait.core.transport import ClientPair, transport_headers
from agent_wait.webhook._deadline import bounded, deadline_client
from agent_wait.webhook._errors import WebhookDeliveryError
from agent_wait.webhook._options import DEDUPE_HEADER, EVENT_HEADER, WebhookOptions
from agent_wait.webhook._signing import (
    Secret,
)

logger = logging.getLogger(__name__)

_MAX_BACKOFF = 10.0
# Below this, another attempt cannot complete anyway; report instead of trying.
_MIN_ATTEMPT = 0.05
# A short success/error body is drained so the connection can be reused; a longer one is dropped.
_DRAIN_LIMIT = 64 * 1024


_Message = WaitEnvelope | LifecycleEvent
"""What is POSTed: a question, or a lifecycle event to a receiver that opted in."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """What delivery needs from a response (never the body: it may echo the question)."""

    status: int
    reason: str
    location: str | None
    retry_after: str | None

    @classmethod
    def of(cls, response: httpx.Response) -> _Reply:
        return cls(
            response.status_code,
            response.reason_phrase,
            response.headers.get("location"),
            response.headers.get("retry-after"),
        )


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Parse a ``Retry-After`` header: delay-seconds or an HTTP-date; None when absent or invalid."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class _Attempts:
    """The retry policy of one envelope: attempt count, total budget, backoff, verdicts."""

    def __init__(self, announcer: WebhookAnnounce, masked: Collection[str]) -> None:
        self._announcer = announcer
        self._masked = masked
        self.deadline = time.monotonic() + announcer.total_timeout
        self.count = 0
        self._last: tuple[str, int | None] = ("was not attempted", None)
        self._retryable = False

    def start(self) -> float:
        """Count an attempt and return its timeout; raise when the budget is used up."""
        remaining = self.deadline - time.monotonic()
        if self.count and remaining < _MIN_ATTEMPT:
            raise self._budget_failure()
        self.count += 1
        return max(_MIN_ATTEMPT, min(self._announcer.timeout, remaining))

    def judge(self, outcome: _Reply | Exception, timeout: float) -> float | None:
        """None when delivered; else the delay before the next attempt, or raise when final."""
        verdict = self._classify(outcome, timeout)
        if verdict is None:
            return None
        retryable, server_delay = verdict
        self._retryable = retryable
        if not retryable or self.count > self._announcer.retries:
            raise self._failure()
        remaining = self.deadline - time.monotonic()
        if server_delay is not None and server_delay > remaining - _MIN_ATTEMPT:
            reason, status = self._last
            self._last = (
                f"{reason}; Retry-After {server_delay:.0f} s is beyond the remaining "
                f"total_timeout budget",
                status,
            )
            raise self._failure()
        if remaining < 2 * _MIN_ATTEMPT:
            raise self._budget_failure()
        if server_delay is not None:
            delay = server_delay
        else:
            step = min(_MAX_BACKOFF, self._announcer.backoff * 2 ** (self.count - 1))
            # Full jitter keeps many runs from retrying in lockstep; at most half the remaining
            # budget, so the retry itself still has time.
            delay = min(random.uniform(0, step), remaining / 2)
        logger.debug(
            "webhook %s: attempt %d failed (%s); retrying in %.2f s",
            self._announcer.origin,
            self.count,
            self._last[0],
            delay,
        )
        return delay

    def _classify(
        self, outcome: _Reply | Exception, timeout: float
    ) -> tuple[bool, float | None] | None:
        """None when delivered, else (retryable, the delay the server asked for)."""
        if isinstance(outcome, _Reply):
            if 200 <= outcome.status < 300:
                return None
            text = f"answered HTTP {outcome.status} {outcome.reason}".rstrip()
            if 300 <= outcome.status < 400:
                where = repr(outcome.location) if outcome.location else "no Location"
                self._last = (f"{text}: redirect to {where} not followed", outcome.status)
                return False, None
            self._last = (text, outcome.status)
            if outcome.status == 429 or outcome.status >= 500:
                return True, retry_after_seconds(outcome.retry_after)
            return False, None
        if isinstance(outcome, httpx.TimeoutException | TimeoutError):
            self._last = (f"timed out after {timeout:.1f} s", None)
            return True, None
        # Scrubbed before it is cut short, so no prefix of a header value survives either.
        detail = _redact(str(outcome), self._masked)[:200] or "no detail"
        self._last = (f"request failed ({type(outcome).__name__}: {detail})", None)
        retryable = isinstance(
            outcome, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError
        )
        return retryable, None

    def _budget_failure(self) -> WebhookDeliveryError:
        reason, status = self._last
        budget = self._announcer.total_timeout
        self._last = (f"{reason}; total_timeout of {budget:g} s used up", status)
        return self._failure()

    def _failure(self) -> WebhookDeliveryError:
        reason, status = self._last
        return WebhookDeliveryError(
            self._announcer.origin, reason, status, self.count, self._retryable
        )


class WebhookAnnounce(BaseAnnounce):
    """POST every envelope to a URL as JSON, optionally signed (Standard Webhooks).

    The body is exactly ``envelope.to_json()``. Headers: ``Content-Type: application/json``,
    ``X-Agent-Wait-Event`` (the envelope type) and ``X-Agent-Wait-Dedupe-Key``
    (``wait.created:<thread_id>:<question_id>``); with a secret also ``webhook-id`` (the envelope's
    ``event_id``), ``webhook-timestamp`` and ``webhook-signature: v1,<base64>``, which any
    Standard Webhooks library, or :func:`agent_wait.webhook.verify`, checks. Opted in to
    lifecycle events (``with_lifecycle_events``), it POSTs each the same way: the event's JSON,
    its type in ``X-Agent-Wait-Event`` and its own ``dedupe_key``.

    Connection errors, timeouts, HTTP 5xx and 429 are retried with exponential backoff and full
    jitter (``Retry-After`` is honoured when it fits the budget); other 4xx and every 3xx
    (redirects are not followed) fail at once. ``total_timeout`` bounds all attempts of one
    envelope together. Several envelopes are sent one request each: concurrently on the async
    path (at most ``max_concurrency`` at a time), in order on the sync path.

    Args:
        url: The receiver, ``http://`` or ``https://``.
        secret: Signing secret: ``"whsec_<base64>"`` as Standard Webhooks issues them (the key is
            the decoded bytes), or any other string (its UTF-8 bytes are the key), or bytes.
        secret_env: Name of an environment variable holding the secret, read now (instead of
            ``secret``, so config files need not contain it).
        headers: Extra request headers (e.g. ``Authorization``): ASCII values without line
            breaks, control characters or surrounding whitespace. The contract headers above,
            ``User-Agent``, ``Content-Length``, ``Host`` and ``Transfer-Encoding`` cannot be
            overridden (in any letter case). Values are masked in every error.
        timeout: Bound on each network step of one attempt: seconds, a timedelta or an ISO 8601
            duration (``"PT10S"``).
        retries: Attempts after the first one (0 = no retry).
        total_timeout: Bound on all attempts of one envelope together, backoff included (same
            forms as ``timeout``).
        max_concurrency: Requests in flight at once on the async path.
        backoff: Base delay of the exponential backoff (doubling per retry, capped at 10 s,
            full jitter); 0 retries at once. Same forms as ``timeout``.

    Raises:
        ConfigError: An option is invalid or ``secret_env`` is unset; the message names the
            option and its value (never a secret, never a header value).
    """

    name = "webhook"
    options_model = WebhookOptions

    def __init__(
        self,
        url: str,
        *,
        secret: Secret | None = None,
        secret_env: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | timedelta | str = 10.0,
        retries: int = 3,
        total_timeout: float | timedelta | str = 30.0,
        max_concurrency: int = 8,
        backoff: float | timedelta | str = 0.5,
    ) -> None:
        options = WebhookOptions.parse(
            self.name,
            {
                "url": url,
                "secret": secret,
                "secret_env": secret_env,
                "headers": headers,
                "timeout": timeout,
                "retries": retries,
                "total_timeout": total_timeout,
                "max_concurrency": max_concurrency,
                "backoff": backoff,
            },
        )
        self.url = options.url
        self.origin = _origin(self.url)
        self._key = options.signing_key()
        self._headers = options.header_values()
        self.timeout = options.timeout
        self.total_timeout = options.total_timeout
        self.backoff = options.backoff
        self.retries = options.retries
        self.max_concurrency = options.max_concurrency
        # Built on first use, reused for every envelope; an async client per event loop.
        self._clients = ClientPair[httpx.Client, httpx.AsyncClient](
            lambda: deadline_client(follow_redirects=False, headers=_user_agent()),
            lambda: httpx.AsyncClient(follow_redirects=False, headers=_user_agent()),
        )

    @property
    def signed(self) -> bool:
        """True when requests carry a Standard Webhooks signature."""
        return self._key is not None

    def deliver(self, envelope: WaitEnvelope) -> Receipt:
        """POST one envelope, retrying within the budget; the receipt counts the attempts.

        Raises:
            WebhookDeliveryError: The receiver did not accept it (status code and reason).
        """
        return self._send(envelope)

    def deliver_event(self, event: LifecycleEvent) -> Receipt:
        """POST one lifecycle event as an envelope is sent: its own type and dedupe key headers.

        Raises:
            WebhookDeliveryError: The receiver did not accept it (status code and reason).
        """
        return self._send(event)

    async def adeliver_event(self, event: LifecycleEvent) -> Receipt:
        """Async :meth:`deliver_event` on the shared ``httpx.AsyncClient``."""
        return await self._asend(event)

    def _send(self, envelope: _Message) -> Receipt:
        body = envelope.to_json()
        client = self._clients.sync()
        attempts = _Attempts(self, self._headers.values())
        while True:
            timeout = attempts.start()
            outcome: _Reply | Exception
            try:
                outcome = self._post(client, envelope, body, timeout, attempts.deadline)
            except httpx.HTTPError as error:
                outcome = error
            delay = attempts.judge(outcome, timeout)
            if delay is None:
                return Receipt(attempts=attempts.count)
            time.sleep(delay)

    async def adeliver(self, envelope: WaitEnvelope) -> Receipt:
        """Async :meth:`deliver` on a shared ``httpx.AsyncClient``."""
        return await self._asend(envelope)

    async def _asend(self, envelope: _Message) -> Receipt:
        body = envelope.to_json()
        client = await self._clients.async_client()
        assert client is not None  # an async factory is given, so never the thread fallback
        attempts = _Attempts(self, self._headers.values())
        while True:
            timeout = attempts.start()
            outcome: _Reply | Exception
            try:
                outcome = await self._apost(client, envelope, body, timeout, attempts.deadline)
            except (httpx.HTTPError, TimeoutError) as error:
                outcome = error
            delay = attempts.judge(outcome, timeout)
            if delay is None:
                return Receipt(attempts=attempts.count)
            await asyncio.sleep(delay)

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """One request per envelope, concurrently (at most ``max_concurrency`` in flight)."""
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(envelope: WaitEnvelope) -> DeliveryOutcome:
            async with gate:
                try:
                    return await self.adeliver(envelope)
                except Exception as error:  # noqa: BLE001 - each envelope's failure is its own outcome
                    return error

        return list(await asyncio.gather(*(one(e) for e in envelopes)))

    def close(self) -> None:
        """Close the sync client (use :meth:`aclose` in async code). Safe to call twice."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the async client of the running loop, then the sync client."""
        await self._clients.aclose()

    @property
    def destination(self) -> str | None:
        """The receiver's host and port: never the path or query, which may hold a token."""
        parts = urlsplit(self.url)
        if parts.hostname is None:
            return None
        return parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"

    def check_connection(self) -> bool:
        """Open a TCP connection to the receiver (and a TLS handshake for ``https``), then close it.

        For ``agent-wait config check --connect``. No HTTP request is sent: a receiver may act
        on any request, and a ``HEAD`` or ``OPTIONS`` it does not expect proves little. Returns
        False (no check) when a proxy is configured for the URL, since requests go through it.

        Raises:
            OSError: The host does not resolve, the port refuses, or the TLS handshake fails.
        """
        parts = urlsplit(self.url)
        if parts.scheme in getproxies() and not proxy_bypass(parts.hostname or ""):
            return False
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""
        with socket.create_connection((host, port), timeout=self.timeout) as sock:
            if parts.scheme == "https":
                with ssl.create_default_context().wrap_socket(sock, server_hostname=host):
                    pass
        return True

    def __repr__(self) -> str:
        signed = " signed" if self.signed else ""
        return f"<{type(self).__name__} {self.name!r} {self.origin}{signed}>"

    def _request_headers(self, envelope: _Message, body: bytes) -> dict[str, str]:
        headers = {
            # Plugins' headers (a trace context) first: they never replace one of ours.
            **transport_headers(envelope),
            **self._headers,
            "Content-Type": "application/json",
            EVENT_HEADER: envelope.type,
            DEDUPE_HEADER: envelope.dedupe_key,
        }
        if self._key is not None:
            # Signed per attempt: a retry carries a fresh timestamp and the same webhook-id.
            headers.update(self._key.headers(envelope.event_id, body))
        return headers

    def _post(
        self,
        client: httpx.Client,
        envelope: _Message,
        body: bytes,
        timeout: float,
        deadline: float,
    ) -> _Reply:
        headers = self._request_headers(envelope, body)
        request = client.build_request(
            "POST", self.url, content=body, headers=headers, timeout=timeout
        )
        # As on the async path: the attempt ends after `timeout` even if every read is quick.
        with bounded(time.monotonic() + timeout):
            response = client.send(request, stream=True)
        try:
            # The status decides the outcome; a body that fails to arrive only costs the connection.
            with suppress(httpx.HTTPError), bounded(deadline):
                drained = 0
                for chunk in response.iter_raw():
                    drained += len(chunk)
                    if drained > _DRAIN_LIMIT:
                        break
        finally:
            response.close()
        return _Reply.of(response)

    async def _apost(
        self,
        client: httpx.AsyncClient,
        envelope: _Message,
        body: bytes,
        timeout: float,
        deadline: float,
    ) -> _Reply:
        headers = self._request_headers(envelope, body)
        request = client.build_request(
            "POST", self.url, content=body, headers=headers, timeout=timeout
        )
        # A hard cap as well: httpx timeouts bound each network step, not the whole exchange.
        async with asyncio.timeout(timeout):
            response = await client.send(request, stream=True)
        try:
            # The status decides the outcome; a body that fails to arrive only costs the connection.
            with suppress(httpx.HTTPError, TimeoutError):
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    drained = 0
                    async for chunk in response.aiter_raw():
                        drained += len(chunk)
                        if drained > _DRAIN_LIMIT:
                            break
        finally:
            await response.aclose()
        return _Reply.of(response)


def _redact(text: str, values: Collection[str]) -> str:
    """``text`` with every header value (as given or as a Python literal) masked as ``***``.

    A transport error may quote the request's header values, e.g. httpx's
    ``Illegal header value b'Bearer ...'``; such a value is usually a credential.
    """
    for value in values:
        forms = {value, value.strip(), repr(value)[1:-1]}
        forms.add(repr(value.encode("utf-8", "backslashreplace"))[2:-1])
        # Very short values are not secrets, and masking them would garble the message.
        for form in sorted((f for f in forms if len(f) >= 4), key=len, reverse=True):
            text = text.replace(form, "***")
    return text


def _user_agent() -> dict[str, str]:
    from importlib.metadata import version

    return {"User-Agent": f"agent-wait-webhook/{version('agent-wait-webhook')}"}


def _origin(url: str) -> str:
    # Reports and repr show only scheme://host:port: webhook paths and queries often carry tokens.
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}"
