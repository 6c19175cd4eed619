"""Envelope event ids: python-ulid ULIDs, rendered by core's faster text encoder."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from agent_wait.core import Question, build_envelope
from agent_wait.core._publish import ulid_text

ULID_TEXT = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


@given(st.binary(min_size=16, max_size=16))
def test_text_is_python_ulids_text(raw: bytes) -> None:
    assert ulid_text(raw) == str(ULID(raw))


def test_extremes_and_every_digit_position() -> None:
    for raw in (bytes(16), b"\xff" * 16, b"\x80" + bytes(15), bytes(15) + b"\x01"):
        assert ulid_text(raw) == str(ULID(raw))
    for bit in range(128):
        raw = (1 << bit).to_bytes(16, "big")
        assert ulid_text(raw) == str(ULID(raw))


def test_envelope_event_ids_are_fresh_sortable_ulids() -> None:
    question = Question(question_id="q1", question={"x": 1})
    before = int(time.time() * 1000)
    ids = [build_envelope(question, "t1", now=datetime.now(UTC)).event_id for _ in range(200)]
    after = int(time.time() * 1000)
    assert len(set(ids)) == len(ids)
    assert all(ULID_TEXT.match(event_id) for event_id in ids)
    # python-ulid is monotonic within a millisecond, so ids made in order sort in order.
    assert ids == sorted(ids)
    assert all(before <= ULID.from_str(event_id).milliseconds <= after for event_id in ids)
