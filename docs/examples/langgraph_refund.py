"""A LangGraph refund agent that asks a human, offline, as separate processes.

    python docs/examples/langgraph_refund.py [--home DIR]    # the whole walkthrough
    python docs/examples/langgraph_refund.py worker          # the host: serve()
    python docs/examples/langgraph_refund.py start THREAD_ID TEXT   # a start message

The walkthrough runs everything on the embedded defaults (the sqlite inbox and the sqlite entry
point, one database file in ``$AGENT_WAIT_HOME``; a fresh temporary directory unless ``--home``
names one) and prints each command it runs with its output:

1. ``worker``: the host. The graph's checkpointer is LangGraph's ``SqliteSaver`` (a file, so a
   parked run survives the process); ``serve`` receives start messages and answers from the
   entry point and runs ``handle_message`` for each. It prints the agent's last reply.
2. ``start``: three start messages. A refund under the threshold just runs. A refund over it
   parks on ``interrupt()`` inside the ``issue_refund`` tool (timeout P3D, default reject); a
   replacement shipment parks inside ``ship_replacement`` (timeout PT2S, default reject).
3. ``agent-wait inbox`` lists both questions; ``agent-wait answer QUESTION_ID approve``
   records the approval and sends it to the entry point; the worker resumes the run from its
   checkpoint and the refund runs once.
4. Nobody answers the replacement: once its deadline passed, ``agent-wait sweep --once`` sends
   its default, and the worker resumes that run with the rejection.

The graph is the classic agent loop (a model node, then the prebuilt ``ToolNode``). The model
is an offline stand-in for an LLM: it calls a tool for the order it is given, then reports the
tool's result. With a real chat model, bind the tools and call it in ``agent``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

THRESHOLD = 1000  # euros: larger refunds need a human
SCRIPT = Path(__file__).resolve()


# -- the agent (the worker process) ------------------------------------------------------------


def build_graph(checkpoints: Path) -> Any:
    """The agent loop: model -> ToolNode -> model, checkpointed in a sqlite file."""
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from agent_wait.core import WaitPolicy
    from agent_wait.langgraph import wait

    @tool
    @wait(
        WaitPolicy(
            timeout="P3D",
            default={"action": "reject", "reason": "no response within P3D"},
            tags={"approver_group": "finance"},
        ),
        when=lambda order_id, amount: amount > THRESHOLD,
    )
    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order.

        Args:
            order_id: The order.
            amount: The amount in euros.
        """
        return f"refunded {amount} EUR on {order_id}"

    @tool
    @wait(
        WaitPolicy(
            timeout="PT2S",
            default={"action": "reject", "reason": "no response within PT2S"},
            tags={"approver_group": "support"},
        )
    )
    def ship_replacement(order_id: str) -> str:
        """Ship a replacement for an order.

        Args:
            order_id: The order.
        """
        return f"replacement shipped for {order_id}"

    def offline_model(messages: list[Any]) -> AIMessage:
        """Stand-in for an LLM: an instruction -> a tool call; a tool result -> a reply."""
        last = messages[-1]
        if isinstance(last, ToolMessage):
            done = str(last.content).startswith(("refunded", "replacement shipped"))
            return AIMessage(f"{'Done' if done else 'Not done'}: {last.content}")
        text = str(last.content)
        if match := re.search(r"refund (\d+) on (\S+)", text):
            name, args = "issue_refund", {"order_id": match[2], "amount": int(match[1])}
        elif match := re.search(r"replace (\S+)", text):
            name, args = "ship_replacement", {"order_id": match[1]}
        else:
            return AIMessage("I only handle 'refund <amount> on <order>' and 'replace <order>'.")
        call = {"name": name, "args": args, "id": f"call_{len(messages)}", "type": "tool_call"}
        return AIMessage("", tool_calls=[call])

    def agent(state: MessagesState, config: RunnableConfig) -> MessagesState:
        reply = offline_model(state["messages"])
        if not reply.tool_calls:
            print(f"agent ({config['configurable']['thread_id']}): {reply.content}", flush=True)
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([issue_refund, ship_replacement]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    return builder.compile(checkpointer=SqliteSaver(connection))


def worker() -> None:
    """The host: serve the configured entry point until SIGTERM or Ctrl-C."""
    from agent_wait.core import SqliteAnnounce, entry
    from agent_wait.langgraph import serve

    # The worker's own log lines: one per message handled, with its outcome.
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
    logging.getLogger("agent_wait.core.serve").setLevel(logging.INFO)
    # The checkpoints next to the inbox, in $AGENT_WAIT_HOME (or the user data directory).
    graph = build_graph(SqliteAnnounce().path.parent / "checkpoints.sqlite3")
    # The embedded entry point, polled often so the demo is quick.
    report = serve(graph, entry("sqlite", poll_interval=0.05), wait=0.2)
    print(f"worker stopped: acknowledged {report.acknowledged}", flush=True)


def start(thread_id: str, text: str) -> None:
    """Send a start message to the configured entry point."""
    from agent_wait.core import default_entry

    message = {"thread_id": thread_id, "input": {"messages": [{"role": "user", "content": text}]}}
    with default_entry() as messages:
        messages.send(message)
    print(f"sent {json.dumps(message)}")


# -- the walkthrough (drives the processes) ----------------------------------------------------


class Worker:
    """The worker process; its output is printed as the walkthrough waits for it."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        command = [sys.executable, str(SCRIPT), "worker"]
        show(command, background=True)
        self.process = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the worker exited

    def expect(self, wanted: Callable[[str], bool], what: str, timeout: float = 30.0) -> None:
        """Print the worker's lines until one ``wanted`` accepts."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:
                raise SystemExit(f"the worker exited before it reported {what}")
            print(f"  worker | {line.rstrip()}", flush=True)
            if wanted(line):
                return
        raise SystemExit(f"the worker did not report {what} within {timeout:.0f} s")

    def stop(self) -> None:
        """SIGTERM: the worker finishes what it holds; print the rest of its output."""
        print("\n$ kill -TERM %1", flush=True)
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        while line := self.lines.get(timeout=5):
            print(f"  worker | {line.rstrip()}", flush=True)


def show(command: list[str], *, background: bool = False) -> None:
    """Print a command as a shell line (the script and the agent-wait CLI by their names)."""
    script = os.path.relpath(SCRIPT)
    script = str(SCRIPT) if script.startswith("..") else script
    names = {sys.executable: "python", str(SCRIPT): script}
    words = [names.get(word, word) for word in command]
    print(f"\n$ {shlex.join(words)}{' &' if background else ''}", flush=True)


def run(
    command: list[str], env: dict[str, str], cwd: Path, *, shown: list[str] | None = None
) -> str:
    """Run a command, print it and its output, return the output; a failure stops the demo."""
    show(shown or command)
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    print(output, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"exit {done.returncode}: {shlex.join(command)}")
    return done.stdout


def walkthrough(home: Path) -> None:
    """Run the worker, start three runs, answer one question, let one expire and sweep it."""
    cli = str(Path(sys.executable).with_name("agent-wait"))

    def agent_wait(*args: str) -> str:
        return run([cli, *args], env, home, shown=["agent-wait", *args])

    def started(thread_id: str, text: str) -> None:
        run([sys.executable, str(SCRIPT), "start", thread_id, text], env, home)

    def handled(thread_id: str, outcome: str) -> Callable[[str], bool]:
        return lambda line: f"of thread {thread_id} " in line and line.rstrip().endswith(outcome)

    # Only the embedded defaults: no configuration from the environment or the working directory.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_WAIT_")}
    env["AGENT_WAIT_HOME"] = str(home)
    print(f"AGENT_WAIT_HOME={home}")
    worker_process = Worker(env, home)
    try:
        started("order-1002", f"refund 120 on order-1002 (under the threshold of {THRESHOLD})")
        worker_process.expect(handled("order-1002", "started"), "order-1002 done")
        started("order-4471", "refund 41000 on order-4471")
        worker_process.expect(handled("order-4471", "started"), "order-4471 parked")
        started("order-4502", "replace order-4502")
        worker_process.expect(handled("order-4502", "started"), "order-4502 parked")

        # QUESTION_ID  THREAD_ID  ACTIONS  DEADLINE  CALL: one row per question, then its
        # indented details (who asked)
        listed = agent_wait("inbox").splitlines()[1:]
        rows = [line.split() for line in listed if not line.startswith(" ")]
        questions = {thread_id: question_id for question_id, thread_id, *_ in rows}

        refund = questions["order-4471"]
        agent_wait("answer", refund, "approve", "--answer", '{"note": "ok"}')
        worker_process.expect(handled("order-4471", "resumed"), "order-4471 resumed")

        # The replacement's exact deadline, from the inbox the sqlite announcer writes.
        from agent_wait.core import SqliteQuestionStore

        with SqliteQuestionStore(home / "inbox.sqlite3") as store:
            [replacement] = store.find(questions["order-4502"], "order-4502")
        due = datetime.fromisoformat(replacement.envelope.expires_at or "")
        # Deadlines are whole seconds and a question is overdue once one has passed after it.
        time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 1.1)
        agent_wait("sweep", "--once")
        worker_process.expect(handled("order-4502", "resumed"), "order-4502 resumed")
        agent_wait("inbox")
    finally:
        worker_process.stop()


def main(argv: list[str] | None = None) -> None:
    """Run the walkthrough, or one of its processes."""
    parser = argparse.ArgumentParser(
        description="An offline LangGraph refund agent with approvals."
    )
    parser.add_argument("--home", type=Path, help="AGENT_WAIT_HOME (default: a temporary one)")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("worker", help="serve the entry point (the host)")
    begin = commands.add_parser("start", help="send a start message")
    begin.add_argument("thread_id")
    begin.add_argument("text")
    options = parser.parse_args(argv)
    if options.command == "worker":
        worker()
    elif options.command == "start":
        start(options.thread_id, options.text)
    elif options.home:
        options.home.mkdir(parents=True, exist_ok=True)
        walkthrough(options.home.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="agent-wait-demo-") as home:
            walkthrough(Path(home))


if __name__ == "__main__":
    main()
