"""The inbox in a real browser (system Chromium via Playwright) against a real server and graph."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from tests.inbox.browser import chromium, chromium_path, log_in
from tests.inbox.conftest import SECRET, Server, ask
from tests.serving import all_sent, until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="browser tests need the system Chromium: apt-get install -y chromium",
    ),
]

GRAPH_WORKER = Path(__file__).parents[1] / "langgraph" / "serve_app.py"
START = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}


def open_question(function: str) -> str | None:
    if not default_inbox_path().exists():
        return None
    with SqliteQuestionStore() as store:
        for question in store.open_questions():
            source = question.envelope.source
            if source is not None and source.function == function:
                return question.envelope.question_id
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def test_approve_with_an_edited_amount_resumes_the_graph_then_reject(
    tmp_path: Path, served: Server, page: Page
) -> None:
    # The graph's worker uses agent-wait-langgraph, a sibling absent when the inbox is tested alone.
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    runs = tmp_path / "runs.txt"
    runs.touch()
    worker = subprocess.Popen(
        [sys.executable, str(GRAPH_WORKER), str(tmp_path / "checkpoints.sqlite3"), str(runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        with SqliteEntry() as entry:
            entry.send(START)
        refund = until(lambda: open_question("issue_refund"), "the graph to park on the refund")
        log_in(page, served.url, "alice", SECRET)
        page.click(f"a[href^='/questions/{refund}?']")
        expect(page.locator("h1 .function")).to_have_text("issue_refund")
        expect(page.locator("table.args")).to_contain_text("41,000")
        page.fill("input[name='arg.amount']", "35000")
        page.click("button[value=approve]")
        expect(page.locator("#result")).to_have_text("Answer sent.")
        expect(page.locator("#status")).to_contain_text("answered by alice (shared-secret) at")
        # The serve worker resumed the run with the edited amount.
        until(lambda: "refund order-4471 35000" in runs.read_text(), "the resumed refund")
        assert "41000" not in runs.read_text()

        notify = until(lambda: open_question("notify_customer"), "the next question")
        page.goto(f"{served.url}/")
        page.click(f"a[href^='/questions/{notify}?']")
        page.fill("textarea[name=reason]", "customer asked us not to")
        page.click("button[value=reject]")
        expect(page.locator("#result")).to_have_text("Answer sent.")
        with SqliteQuestionStore() as store:
            [closed] = store.find(notify)
        assert closed.answer == {"action": "reject", "reason": "customer asked us not to"}
        until(lambda: not _pending(), "the worker to take the rejection")
        assert "notify" not in runs.read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert out.strip() == "acknowledged=3 dead=0"


def _pending() -> bool:
    """True while the entry point holds a message the worker has not acknowledged."""
    connection = sqlite3.connect(default_inbox_path())
    try:
        return connection.execute("SELECT count(*) FROM agent_wait_messages").fetchone()[0] > 0
    finally:
        connection.close()


def test_two_sessions_racing_on_one_question(served: Server, browser: Browser) -> None:
    ask(default_inbox_path(), "q1", args={"amount": 10})
    alice_context, bob_context = browser.new_context(), browser.new_context()
    alice, bob = alice_context.new_page(), bob_context.new_page()
    try:
        log_in(alice, served.url, "alice", SECRET)
        log_in(bob, served.url, "bob", SECRET)
        for page in (alice, bob):
            page.goto(f"{served.url}/questions/q1?thread=order-4471")
        alice.click("button[value=approve]")
        expect(alice.locator("#result")).to_have_text("Answer sent.")
        # Bob's page learns it changed (server-sent events) ...
        expect(bob.locator("#live")).to_be_visible()
        # ... and his late click sends nothing.
        bob.click("button[value=reject]")
        expect(bob.locator("#result")).to_contain_text("Not sent: already answered by alice at")
    finally:
        alice_context.close()
        bob_context.close()
    with SqliteEntry() as entry:
        answers = [r.message["answer"] for r in entry.receive(10)]
    assert answers == [{"action": "approve"}]


def test_an_xss_payload_in_the_arguments_renders_inert(served: Server, page: Page) -> None:
    payload = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    ask(
        default_inbox_path(),
        "x1",
        thread_id="xss",
        args={"note": payload, "nested": {payload: [payload]}},
        tags={"team": payload},
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    log_in(page, served.url, "alice", SECRET)
    expect(page.locator("table.questions")).to_contain_text("team: <img src=x")
    page.goto(f"{served.url}/questions/x1?thread=xss")
    expect(page.locator("table.args").first).to_contain_text("<script>window.pwned=2</script>")
    expect(page.locator("input[name='arg.note']")).to_have_value(payload)
    assert page.evaluate("window.pwned") is None
    assert page.locator("main img").count() == 0
    assert dialogs == []


def test_the_list_updates_when_a_question_arrives(served: Server, page: Page) -> None:
    log_in(page, served.url, "alice", SECRET)
    expect(page.locator("table.questions")).not_to_contain_text("late_arrival")
    ask(default_inbox_path(), "new1", function="late_arrival", thread_id="t-new")
    expect(page.locator("table.questions")).to_contain_text("late_arrival", timeout=15_000)


def test_an_invalid_edit_is_caught_before_sending(served: Server, page: Page) -> None:
    ask(default_inbox_path(), "q1", args={"amount": 10, "lines": [1, 2]})
    log_in(page, served.url, "alice", SECRET)
    page.goto(f"{served.url}/questions/q1?thread=order-4471")
    page.fill("input[name='arg.lines']", "[1, 2")
    page.click("button[value=approve]")
    expect(page.locator("#form-error")).to_have_text("lines: not valid JSON")
    with SqliteQuestionStore() as store:
        assert store.find("q1")[0].is_open


def test_a_middleware_batch_gets_one_decision_per_action_and_the_agent_resumes(
    served: Server, page: Page
) -> None:
    # A real create_agent graph with LangChain's HumanInTheLoopMiddleware (agent-wait-langgraph,
    # a sibling absent when the inbox is tested alone).
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    from langchain_core.messages import AIMessage, ToolMessage

    from agent_wait.core import Outcome, SqliteAnnounce
    from agent_wait.langgraph import handle_message
    from tests.langgraph.conftest import model
    from tests.langgraph.test_middleware import START, TURN, Office, agent

    office = Office()
    chat = model(TURN, AIMessage("done"))
    graph = agent(office, chat)
    [question_id] = handle_message(graph, START, SqliteAnnounce()).question_ids
    log_in(page, served.url, "alice", SECRET)
    page.goto(f"{served.url}/questions/{question_id}?thread=office-1")
    expect(page.locator("fieldset.action")).to_have_count(2)
    expect(page.locator("fieldset.action").nth(1)).to_contain_text("delete_file")
    page.check("input[name='action.0.decision'][value=edit]")
    page.click("fieldset.action >> nth=0 >> summary")
    page.fill("input[name='action.0.arg.to']", "ceo@example.com")
    page.check("input[name='action.1.decision'][value=reject]")
    page.fill("textarea[name='action.1.message']", "keep the spreadsheet")
    page.click("button:has-text('Send decisions')")
    expect(page.locator("#result")).to_have_text("Answer sent.")
    expect(page.locator("#status")).to_contain_text("answered by alice (shared-secret) at")

    with SqliteEntry() as entry:
        [received] = entry.receive(10)
        entry.ack(received)
    resumed = handle_message(graph, received.message)
    assert resumed.outcome is Outcome.RESUMED, resumed
    assert office.runs == [("send_email", "ceo@example.com")]
    tools = {m.name: m for m in chat.received[-1] if isinstance(m, ToolMessage)}
    assert "keep the spreadsheet" in str(tools["delete_file"].content)


def test_a_foreign_question_is_answered_in_its_answer_box_and_the_graph_resumes(
    served: Server, page: Page
) -> None:
    # A real graph whose node asks with LangGraph's own interrupt and a response schema
    # (agent-wait-langgraph, a sibling absent when the inbox is tested alone).
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    from langgraph.types import interrupt

    from agent_wait.core import Outcome, SqliteAnnounce
    from agent_wait.langgraph import handle_message
    from tests.langgraph.test_foreign import State, one_node_graph

    schema = {
        "type": "object",
        "properties": {"choice": {"enum": ["visa", "amex"]}},
        "required": ["choice"],
    }

    def ask(state: State) -> State:
        return {"result": interrupt("Which card?", response_schema=schema)["choice"]}

    graph = one_node_graph(ask)
    start = {"thread_id": "card-1", "input": {"topic": "refunds"}}
    [question_id] = handle_message(graph, start, SqliteAnnounce()).question_ids
    log_in(page, served.url, "alice", SECRET)
    page.goto(f"{served.url}/questions/{question_id}?thread=card-1")
    expect(page.locator("button[name=action]")).to_have_count(0)
    expect(page.locator("#answer")).to_contain_text("Answer schema")
    page.fill("textarea[name=whole]", '{"choice": "amex"')
    page.click("button[value=whole]")
    expect(page.locator("#form-error")).to_have_text("answer: not valid JSON")
    page.fill("textarea[name=whole]", '{"choice": "diners"}')
    page.click("button[value=whole]")
    expect(page.locator("#result")).to_contain_text("answer.choice: 'diners' is not one of")
    expect(page.locator("textarea[name=whole]")).to_have_value('{"choice": "diners"}')
    page.fill("textarea[name=whole]", '{"choice": "amex"}')
    page.click("button[value=whole]")
    expect(page.locator("#result")).to_have_text("Answer sent.")
    expect(page.locator("#status")).to_contain_text("answered by alice (shared-secret) at")

    with SqliteEntry() as entry:
        [received] = entry.receive(10)
        entry.ack(received)
    assert received.message["answer"] == {"choice": "amex"}
    resumed = handle_message(graph, received.message)
    assert resumed.outcome is Outcome.RESUMED, resumed
    assert resumed.result["result"] == "amex"


def parked_agent(thread_id: str) -> tuple[Any, Any, dict[str, str]]:
    """create_agent parked on two gated tools called in one model turn: graph, bank, ids."""
    # agent-wait-langgraph is a sibling, absent when the inbox is tested alone.
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    from langchain_core.messages import AIMessage

    from agent_wait.core import SqliteAnnounce
    from agent_wait.langgraph import handle_message
    from tests.langgraph.conftest import calls, model
    from tests.langgraph.test_tools import Bank, agent_graph, start

    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-5", "amount": 500}),
        ("close_account", {"account_id": "acc-5"}),
    )
    graph = agent_graph(model(turn, AIMessage("all done")), bank.tools())
    started = handle_message(graph, start(thread_id), SqliteAnnounce())
    return graph, bank, {e.question["function"]: e.question_id for e in started.report.envelopes}


def test_two_questions_of_a_thread_answered_in_one_submit_resume_the_agent_once(
    served: Server, page: Page
) -> None:
    graph, bank, ids = parked_agent("refunds-5")
    from agent_wait.core import Outcome
    from agent_wait.langgraph import handle_message
    from tests.langgraph.test_tools import tool_messages

    log_in(page, served.url, "alice", SECRET)
    page.goto(f"{served.url}/questions/{ids['issue_refund']}?thread=refunds-5")
    page.click("#together a")
    expect(page.locator("fieldset.question")).to_have_count(2)
    refund = page.locator(f"fieldset.question[data-question='{ids['issue_refund']}']")
    close = page.locator(f"fieldset.question[data-question='{ids['close_account']}']")
    refund.locator("summary", has_text="Edit arguments").click()
    refund.locator("input[name$='.arg.amount']").fill("4OO")
    # Editing the arguments chose approve; the script checks the JSON before sending.
    expect(refund.locator("input[value='action:approve']")).to_be_checked()
    page.click("button:has-text('Send as one message')")
    expect(page.locator("#form-error")).to_have_text(
        f"question {ids['issue_refund']}: args.amount: not valid JSON"
    )
    refund.locator("input[name$='.arg.amount']").fill("400")
    close.locator("input[value='action:reject']").check()
    close.locator("textarea[name$='.reason']").fill("keep it open")
    page.click("button:has-text('Send as one message')")
    expect(page.locator("#result")).to_contain_text("Sent 2 answers in one message")
    expect(page.locator("ul.sent li")).to_have_count(2)
    expect(page.locator("ul.sent")).to_contain_text("answered by alice (shared-secret) at")
    expect(page.locator("fieldset.question")).to_have_count(0)

    # One message for both: the first question shown is its answer, the other in more_answers.
    [received] = all_sent(default_inbox_path())
    [more] = received["more_answers"]
    assert {received["question_id"], more["question_id"]} == set(ids.values())
    resumed = handle_message(graph, received)
    assert resumed.outcome is Outcome.RESUMED, resumed
    assert not resumed.parked
    assert bank.runs == [("issue_refund", 400)]
    assert "keep it open" in str(tool_messages(resumed.result)["close_account"].content)


def test_a_thread_answer_loses_to_an_earlier_answer_and_sends_nothing(
    served: Server, browser: Browser
) -> None:
    _, _, ids = parked_agent("refunds-6")
    alice_context, bob_context = browser.new_context(), browser.new_context()
    alice, bob = alice_context.new_page(), bob_context.new_page()
    try:
        log_in(alice, served.url, "alice", SECRET)
        alice.goto(f"{served.url}/threads/refunds-6")
        refund = alice.locator(f"fieldset.question[data-question='{ids['issue_refund']}']")
        close = alice.locator(f"fieldset.question[data-question='{ids['close_account']}']")
        refund.locator("input[value='action:approve']").check()
        close.locator("input[value='action:reject']").check()
        close.locator("textarea[name$='.reason']").fill("keep it open")
        # Bob approves the refund on its own page first.
        log_in(bob, served.url, "bob", SECRET)
        bob.goto(f"{served.url}/questions/{ids['issue_refund']}?thread=refunds-6")
        bob.click("button[value=approve]")
        expect(bob.locator("#result")).to_have_text("Answer sent.")
        alice.click("button:has-text('Send as one message')")
        expect(alice.locator("#result")).to_contain_text(
            f"Nothing sent: question {ids['issue_refund']}: already answered by bob at"
        )
        expect(alice.locator("#outcomes li")).to_have_count(2)
        expect(alice.locator("#outcomes")).to_contain_text("not sent; still open")
        # The one still open is offered again with what alice chose and typed.
        expect(alice.locator("fieldset.question")).to_have_count(1)
        expect(alice.locator("textarea[name$='.reason']")).to_have_value("keep it open")
        expect(alice.locator("input[value='action:reject']")).to_be_checked()
    finally:
        alice_context.close()
        bob_context.close()
    assert [(m["question_id"], m["answer"]) for m in all_sent(default_inbox_path())] == [
        (ids["issue_refund"], {"action": "approve"})
    ]
