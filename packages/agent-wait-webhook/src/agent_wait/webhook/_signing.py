"""Standard Webhooks signatures: signing for the announcer, :func:`verify` for receivers.

The scheme (https://www.standardwebhooks.com): ``HMAC-SHA256(key, f"{id}.{timestamp}.{body}")``,
sent base64-encoded as ``webhook-signature: v1,<base64>`` next to ``webhook-id`` and
``webhook-timestamp`` (integer Unix seconds). Stdlib only, so a receiver can verify without
httpx.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from agent_wait.core import ConfigError
from agent_wait.webhook._errors import WebhookVerificationError

Secret = str | bytes
"""A signing secret: ``"whsec_<base64>"`` (Standard Webhooks form), any other string, or bytes."""

SECRET_PREFIX = "whsec_"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
DEFAULT_TOLERANCE = timedelta(minutes=5)


class SigningKey:
    """The HMAC key derived from a secret; its repr never shows the key.

    Args:
        secret: ``"whsec_<base64>"``: the key is the base64-decoded part, as Standard Webhooks
            defines it. Any other string: its UTF-8 bytes are the key. Bytes: the key as is.
        field: The option name used in error messages.

    Raises:
        ConfigError: The secret is empty or its ``whsec_`` part is not base64 (the message
            names the field, never the secret).
    """

    __slots__ = ("_key",)

    def __init__(self, secret: Secret, field: str = "secret") -> None:
        if isinstance(secret, bytes):
            key = secret
        elif isinstance(secret, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            key = _decode(secret, field)
        else:
            raise ConfigError(
                f"{field}: expected a str or bytes secret, got {type(secret).__name__}"
            )
        if not key:
            raise ConfigError(f"{field}: the secret is empty")
        self._key = key

    def sign(self, msg_id: str, timestamp: int, body: bytes) -> str:
        """The ``v1,<base64>`` signature of one message."""
        signed = b"%s.%d.%s" % (msg_id.encode("utf-8"), timestamp, body)
        digest = hmac.new(self._key, signed, hashlib.sha256).digest()
        return "v1," + base64.b64encode(digest).decode("ascii")

    def headers(self, msg_id: str, body: bytes, now: datetime | None = None) -> dict[str, str]:
        """The three Standard Webhooks headers for ``body`` sent at ``now`` (default: now)."""
        timestamp = math.floor((now or datetime.now(UTC)).timestamp())
        return {
            ID_HEADER: msg_id,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: self.sign(msg_id, timestamp, body),
        }

    def __repr__(self) -> str:
        return "SigningKey(***)"


def _decode(secret: str, field: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        return secret.encode("utf-8")
    encoded = secret[len(SECRET_PREFIX) :]
    try:
        # Standard Webhooks libraries accept unpadded base64; pad before the strict decode.
        return base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except ValueError:  # binascii.Error, or non-ASCII text
        raise ConfigError(
            f"{field}: a secret starting with {SECRET_PREFIX!r} must be base64 after the prefix"
        ) from None


def verify(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: Secret | Iterable[Secret],
    *,
    tolerance: timedelta = DEFAULT_TOLERANCE,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Verify a signed webhook request and return its parsed JSON body.

    A pure function: it checks the ``webhook-id``, ``webhook-timestamp`` and
    ``webhook-signature`` headers (names are case-insensitive) against the exact request body,
    and rejects timestamps outside ``now ± tolerance`` so that a captured request cannot be
    replayed later. Signatures are compared in constant time.

    Example:
        ``envelope = verify(await request.body(), request.headers, os.environ["HOOK_SECRET"])``

    Args:
        body: The raw request body, exactly as received (not re-serialised JSON).
        headers: The request headers.
        secret: The secret, or several during a rotation (a match with any one passes). Same
            forms as :class:`~agent_wait.webhook.WebhookAnnounce` accepts.
        tolerance: How far the timestamp may be from ``now``, either way.
        now: The current time (aware); default: the system clock.

    Returns:
        The body parsed as a JSON object (for agent-wait, the envelope as a dict).

    Raises:
        WebhookVerificationError: The request is not authentic or not fresh, or a header or the
            body is malformed (whatever its length or characters); the message says why. No
            other exception comes from request content.
        ConfigError: A secret is empty or malformed, or ``tolerance``/``now`` is invalid.
    """
    return _json_object(authentic(body, headers, secret, tolerance=tolerance, now=now))


def authentic(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: Secret | Iterable[Secret],
    *,
    tolerance: timedelta = DEFAULT_TOLERANCE,
    now: datetime | None = None,
) -> bytes:
    """:func:`verify` without reading the body: the body's bytes once the request is authentic.

    Raises:
        WebhookVerificationError: The request is not authentic or not fresh, or a header is
            malformed.
        ConfigError: As :func:`verify`.
    """
    if tolerance < timedelta(0):
        raise ConfigError(f"tolerance: must not be negative, got {tolerance!r}")
    if now is not None and now.tzinfo is None:
        raise ConfigError(f"now: expected an aware datetime, got naive {now.isoformat()!r}")
    keys = [SigningKey(s, "secrets") for s in _secrets(secret)]
    if not keys:
        raise ConfigError("secrets: expected at least one secret, got none")
    try:
        data = body.encode("utf-8") if isinstance(body, str) else body
    except UnicodeEncodeError:  # lone surrogates: not text any sender could have signed
        raise WebhookVerificationError("the body is not valid UTF-8 text") from None
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id, stamp, signatures = (
        lowered.get(name, "").strip() for name in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER)
    )
    for name, value in (
        (ID_HEADER, msg_id),
        (TIMESTAMP_HEADER, stamp),
        (SIGNATURE_HEADER, signatures),
    ):
        if not value:
            raise WebhookVerificationError(f"missing header {name}")
    try:
        msg_id.encode("utf-8")
    except UnicodeEncodeError:
        raise WebhookVerificationError(f"header {ID_HEADER}: not valid UTF-8 text") from None
    timestamp = _check_timestamp(stamp, tolerance, now or datetime.now(UTC))
    offered = _offered_signatures(signatures)
    if not offered:
        raise WebhookVerificationError(f"header {SIGNATURE_HEADER} holds no v1 signature")
    for key in keys:
        expected = base64.b64decode(key.sign(msg_id, timestamp, data)[3:])
        # No early exit inside the loop over offered signatures: each comparison is constant time.
        matched = [hmac.compare_digest(expected, candidate) for candidate in offered]
        if any(matched):
            return data
    raise WebhookVerificationError("no signature matches (wrong secret, or the body was altered)")


def _secrets(secret: Secret | Iterable[Secret]) -> list[Secret]:
    if isinstance(secret, str | bytes):
        return [secret]
    return list(secret)


# Unix seconds stay below 10**15 for thirty million years; longer digit strings overflow a
# float (or Python's int parsing limit) before any tolerance check could refuse them.
_MAX_TIMESTAMP_DIGITS = 15


def _check_timestamp(stamp: str, tolerance: timedelta, now: datetime) -> int:
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > _MAX_TIMESTAMP_DIGITS:
        shown = repr(stamp[:32]) + ("..." if len(stamp) > 32 else "")
        raise WebhookVerificationError(
            f"header {TIMESTAMP_HEADER}: expected integer Unix seconds, got {shown}"
        )
    timestamp = int(stamp)
    skew = timestamp - now.timestamp()
    if abs(skew) > tolerance.total_seconds():
        side = "older" if skew < 0 else "newer"
        raise WebhookVerificationError(
            f"header {TIMESTAMP_HEADER}: {timestamp} is {abs(skew):.0f} s {side} than now, outside "
            f"the {tolerance.total_seconds():.0f} s tolerance (stale or replayed request)"
        )
    return timestamp


def _offered_signatures(header: str) -> list[bytes]:
    # Space-separated "version,base64" pairs; other versions (e.g. v1a, asymmetric) are skipped.
    offered: list[bytes] = []
    for item in header.split():
        version, _, encoded = item.partition(",")
        if version != "v1":
            continue
        try:
            offered.append(base64.b64decode(encoded, validate=True))
        except ValueError:  # binascii.Error, or non-ASCII text
            continue
    return offered


def _json_object(data: bytes) -> dict[str, Any]:
    try:
        parsed: object = json.loads(data)
    except RecursionError:
        raise WebhookVerificationError("the signed body is JSON nested too deeply") from None
    except ValueError as error:
        raise WebhookVerificationError(f"the signed body is not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise WebhookVerificationError(
            f"the signed body is a JSON {type(parsed).__name__}, expected an object"
        )
    return cast("dict[str, Any]", parsed)
