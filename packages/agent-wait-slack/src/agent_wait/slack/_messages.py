"""Where each question was posted: a small sqlite table, so its messages are updated in place."""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from agent_wait.core import WaitEnvelope


def default_messages_path() -> Path:
    """``$AGENT_WAIT_HOME/slack-messages.sqlite3``, else in agent-wait's user data directory."""
    home = os.environ.get("AGENT_WAIT_HOME")
    if home:
        return Path(home).expanduser() / "slack-messages.sqlite3"
    from platformdirs import user_data_path

    return user_data_path("agent-wait") / "slack-messages.sqlite3"


@dataclass(frozen=True, slots=True)
class PostedMessage:
    """One message of a question: the conversation, its timestamp, the envelope it shows.

    Attributes:
        destination: Where the announcer posted it, as configured (``#approvals``, ``U0123``).
        channel: The conversation's ID (a direct message's ``D...`` for a user).
        ts: The message's timestamp, its ID in the conversation.
        envelope: The question the message shows.
        status: The line an answer from Slack put on it, None while none did.
    """

    destination: str
    channel: str
    ts: str
    envelope: WaitEnvelope
    status: str | None = None


class PostedMessages:
    """The messages posted for each question, in a sqlite file shared by the processes.

    Args:
        path: The sqlite file; created with its table on first use.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA busy_timeout = 30000")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS agent_wait_slack_messages (thread_id TEXT NOT NULL, "
            "question_id TEXT NOT NULL, destination TEXT NOT NULL, channel TEXT NOT NULL, "
            "ts TEXT NOT NULL, envelope TEXT NOT NULL, status TEXT, "
            "PRIMARY KEY (thread_id, question_id, destination))"
        )
        # The thread replies of follow-ups, so a follow-up tried again skips the threads it
        # already reached.
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS agent_wait_slack_replies (event_key TEXT NOT NULL, "
            "channel TEXT NOT NULL, thread_ts TEXT NOT NULL, ts TEXT NOT NULL, "
            "PRIMARY KEY (event_key, channel, thread_ts))"
        )
        self._lock = threading.Lock()

    def record(self, envelope: WaitEnvelope, destination: str, channel: str, ts: str) -> None:
        """Record a message posted to ``destination`` (a repost there replaces the earlier one)."""
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO agent_wait_slack_messages VALUES (?, ?, ?, ?, ?, ?, NULL)",
                (
                    envelope.thread_id,
                    envelope.question_id,
                    destination,
                    channel,
                    ts,
                    envelope.model_dump_json(),
                ),
            )

    def of(self, thread_id: str, question_id: str) -> list[PostedMessage]:
        """Every message posted for the question, in no particular order."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT destination, channel, ts, envelope, status FROM agent_wait_slack_messages "
                "WHERE thread_id = ? AND question_id = ?",
                (thread_id, question_id),
            ).fetchall()
        return [
            PostedMessage(
                str(destination),
                str(channel),
                str(ts),
                WaitEnvelope.model_validate_json(str(body)),
                None if status is None else str(status),
            )
            for destination, channel, ts, body, status in rows
        ]

    def set_status(self, thread_id: str, question_id: str, status: str | None) -> None:
        """Record the line an answer from Slack put on the question's messages (None: none)."""
        with self._lock:
            self._connection.execute(
                "UPDATE agent_wait_slack_messages SET status = ? "
                "WHERE thread_id = ? AND question_id = ?",
                (status, thread_id, question_id),
            )

    def claim_status(self, thread_id: str, question_id: str, status: str) -> bool:
        """Put ``status`` on the question's messages unless another line is there; True if put."""
        with self._lock:
            cursor = self._connection.execute(
                "UPDATE agent_wait_slack_messages SET status = ? "
                "WHERE thread_id = ? AND question_id = ? AND status IS NULL",
                (status, thread_id, question_id),
            )
        return cursor.rowcount > 0

    def release_status(self, thread_id: str, question_id: str, status: str) -> None:
        """Take ``status`` back off the question's messages, if it is still the one there."""
        with self._lock:
            self._connection.execute(
                "UPDATE agent_wait_slack_messages SET status = NULL "
                "WHERE thread_id = ? AND question_id = ? AND status = ?",
                (thread_id, question_id, status),
            )

    def record_reply(self, event_key: str, channel: str, thread_ts: str, ts: str) -> None:
        """Record the reply of the event ``event_key`` (its ``dedupe_key``) in a thread."""
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO agent_wait_slack_replies VALUES (?, ?, ?, ?)",
                (event_key, channel, thread_ts, ts),
            )

    def replied(self, event_key: str) -> set[tuple[str, str]]:
        """The threads (channel, ts) the event ``event_key`` was replied in."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT channel, thread_ts FROM agent_wait_slack_replies WHERE event_key = ?",
                (event_key,),
            ).fetchall()
        return {(str(channel), str(ts)) for channel, ts in rows}

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
