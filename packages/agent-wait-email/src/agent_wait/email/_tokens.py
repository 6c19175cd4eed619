"""Signed, expiring, single-use link tokens (standard library only)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from agent_wait.email._errors import TokenRefused

_VERSION = 1


@dataclass(frozen=True, slots=True)
class LinkToken:
    """What a link may do: answer one question of one thread with one action, as one recipient.

    Attributes:
        question_id: The question.
        thread_id: Its thread.
        action: The action the link answers with.
        recipient: The address the link was sent to: recorded as who answered.
        expires: When the link stops working.
        nonce: Random; identifies the link for the single-use check.
    """

    question_id: str
    thread_id: str
    action: str
    recipient: str
    expires: datetime
    nonce: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LinkSigner:
    """Signs and checks link tokens with HMAC-SHA256.

    A token is ``<base64url payload>.<base64url signature>``; the payload binds the question,
    the thread, the action, the recipient, the expiry and a random nonce.

    Args:
        secret: The HMAC key, the same for the announcer and the links app.
    """

    def __init__(self, secret: str) -> None:
        self._key = secret.encode("utf-8")

    def sign(
        self, question_id: str, thread_id: str, action: str, recipient: str, expires: datetime
    ) -> str:
        """A fresh token (a new nonce each call)."""
        payload = {
            "v": _VERSION,
            "q": question_id,
            "t": thread_id,
            "a": action,
            "r": recipient,
            "e": int(expires.timestamp()),
            "n": secrets.token_urlsafe(16),
        }
        body = _b64(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
        return f"{body}.{self._signature(body)}"

    def verify(self, token: str, now: datetime | None = None) -> LinkToken:
        """The token's content, once its signature and expiry are checked.

        Raises:
            TokenRefused: ``invalid`` (malformed, or not signed with this key) or ``expired``.
        """
        body, _, signature = token.partition(".")
        if not body or not signature or not hmac.compare_digest(signature, self._signature(body)):
            raise TokenRefused(
                "invalid", "this link is not valid (it was altered or not issued here)"
            )
        try:
            payload = cast("dict[str, Any]", json.loads(_unb64(body)))
            link = LinkToken(
                question_id=str(payload["q"]),
                thread_id=str(payload["t"]),
                action=str(payload["a"]),
                recipient=str(payload["r"]),
                expires=datetime.fromtimestamp(int(payload["e"]), UTC),
                nonce=str(payload["n"]),
            )
        except (ValueError, KeyError, TypeError, binascii.Error) as error:
            raise TokenRefused("invalid", "this link is not valid") from error
        if (now or datetime.now(UTC)) >= link.expires:
            raise TokenRefused("expired", "this link has expired")
        return link

    def _signature(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii", "replace"), hashlib.sha256).digest())


class UsedTokens:
    """The nonces of links already used, in a small sqlite table, so each link answers once.

    Args:
        path: The sqlite file; created with its table on first use.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA busy_timeout = 30000")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS agent_wait_email_used_links "
            "(nonce TEXT PRIMARY KEY, question_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
            "recipient TEXT NOT NULL, used_at TEXT NOT NULL)"
        )
        self._lock = threading.Lock()

    def claim(self, link: LinkToken) -> bool:
        """Mark the link used; False when it already was (by this or another process)."""
        with self._lock:
            try:
                self._connection.execute(
                    "INSERT INTO agent_wait_email_used_links VALUES (?, ?, ?, ?, ?)",
                    (
                        link.nonce,
                        link.question_id,
                        link.thread_id,
                        link.recipient,
                        datetime.now(UTC).isoformat(),
                    ),
                )
            except sqlite3.IntegrityError:
                return False
            return True

    def release(self, link: LinkToken) -> None:
        """Make the link usable again: its answer could not be sent."""
        with self._lock:
            self._connection.execute(
                "DELETE FROM agent_wait_email_used_links WHERE nonce = ?", (link.nonce,)
            )

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
