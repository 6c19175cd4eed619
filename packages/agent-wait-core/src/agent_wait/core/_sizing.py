"""Sizes in UTF-8 bytes, batches by count and bytes, and ids that fit a transport's alphabet.

Pure stdlib: transports limit bytes and entry counts, and several announcers need the same
accounting.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def utf8_size(*texts: str) -> int:
    """The total size of ``texts`` in UTF-8 bytes.

    Transports limit bytes, not characters: 262,144 ``"é"`` are 512 KiB.
    """
    return sum(len(text.encode("utf-8")) for text in texts)


def chunk(
    items: Sequence[T], *, max_count: int, max_bytes: int, size: Callable[[T], int]
) -> list[list[T]]:
    """Split ``items``, in order, into consecutive batches within a count and a byte budget.

    Args:
        items: What to send.
        max_count: At most this many items per batch.
        max_bytes: At most this many bytes per batch (the sum of ``size(item)``).
        size: The size of one item in bytes, as the transport counts it.

    Returns:
        The batches; empty when ``items`` is.

    Raises:
        ValueError: One item alone is larger than ``max_bytes``; check per-item limits first.
    """
    if max_count < 1 or max_bytes < 1:
        raise ValueError(f"max_count and max_bytes must be positive, got {max_count}, {max_bytes}")
    batches: list[list[T]] = []
    current: list[T] = []
    used = 0
    for item in items:
        item_size = size(item)
        if item_size > max_bytes:
            raise ValueError(
                f"an item of {item_size} bytes exceeds the {max_bytes}-byte batch budget"
            )
        if current and (len(current) == max_count or used + item_size > max_bytes):
            batches.append(current)
            current, used = [], 0
        current.append(item)
        used += item_size
    if current:
        batches.append(current)
    return batches


ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
"""Printable ASCII without space: the id alphabet of many transports (FIFO group and
deduplication ids, for one)."""


def fit_identifier(
    value: str, *, max_length: int = 128, allowed: frozenset[str] = ID_CHARACTERS
) -> str:
    """``value`` itself when a transport accepts it as an id, else its SHA-256 hex digest.

    The digest is deterministic, so a republished question maps to the same id, and it keeps
    distinct values distinct.

    Args:
        value: The natural id (a thread id, a dedupe key).
        max_length: The transport's length limit (the digest is cut to it if shorter than 64).
        allowed: The characters the transport accepts.
    """
    if value and len(value) <= max_length and all(c in allowed for c in value):
        return value
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:max_length]
