"""A worker SIGKILLed inside a Swarm or Graph run: the approved body runs at most once, the run goes on.

The refund node's agent has no session manager of its own: the Swarm's or Graph's session keeps
it (its pending call, in the run's interrupt state), and the execution record is keyed by the
thread and the node. Each kill is a real SIGKILL of a worker process (a BaseException would let
Strands' clean-up save the run as it stood, which a lost worker never does).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, ToolContext, tool
from strands.multiagent import GraphBuilder, Swarm
from strands.multiagent.base import MultiAgentBase, MultiAgentResult, Status
from strands.session import FileSessionManager
from strands.tools.executors import SequentialToolExecutor

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope, WaitPolicy
from agent_wait.strands import ahandle_message, handle_message, wait
from tests.reliability.killed import die, killed_worker
from tests.strands.fake_model import Call, ScriptedModel

THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}


class DyingModel(ScriptedModel):
    """A scripted model whose worker dies the first time it is called, when ``name`` is in ``kill_in``."""

    def __init__(self, name: str, kill_in: set[str], *turns: Any) -> None:
        super().__init__(*turns, call_prefix=name)
        self.name = name
        self.kill_in = kill_in

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if self.name in self.kill_in:
            die()
        async for event in super().stream(messages, *args, **kwargs):
            yield event


class Refunds:
    """A thread's Swarm or Graph: triage hands over to refunds (a gated refund), then receipt.

    ``kill_in`` names where the worker dies: ``"body"`` (the refund happened, the body did not
    return), or a node whose model call kills it (``"refunds"``, ``"receipt"``).
    """

    def __init__(self, root: Path, kind: str, kill_in: set[str] | None = None) -> None:
        self.sessions = root / "sessions"
        self.effects_file = root / "effects.txt"
        self.kind = kind
        self.kill_in = set(kill_in or ())
        kill, effects_file = self.kill_in, self.effects_file

        @tool(context=True)
        @wait(WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"}))
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            with effects_file.open("a") as out:
                out.write(f"refund {order_id} {amount}\n")
            if "body" in kill:
                die()
            return f"refunded {amount}"

        self.tool = issue_refund

    @property
    def effects(self) -> list[str]:
        return self.effects_file.read_text().splitlines() if self.effects_file.exists() else []

    def agents(self) -> dict[str, Agent]:
        refund = Call("issue_refund", {"order_id": THREAD, "amount": 41000})
        swarm = self.kind == "swarm"

        def handoff(to: str) -> list[Call]:
            return [Call("handoff_to_agent", {"agent_name": to, "message": f"over to {to}"})]

        turns: dict[str, list[Any]] = {
            "triage": [handoff("refunds")] if swarm else ["triaged"],
            "refunds": [[refund], handoff("receipt")] if swarm else [[refund]],
            "receipt": ["receipt sent"],
        }
        return {
            name: Agent(
                name=name,
                model=DyingModel(name, self.kill_in, *script),
                tools=[self.tool] if name == "refunds" else [],
                # One tool at a time: the concurrent executor would run the body in a task of
                # its own, which a test of where the worker died does not want.
                tool_executor=SequentialToolExecutor(),
                callback_handler=None,
            )
            for name, script in turns.items()
        }

    def __call__(self, thread_id: str) -> MultiAgentBase:
        sessions = FileSessionManager(session_id=thread_id, storage_dir=str(self.sessions))
        agents = self.agents()
        if self.kind == "swarm":
            return Swarm(list(agents.values()), session_manager=sessions)
        builder = GraphBuilder()
        for name, agent in agents.items():
            builder.add_node(agent, name)
        builder.add_edge("triage", "refunds")
        builder.add_edge("refunds", "receipt")
        builder.set_entry_point("triage")
        builder.set_max_node_executions(10)
        builder.set_session_manager(sessions)
        return builder.build()


def in_worker(root: Path, kind: str, kill_in: str, message: dict[str, Any]) -> None:
    """Handle ``message`` in a worker process that is SIGKILLed at ``kill_in``."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from agent_wait.core import MemoryAnnounce\n"
        "from agent_wait.strands import handle_message\n"
        "from tests.strands.test_multiagent_crash_windows import Refunds\n"
        "threads = Refunds(Path(sys.argv[1]), sys.argv[2], {sys.argv[3]})\n"
        "handle_message(threads, json.loads(sys.argv[4]), MemoryAnnounce())\n"
    )
    killed_worker(code, str(root), kind, kill_in, json.dumps(message))


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {**envelope.reply_with.model_dump(), "answer": answer}


def parked(threads: Refunds, announce: MemoryAnnounce) -> WaitEnvelope:
    handled = handle_message(threads, START, announce)
    assert handled.outcome is Outcome.STARTED, handled.detail
    [envelope] = handled.report.envelopes
    return envelope


def finished(result: Any) -> None:
    assert isinstance(result, MultiAgentResult)
    assert result.status is Status.COMPLETED
    assert "receipt" in result.results


KINDS = pytest.mark.parametrize("kind", ["swarm", "graph"])


@pytest.fixture(autouse=True)
def _no_unbounded_graph_warning() -> None:
    warnings.filterwarnings("ignore", message="graph has no max_node_executions")


@KINDS
def test_a_worker_killed_inside_a_node_body_asks_a_person_and_no_runs_it_once(
    tmp_path: Path, kind: str
) -> None:
    threads, announce = Refunds(tmp_path, kind), MemoryAnnounce()
    question = parked(threads, announce)
    in_worker(tmp_path, kind, "body", reply(question, {"action": "approve"}))
    assert threads.effects == ["refund order-4471 41000"]

    # The redelivery runs nothing: whether the refund happened is a person's to say.
    again = handle_message(threads, reply(question, {"action": "approve"}), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["args"]["args"] == {"order_id": THREAD, "amount": 41000}
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.tags == {"approver_group": "finance"}
    assert doubt.context is not None
    assert doubt.context.node == "refunds"
    assert threads.effects == ["refund order-4471 41000"]
    duplicate = handle_message(threads, reply(question, {"action": "approve"}), announce)
    assert duplicate.outcome is Outcome.DUPLICATE, duplicate.detail

    done = handle_message(threads, reply(doubt, {"action": "no"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    finished(done.result)
    assert threads.effects == ["refund order-4471 41000"] * 2


@KINDS
def test_a_worker_killed_inside_a_node_body_answered_yes_never_runs_it_again(
    tmp_path: Path, kind: str
) -> None:
    threads, announce = Refunds(tmp_path, kind), MemoryAnnounce()
    question = parked(threads, announce)
    in_worker(tmp_path, kind, "body", reply(question, {"action": "approve"}))
    [doubt] = handle_message(
        threads, reply(question, {"action": "approve"}), announce
    ).report.envelopes

    done = handle_message(threads, reply(doubt, {"action": "yes"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    finished(done.result)
    assert threads.effects == ["refund order-4471 41000"]


@KINDS
def test_an_answer_redelivered_after_the_node_was_saved_continues_the_run(
    tmp_path: Path, kind: str
) -> None:
    threads, announce = Refunds(tmp_path, kind), MemoryAnnounce()
    question = parked(threads, announce)
    # The refund node finished and was saved; the worker dies in the receipt node's model call.
    in_worker(tmp_path, kind, "receipt", reply(question, {"action": "approve"}))
    assert threads.effects == ["refund order-4471 41000"]

    again = handle_message(threads, reply(question, {"action": "approve"}), announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    finished(again.result)
    assert threads.effects == ["refund order-4471 41000"]
    # Once it ended, another copy runs nothing (a finished run keeps no node history to tell
    # the question by: unknown, or a duplicate).
    late = handle_message(threads, reply(question, {"action": "approve"}), announce)
    assert late.outcome in (Outcome.DUPLICATE, Outcome.UNKNOWN_QUESTION), late.detail


@KINDS
def test_a_start_message_redelivered_after_a_node_was_saved_continues_and_parks(
    tmp_path: Path, kind: str
) -> None:
    threads, announce = Refunds(tmp_path, kind), MemoryAnnounce()
    # Triage finished and was saved; the worker dies in the refunds node's first model call.
    in_worker(tmp_path, kind, "refunds", START)

    again = handle_message(threads, START, announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    [question] = again.report.envelopes
    assert question.question["function"] == "issue_refund"
    assert threads.effects == []
    done = handle_message(threads, reply(question, {"action": "approve"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    finished(done.result)
    assert threads.effects == ["refund order-4471 41000"]


async def test_async_a_worker_killed_inside_a_graph_node_body_asks_on_redelivery(
    tmp_path: Path,
) -> None:
    threads, announce = Refunds(tmp_path, "graph"), MemoryAnnounce()
    question = parked(threads, announce)
    in_worker(tmp_path, "graph", "body", reply(question, {"action": "approve"}))

    again = await ahandle_message(threads, reply(question, {"action": "approve"}), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    done = await ahandle_message(threads, reply(doubt, {"action": "no"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    finished(done.result)
    assert threads.effects == ["refund order-4471 41000"] * 2
