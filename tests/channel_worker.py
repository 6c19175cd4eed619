"""A LangGraph worker of a deployment: ``python -m tests.channel_worker``, in its own process.

It serves the embedded sqlite entry point; its questions go to the announcers of the
configuration (``AGENT_WAIT_CONFIG``): the inbox and a channel (email, Apprise). It prints one
line when it serves and one when the approved refund runs, which the end-to-end tests wait for.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from agent_wait.core import WaitPolicy, entry
from agent_wait.langgraph import serve, wait

AGENT_WAIT = shutil.which("agent-wait") or "agent-wait"
ROOT = Path(__file__).resolve().parents[1]
WITHIN = 120.0  # generous: a loaded 2-core machine runs other suites beside this one
POLICY = WaitPolicy(
    timeout="PT4H",
    default={"action": "reject"},
    tags={"approver_group": "finance"},
    remind=["PT1H"],
    escalate={"after": "PT2H", "to": {"approver_group": "finance-leads"}},
    last_warning="PT30M",
)


class Refund(TypedDict, total=False):
    order: str
    amount: int
    done: str


@wait(POLICY)
def issue_refund(order: str, amount: int) -> str:
    print(f"refunded {amount} on {order}", flush=True)
    return "refunded"


def graph() -> Any:
    builder = StateGraph(Refund)
    builder.add_node("refund", lambda s: {"done": issue_refund(s["order"], s["amount"])})
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=InMemorySaver())


class Process:
    """A child process whose stdout lines arrive on a queue (read by a thread)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self) -> str:
        try:
            return self.lines.get(timeout=WITHIN)
        except queue.Empty:
            raise AssertionError(f"no output within {WITHIN} s; stderr: {self.stop()}") from None

    def stop(self) -> str:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        _, self.stderr = self.popen.communicate(timeout=WITHIN)
        return self.stderr


def sweeps_racing(now: str, racers: int = 2) -> list[subprocess.CompletedProcess[str]]:
    """``agent-wait sweep --now NOW`` in ``racers`` processes started together."""
    started = [
        subprocess.Popen(
            [AGENT_WAIT, "sweep", "--now", now],
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(racers)
    ]
    done: list[subprocess.CompletedProcess[str]] = []
    for process in started:
        out, err = process.communicate(timeout=WITHIN)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def main() -> None:
    print("serving", flush=True)
    serve(graph(), entry("sqlite", poll_interval=0.05), wait=0.2)  # until SIGTERM


if __name__ == "__main__":
    main()
