"""ADK's own confirmed tools (not @wait) run at most once, across crashes.

``FunctionTool(..., require_confirmation=True)`` and a tool that calls
``tool_context.request_confirmation(...)`` keep no record of having run; ADK runs a confirmed
call again whenever the session ends on its answer. The host gives the runner the
``AtMostOnce`` plugin, whose record in the execution ledger keeps the confirmed call to one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, DatabaseSessionService, InMemorySessionService
from google.adk.tools import BaseTool, FunctionTool, ToolContext

from agent_wait.core import (
    ExecutionLedger,
    MemoryAnnounce,
    Outcome,
    SqliteLedger,
    configured_ledger,
)
from agent_wait.google_adk import AtMostOnce, ahandle_message, handle_message
from tests.google_adk.fake_model import ScriptedModel
from tests.google_adk.test_crash_windows import (
    APPROVE,
    CALL,
    START,
    Refunds,
    WorkerKilled,
    a_crash_after_no_asks_again,
    asked_whether_it_happened,
    killed_in_the_body,
    no_runs_it_once,
    redelivered_after_a_sigkill,
    reply,
    tool_responses,
)
from tests.reliability.killed import die

FORMS = ["require_confirmation", "request_confirmation"]


class Confirmed(Refunds):
    """:class:`Refunds` whose ``kill_in`` also takes ``after`` (the tool returned, the worker
    died before ADK stored its response) and ``after-sigkill`` (the process dies there)."""

    def after_tool(self, **_: Any) -> None:
        # An agent callback runs after the plugins' (the record is done by then).
        if "after-sigkill" in self.kill_in:
            die()
        if "after" in self.kill_in:
            self.kill_in.discard("after")
            raise WorkerKilled("after")


def _tool(made: Confirmed, form: str) -> BaseTool:
    if form == "require_confirmation":

        def issue_refund(order_id: str, amount: int) -> str:
            """Refund an order."""
            made.effect(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        return FunctionTool(issue_refund, require_confirmation=True)

    def refund(order_id: str, amount: int, tool_context: ToolContext) -> dict[str, Any]:
        """Refund an order."""
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(hint="Refund?", payload={"note": ""})
            return {"status": "approval required"}
        if not confirmation.confirmed:
            return {"status": "rejected"}
        made.effect(f"refund {order_id} {amount}")
        return {"status": "refunded", "note": confirmation.payload["note"]}

    refund.__name__ = "issue_refund"
    return FunctionTool(refund)


def refunds(
    form: str,
    sessions: BaseSessionService | None = None,
    *,
    ledger: ExecutionLedger | None = None,
    effects_file: Path | None = None,
    resumable: bool = False,
) -> Confirmed:
    made = Confirmed(effects_file=effects_file)
    agent = LlmAgent(
        name="shop",
        model=ScriptedModel(calls=list(CALL)),
        tools=[_tool(made, form)],
        after_tool_callback=made.after_tool,
    )
    # With a ledger of its own the app lists the plugin; else the host adds one.
    plugins = [] if ledger is None else [AtMostOnce(ledger=ledger)]
    made.runner = Runner(
        app=App(
            name="shop",
            root_agent=agent,
            plugins=plugins,
            resumability_config=ResumabilityConfig(is_resumable=True) if resumable else None,
        ),
        session_service=sessions or InMemorySessionService(),
    )
    return made


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "executions.sqlite3") as made:
        yield made


@pytest.mark.parametrize("resumable", [False, True], ids=["app", "resumable-app"])
@pytest.mark.parametrize("form", FORMS)
def test_a_crash_inside_the_tool_asks_a_person_and_no_runs_it_once(
    form: str, resumable: bool
) -> None:
    # No plugin in the app: the host adds one over the configured ledger (the test's home).
    app, inbox = refunds(form, resumable=resumable), MemoryAnnounce()
    doubt = asked_whether_it_happened(app, inbox, killed_in_the_body(app, inbox))
    assert doubt.context is not None
    assert (doubt.context.tool, doubt.context.tool_call_id) == ("issue_refund", "call-0")
    done = no_runs_it_once(app, inbox, doubt)
    # "no" runs the call on the approval it was given (the tool reads its confirmation).
    assert tool_responses(done.result) in (
        [{"result": "refunded 41000"}],
        [{"status": "refunded", "note": ""}],
    )


@pytest.mark.parametrize("form", FORMS)
def test_a_crash_inside_the_tool_answered_yes_gives_the_model_the_given_result(
    form: str, ledger: SqliteLedger
) -> None:
    app, inbox = refunds(form, ledger=ledger), MemoryAnnounce()
    doubt = asked_whether_it_happened(app, inbox, killed_in_the_body(app, inbox))
    done = handle_message(app.runner, reply(doubt, {"action": "yes", "result": "by hand"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert not done.parked
    assert app.effects == ["refund order-4471 41000"]
    assert tool_responses(done.result) == [{"result": "by hand"}]


@pytest.mark.parametrize("resumable", [False, True], ids=["app", "resumable-app"])
@pytest.mark.parametrize("form", FORMS)
def test_a_tool_that_returned_before_the_crash_is_not_run_again(
    form: str, ledger: SqliteLedger, resumable: bool
) -> None:
    app, inbox = refunds(form, ledger=ledger, resumable=resumable), MemoryAnnounce()
    approval = killed_in_the_body(app, inbox, "after")

    again = handle_message(app.runner, reply(approval, APPROVE), inbox)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert not again.parked, "a recorded run asks nothing"
    assert app.effects == ["refund order-4471 41000"], "the redelivery ran the tool again"
    assert tool_responses(again.result) in (
        [{"result": "refunded 41000"}],
        [{"status": "refunded", "note": ""}],
    )


def test_a_crash_in_the_run_after_no_asks_again(ledger: SqliteLedger) -> None:
    app, inbox = refunds("require_confirmation", ledger=ledger), MemoryAnnounce()
    a_crash_after_no_asks_again(app, inbox, killed_in_the_body(app, inbox))


async def test_a_rejection_keeps_no_record(ledger: SqliteLedger) -> None:
    app, inbox = refunds("require_confirmation", ledger=ledger), MemoryAnnounce()
    await ahandle_message(app.runner, START, inbox)
    [approval] = inbox.envelopes
    done = await ahandle_message(app.runner, reply(approval, {"action": "reject"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert app.effects == []
    assert tool_responses(done.result) == [{"error": "This tool call is rejected."}]
    assert ledger.claim("any", 0, "token") is None  # the ledger works, and had nothing to say


def test_the_host_adds_the_plugin_once_and_keeps_one_the_app_lists(ledger: SqliteLedger) -> None:
    app, inbox = refunds("require_confirmation"), MemoryAnnounce()
    handle_message(app.runner, START, inbox)
    handle_message(app.runner, START, inbox)
    [added] = [p for p in app.runner.plugin_manager.plugins if isinstance(p, AtMostOnce)]
    assert app.runner.plugin_manager.plugins[0] is added
    assert added.ledger is configured_ledger()

    own = refunds("require_confirmation", ledger=ledger)
    handle_message(own.runner, START, inbox)
    [listed] = [p for p in own.runner.plugin_manager.plugins if isinstance(p, AtMostOnce)]
    assert listed.ledger is ledger


def test_a_ledger_that_is_not_one_is_refused() -> None:
    with pytest.raises(TypeError, match="ledger: expected an ExecutionLedger"):
        AtMostOnce(ledger="executions.sqlite3")  # type: ignore[arg-type]


def app_in(root: Path, form: str, app: str = "app") -> Confirmed:
    """The app a worker process and the test share: its session database, ledger and effects;
    ``app`` is ``"app"`` or ``"resumable-app"``."""
    sessions = DatabaseSessionService(f"sqlite+aiosqlite:///{root / 'sessions.sqlite3'}")
    return refunds(
        form,
        sessions,
        ledger=SqliteLedger(root / "executions.sqlite3"),
        effects_file=root / "effects.txt",
        resumable=app == "resumable-app",
    )


@pytest.mark.parametrize(
    ("where", "form", "app"),
    [
        *((where, form, "app") for where in ("body-sigkill", "after-sigkill") for form in FORMS),
        ("body-sigkill", "request_confirmation", "resumable-app"),
        ("after-sigkill", "require_confirmation", "resumable-app"),
    ],
)
def test_a_worker_sigkilled_in_a_confirmed_tool_runs_it_once(
    tmp_path: Path, where: str, form: str, app: str
) -> None:
    fresh, inbox, again = redelivered_after_a_sigkill(app_in, tmp_path, where, form, app)
    if where == "body-sigkill":
        [doubt] = again.report.envelopes
        assert doubt.question["function"] == "did_it_happen"
        done = handle_message(fresh.runner, reply(doubt, {"action": "yes"}), inbox)
        assert done.outcome is Outcome.RESUMED, done.detail
        assert not done.parked
    else:
        assert not again.parked, "a recorded run asks nothing"
    assert fresh.effects == []
    assert (tmp_path / "effects.txt").read_text() == "refund order-4471 41000\n"
