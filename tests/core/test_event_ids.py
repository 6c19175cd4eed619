"""Envelope event ids: python-ulid ULIDs in their text form."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from ulid import ULID

from agent_wait.core import Question, build_envelope

ULID_TEXT = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


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
