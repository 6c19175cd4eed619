"""A deployment on the embedded defaults: a worker serving the sqlite entry point, the CLI beside it.

The worker runs the framework's own ``serve`` on a thread of the test process (a process per case
would spend most of its time importing the framework); every answer is given by ``agent-wait``
in its own process, as a person types it, against the same ``$AGENT_WAIT_HOME``.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import EntryPoint, SqliteQuestionStore, default_entry, entry
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.core._store import StoredQuestion

AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))
# Generous: a loaded 2-core machine runs other suites beside this one.
HANDLED_WITHIN = 120.0


class _Outcomes(logging.Handler):
    """The worker's one log line per message: ``(thread_id, outcome)`` as each is settled."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: queue.Queue[tuple[str, str]] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if isinstance(args, tuple) and str(record.msg).startswith("message %s of thread %s"):
            # "...: <outcome>" when acknowledged, "... failed: <error>" when not.
            outcome = args[3] if str(record.msg).endswith("): %s") else f"failed: {args[3]}"
            self.seen.put((str(args[1]), str(outcome)))


@dataclass
class Deployment:
    """The worker, the entry point it serves and the CLI of one ``$AGENT_WAIT_HOME``."""

    outcomes: _Outcomes
    early: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])

    def start(self, thread_id: str, start_input: Any) -> None:
        """Send a start message to the embedded entry point, as an application does."""
        with default_entry() as messages:
            messages.send({"thread_id": thread_id, "input": start_input})

    def handled(self, thread_id: str) -> str:
        """The outcome of the next message of ``thread_id`` the worker settles."""
        # Threads are handled in parallel: another thread's outcome is kept for its own call.
        for index, (thread, outcome) in enumerate(self.early):
            if thread == thread_id:
                del self.early[index]
                return outcome
        while True:
            thread, outcome = self.outcomes.seen.get(timeout=HANDLED_WITHIN)
            if thread == thread_id:
                return outcome
            self.early.append((thread, outcome))

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``agent-wait ARGS`` in its own process, with this deployment's environment."""
        return subprocess.run(
            [AGENT_WAIT, *args],
            capture_output=True,
            text=True,
            # The embedded defaults need no third-party plugin; loading them all would double
            # each command's start-up.
            # --by names the person answering (a shared account's setting).
            env={
                **os.environ,
                "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1",
                "AGENT_WAIT_ALLOW_BY": "1",
            },
            timeout=HANDLED_WITHIN,
            check=False,
        )

    def answer(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``agent-wait answer ARGS``: ``--by`` a person."""
        return self.cli("answer", *args, "--by", "alice")

    def questions(self, thread_id: str) -> list[StoredQuestion]:
        """The open questions of a thread, as the inbox holds them, in the order asked."""
        with SqliteQuestionStore(default_inbox_path()) as store:
            return [q for q in store.open_questions() if q.envelope.thread_id == thread_id]

    def question(self, thread_id: str) -> StoredQuestion:
        """The one open question of a thread."""
        [question] = self.questions(thread_id)
        return question

    def stored(self, question_id: str) -> StoredQuestion:
        """A question as the inbox holds it now, open or not."""
        with SqliteQuestionStore(default_inbox_path()) as store:
            [question] = store.find(question_id)
            return question


@pytest.fixture
def deploy() -> Iterator[Callable[..., Deployment]]:
    """``deploy(serve, host, **options)``: run ``serve`` on the embedded entry point until the end."""
    logger = logging.getLogger("agent_wait.core.serve")
    outcomes = _Outcomes()
    level = logger.level
    logger.addHandler(outcomes)
    logger.setLevel(logging.INFO)
    stop = threading.Event()
    workers: list[threading.Thread] = []
    served: list[EntryPoint] = []

    def run(serve: Callable[..., Any], host: Any, **options: Any) -> Deployment:
        # Polled often so a case takes about a second, not the default 0.2 s per step.
        served.append(entry("sqlite", poll_interval=0.02))
        worker = threading.Thread(
            target=serve, args=(host, served[-1]), kwargs={"wait": 0.1, "stop": stop, **options}
        )
        worker.start()
        workers.append(worker)
        return Deployment(outcomes)

    try:
        yield run
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=HANDLED_WITHIN)
        for messages in served:
            messages.close()
        logger.removeHandler(outcomes)
        logger.setLevel(level)
