"""agent-wait's entry-point conformance kit, run against TemplateEntry."""

from __future__ import annotations

import uuid

from agent_wait.core import EntryPoint, entry
from agent_wait.template import TemplateEntry
from agent_wait.testing import EntryContract


class TestTemplateEntry(EntryContract):
    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        # By name, as users configure it: this also proves the entry point is installed. A new
        # queue for each test, as the kit asks (with your broker: a new queue, or purge it).
        return entry(
            "template",
            queue=f"contract-{uuid.uuid4().hex}",
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        # With your broker: publish the body with its client library, bypassing send().
        assert isinstance(entry, TemplateEntry)
        entry.put(body, thread_id)
