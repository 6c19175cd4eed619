"""Strands hooks, Swarm and Graph, answered with ``agent-wait answer`` as a person would.

The agents run on real offline models and ``FileSessionManager`` sessions; the worker is
``agent_wait.strands.serve`` on the embedded sqlite entry point.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.session import FileSessionManager

from agent_wait.strands import serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import accepted, refused
from tests.strands.fake_model import Call, ScriptedModel
from tests.strands.test_multiagent import GraphThreads, Refunds, SwarmThreads

Deploy = Callable[..., Deployment]


class ConfirmDeletes(HookProvider):
    """The Strands docs' approval hook: ask before the tool, go on only on ``"y"``."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.approve)

    def approve(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "delete_files":
            return
        approval = event.interrupt("myapp-approval", reason={"paths": event.tool_use["input"]})
        if approval.lower() != "y":
            event.cancel_tool = "User denied permission to delete files"


class Files:
    """``threads(thread_id)``: a fresh agent with the hook, on the thread's session."""

    def __init__(self, sessions: Path) -> None:
        self.sessions = sessions
        self.deleted: list[Any] = []

    def __call__(self, thread_id: str) -> Agent:
        deleted = self.deleted

        @tool
        def delete_files(paths: list[str]) -> str:
            """Delete files."""
            deleted.append(paths)
            return "deleted"

        return Agent(
            model=ScriptedModel([Call("delete_files", {"paths": ["/var/log/app"]})], "done"),
            tools=[delete_files],
            hooks=[ConfirmDeletes()],
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )


# --- 1 and 2. a hook that expects "y": reject is refused, a refused answer opens the question again


def refused_then_corrected(host: Deployment, files: Files) -> None:
    """Answer a hook the way it does not read, see the question open again, answer it right."""
    host.start("files-1", "clear the logs")
    assert host.handled("files-1") == "started"
    question_id = host.question("files-1").envelope.question_id

    # A bare hook interrupt states no actions: the shorthand would send a truthy object.
    refused(host.answer(question_id, "reject"), "states no actions", '{"action": "reject"}')
    # Only the hook can tell that it wanted text: the answer is recorded, the agent refuses it.
    accepted(host.answer(question_id, "--json", "true"), question_id)
    assert host.handled("files-1") == "resume_failed"
    assert files.deleted == []

    reopened = host.stored(question_id)
    assert reopened.is_open
    note = "the agent refused this answer: "
    listed = host.cli("inbox")
    assert (listed.returncode, note in listed.stdout) == (0, True)
    shown = host.cli("show", question_id)
    assert (shown.returncode, note in shown.stdout) == (0, True)
    assert "refused answer: true" in shown.stdout

    # The corrected answer goes through, and the person is told again why the first did not.
    corrected = host.answer(question_id, "--json", '"n"')
    assert (corrected.returncode, note in corrected.stderr) == (0, True)
    assert "answered by alice" in corrected.stdout
    assert host.handled("files-1") == "resumed"
    assert files.deleted == []
    assert host.questions("files-1") == []


def test_a_hook_answer_the_agent_refuses_opens_the_question_again_with_why(
    deploy: Deploy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inbox opted in to refusals as docs/answering.md shows; worker and CLI both read it.
    config = tmp_path / "agent-wait.toml"
    config.write_text(
        '[[announce]]\nuse = "sqlite"\nlifecycle_events = ["wait.answer_refused"]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    files = Files(tmp_path / "sessions")
    refused_then_corrected(deploy(serve, files), files)


def test_on_the_bare_embedded_defaults_a_refused_answer_opens_the_question_again(
    deploy: Deploy, tmp_path: Path
) -> None:
    files = Files(tmp_path / "sessions")
    refused_then_corrected(deploy(serve, files), files)


def test_a_hook_answered_y_runs_the_tool_once(deploy: Deploy, tmp_path: Path) -> None:
    files = Files(tmp_path / "sessions")
    host = deploy(serve, files)
    host.start("files-2", "clear the logs")
    assert host.handled("files-2") == "started"
    question_id = host.question("files-2").envelope.question_id
    accepted(host.answer(question_id, "--json", '"y"'), question_id)
    assert host.handled("files-2") == "resumed"
    assert files.deleted == [["/var/log/app"]]


# --- Swarm and Graph ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_unbounded_graph_warning() -> None:
    warnings.filterwarnings("ignore", message="graph has no max_node_executions")


def test_a_swarm_node_rejected_never_refunds(deploy: Deploy, tmp_path: Path) -> None:
    refunds = Refunds()
    host = deploy(serve, SwarmThreads(tmp_path / "sessions", refunds))
    host.start("swarm-1", "refund order-4471")
    assert host.handled("swarm-1") == "started"
    envelope = host.question("swarm-1").envelope
    assert envelope.context is not None
    assert envelope.context.node == "refunds"

    refused(
        host.answer(envelope.question_id, "refund"),
        "answer.action: 'refund' is not one of the question's allowed_actions",
        f"send it with: agent-wait answer {envelope.question_id} approve",
    )
    accepted(host.answer(envelope.question_id, "reject"), envelope.question_id)
    assert host.handled("swarm-1") == "resumed"
    assert refunds.runs == []


def test_a_graph_takes_each_nodes_answer_and_its_hook_question(
    deploy: Deploy, tmp_path: Path
) -> None:
    refunds = Refunds()
    graph = GraphThreads(tmp_path / "sessions", refunds)
    host = deploy(serve, graph)
    host.start("graph-1", "refund both")
    assert host.handled("graph-1") == "started"
    by_order = {
        q.envelope.question["args"]["order_id"]: q.envelope.question_id
        for q in host.questions("graph-1")
    }
    assert sorted(by_order) == ["a-1", "b-2"]

    accepted(host.answer(by_order["b-2"], "approve"), by_order["b-2"])
    assert host.handled("graph-1") == "resumed"
    accepted(host.answer(by_order["a-1"], "reject"), by_order["a-1"])
    assert host.handled("graph-1") == "resumed"
    assert refunds.runs == ["b-2"]

    notice = host.question("graph-1").envelope
    assert notice.question == {"name": "publish-notice", "reason": {"node": "notify"}}
    refused(host.answer(notice.question_id, "approve"), "states no actions")
    accepted(host.answer(notice.question_id, "--json", '"ship it"'), notice.question_id)
    assert host.handled("graph-1") == "resumed"
    assert graph.seen == [("notice", "ship it")]
    assert refunds.runs == ["b-2"]
