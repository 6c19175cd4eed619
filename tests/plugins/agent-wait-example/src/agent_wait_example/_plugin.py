"""Plugin module named by the ``agent_wait`` entry point: registers the announcer, adds two hooks.

Imports nothing but ``agent_wait.core`` and the standard library at import time.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agent_wait.core import Delivery, WaitEnvelope, hookimpl
from agent_wait.core.hookspecs import RegisterTarget

STAMP_TAG = "example.stamp"
"""Envelopes whose tags have ``example.stamp = "on"`` are stamped; all others are left alone."""
STAMPED_TAG = "example.stamped_by"
OUTCOMES_ENV = "AGENT_WAIT_EXAMPLE_OUTCOMES"
"""Names a file that receives one JSON line per delivery outcome."""


@hookimpl
def register_announcers(register: RegisterTarget) -> None:
    """Register ``example_file`` by import path (imported only when used)."""
    register("example_file", "agent_wait_example._announcer:ExampleFileAnnounce")


@hookimpl
def adjust_envelope(envelope: WaitEnvelope) -> dict[str, Any] | None:
    """Stamp opted-in envelopes with the distribution that saw them."""
    if envelope.tags.get(STAMP_TAG) != "on":
        return None
    return {"tags": {**envelope.tags, STAMPED_TAG: "agent-wait-example-thirdparty"}}


@hookimpl
def delivery_outcome(delivery: Delivery, envelope: WaitEnvelope) -> None:
    """Append the outcome (ids only, never question content) to ``$AGENT_WAIT_EXAMPLE_OUTCOMES``."""
    path = os.environ.get(OUTCOMES_ENV)
    if not path:
        return
    record = {
        "announcer": delivery.announcer,
        "question_id": delivery.question_id,
        "event_id": delivery.event_id,
        "ok": delivery.ok,
        "error": delivery.error,
        "tags": envelope.tags,
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
