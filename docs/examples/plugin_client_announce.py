"""A ClientAnnounce: one delivery plan, run on the sync client and on the async path.

The "SDK" here is a small client over a sqlite table, so the example runs anywhere:
``python docs/examples/plugin_client_announce.py`` (needs only agent-wait-core).
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_wait.core import DeliveryOutcome, Question, WaitEnvelope, apublish, publish
from agent_wait.core.transport import BatchEntryFailed, ClientAnnounce, ClientPair, Exchange, chunk


class TableClient:
    """The transport's client: ``put_batch`` takes up to 10 rows and reports refused ones."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("CREATE TABLE IF NOT EXISTS q (key TEXT PRIMARY KEY, body BLOB)")

    def put_batch(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        if len(rows) > 10:
            raise ValueError("at most 10 rows per batch")
        failed = []
        for index, row in enumerate(rows):
            if len(row["body"]) > 64_000:
                failed.append({"index": index, "code": "TooLarge", "message": "over 64000 bytes"})
                continue
            self._db.execute("INSERT OR REPLACE INTO q VALUES (?, ?)", (row["key"], row["body"]))
        return {"failed": failed}

    def close(self) -> None:
        self._db.close()


class TableAnnounce(ClientAnnounce):
    name = "table"

    def __init__(self, path: str, *, client: TableClient | None = None) -> None:
        # Built on first use and closed by close(); an injected client is its owner's to close.
        # open_async=None: no async flavour, so the async path runs the sync client in a thread.
        self.clients = ClientPair(lambda: TableClient(path), None, sync_client=client)

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        # Sans-IO: the plan says which calls to make; ClientAnnounce makes them on a client.
        slots = list(range(len(envelopes)))
        batches = chunk(
            slots, max_count=10, max_bytes=1_000_000, size=lambda i: len(envelopes[i].to_json())
        )
        return [self._send(batch, envelopes, outcomes) for batch in batches]

    def _send(
        self, batch: list[int], envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> Exchange:
        rows = [{"key": envelopes[i].dedupe_key, "body": envelopes[i].to_json()} for i in batch]
        response = yield "put_batch", {"rows": rows}
        if isinstance(response, BaseException):  # the whole request failed: every entry did
            for i in batch:
                outcomes[i] = response
            return
        refused = {
            f["index"]: BatchEntryFailed("table", f["code"], f["message"])
            for f in response["failed"]
        }
        for position, i in enumerate(batch):
            outcomes[i] = refused.get(position)  # None: delivered


def main() -> None:
    path = str(Path(tempfile.mkdtemp()) / "questions.sqlite3")
    questions = [Question(question_id=f"q{n}", question={"n": n}) for n in range(12)]
    questions.append(Question(question_id="huge", question="x" * 70_000))

    with TableAnnounce(path) as table:
        report = publish(questions, "thread-1", announce=table)
    failed = {d.question_id: d.error for d in report.failures}
    assert list(failed) == ["huge"], failed  # one refused entry fails only itself
    assert failed["huge"] == "BatchEntryFailed: table refused the entry: TooLarge: over 64000 bytes"

    async def publish_async() -> None:
        async with TableAnnounce(path) as table:
            report = await apublish(
                [Question(question_id="q-async", question={})], "thread-2", announce=table
            )
            assert report.ok, report.failures

    asyncio.run(publish_async())

    with sqlite3.connect(path) as db:
        keys = sorted(key for (key,) in db.execute("SELECT key FROM q"))
    assert len(keys) == 13
    assert "wait.created:thread-2:q-async" in keys
    assert "wait.created:thread-1:huge" not in keys
    print(len(keys), "envelopes stored;", "refused:", sorted(failed))


if __name__ == "__main__":
    main()
