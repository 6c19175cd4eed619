"""Every page at a phone's and a desk's size, in Chromium: it fits, it says what is asked, keys
answer, and axe-core finds no serious or critical accessibility violation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, expect

from agent_wait.core import SqliteQuestionStore
from tests.inbox.browser import chromium, chromium_path, log_in
from tests.inbox.conftest import SECRET, Server, ask
from tests.inbox.screenshots import (
    PAGES,
    REFUND,
    VIEWPORTS,
    VOUCHER,
    ask_card,
    sample_server,
)
from tests.serving import until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="browser tests need the system Chromium: apt-get install -y chromium",
    ),
]

REFUND_SUMMARY = (
    "issue_refund(order_id=order-4471, amount=41,000, currency=EUR, reason={2 fields}, +1 more)"
)
BIG_SUMMARY = "issue_refund(order_id=order-4390, amount=125,000)"
AXE = Axe()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    scratch = tmp_path_factory.mktemp("layout")
    with sample_server(scratch) as server:
        yield server, scratch / "inbox.sqlite3"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(params=list(VIEWPORTS))
def context(request: pytest.FixtureRequest, browser: Browser) -> Iterator[BrowserContext]:
    viewport: Any = VIEWPORTS[request.param]
    context = browser.new_context(viewport=viewport)
    yield context
    context.close()


def overflow(page: Page) -> int:
    """How many CSS pixels the page is wider than the window (0: no horizontal scrolling)."""
    return page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - window.innerWidth"
    )


def serious(page: Page) -> list[str]:
    """The serious and critical axe-core violations of the page, with where they are."""
    found = AXE.run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def test_every_page_fits_the_screen_and_passes_axe(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, _ = site
    page = context.new_page()
    for name, path in PAGES.items():
        if name == "list":
            log_in(page, server.url, "alice", SECRET)
        page.goto(f"{server.url}{path}")
        assert overflow(page) <= 0, f"{name}: {overflow(page)} px wider than the screen"
        assert serious(page) == [], name
    # The no-such-question page too.
    page.goto(f"{server.url}/questions/nope")
    assert overflow(page) <= 0
    assert serious(page) == []


def test_the_list_says_the_call_the_asker_and_the_deadline(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, _ = site
    page = context.new_page()
    log_in(page, server.url, "alice", SECRET)
    refund = page.locator(f"tr[data-question='{REFUND}']")
    expect(refund.locator("a.summary")).to_have_text(REFUND_SUMMARY)
    expect(refund.locator(".asker")).to_have_text("thread order-4471")
    expect(refund).to_contain_text("reject (no response within P3D)")
    expect(refund).to_contain_text(re.compile(r"(just now|\d+ min ago)"))
    deadline = refund.locator("[data-utc]")
    # In the reader's time; the exact UTC time on hover.
    expect(refund).to_contain_text(re.compile(r"in (71|72) h|in 3 d|in 2 d"))
    expect(deadline).to_have_text(re.compile(r"your time$"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", deadline.get_attribute("title") or "")
    # The 125,000 refund does not look like the 41,000 one, and it is overdue.
    late = page.locator("tr.row.overdue")
    expect(late.locator("a.summary")).to_have_text(BIG_SUMMARY)
    expect(late).to_contain_text(re.compile(r"\d+ h overdue"))
    # On a phone the rows are cards; on a desk, a table.
    narrow = (page.viewport_size or {"width": 0})["width"] < 700
    display = refund.evaluate("row => getComputedStyle(row).display")
    assert display == ("block" if narrow else "table-row")
    # Filters: approver group, state, function, search.
    page.goto(f"{server.url}/?group=privacy")
    expect(page.locator("tr.row a.summary")).to_have_text(
        ["delete_customer(customer_id=c-2231, keep_invoices=true)"]
    )
    page.goto(f"{server.url}/?state=overdue")
    expect(page.locator("tr.row a.summary")).to_have_text([BIG_SUMMARY])
    page.goto(f"{server.url}/history?state=answered")
    expect(page.locator("tr.row a.summary")).to_have_text(
        ["issue_refund(order_id=order-4388, amount=900)"]
    )
    expect(page.locator("tr.row")).to_contain_text("answered by bob")


def test_the_asker_and_the_conversation_are_shown_where_the_host_told_them(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, _ = site
    page = context.new_page()
    log_in(page, server.url, "alice", SECRET)
    voucher = page.locator(f"tr[data-question='{VOUCHER}']")
    expect(voucher.locator(".asker")).to_have_text(
        "thread order-4471 · agent support (Pydantic AI) · tool send_voucher"
        " · started by carol@example.com"
    )
    voucher.locator("a.summary").click()
    section = page.locator("section[aria-labelledby='context-heading']")
    for term, value in [
        ("Agent", "support"),
        ("Framework", "Pydantic AI"),
        ("Tool", "send_voucher"),
        ("Tool call id", "call_3_0"),
    ]:
        expect(section.locator(f"dt:text-is('{term}') + dd")).to_have_text(value)
    policy = page.locator("section[aria-labelledby='policy-heading']")
    expect(policy.locator("dt:text-is('Started by') + dd")).to_have_text("carol@example.com")
    # The conversation is folded: its summary says how much, the messages show when opened.
    conversation = page.locator("details#conversation")
    expect(conversation.locator("summary")).to_have_text("The conversation's last 3 messages")
    assert conversation.get_attribute("open") is None
    expect(conversation.locator("ol.messages li").first).not_to_be_visible()
    conversation.locator("summary").click()
    expect(conversation.locator("ol.messages li")).to_have_text(
        [
            "user: My vase arrived in pieces. Can I get something back?",
            "assistant: I am sorry. I can offer a 25 EUR voucher now, while the refund is "
            "reviewed.",
            "user: Yes please, send the voucher.",
        ]
    )
    assert overflow(page) <= 0
    assert serious(page) == []
    # A question whose host told nothing of it says nothing more than its thread.
    page.goto(f"{server.url}/questions/{REFUND}?thread=order-4471")
    expect(page.locator("details#conversation")).to_have_count(0)
    expect(page.locator("section[aria-labelledby='context-heading'] dt")).to_have_text(
        ["Thread", "Asked", "Function", "Question id"]
    )


def test_without_javascript_the_deadline_is_in_utc_and_answering_works(
    site: tuple[Server, Path], browser: Browser
) -> None:
    server, path = site
    ask(
        path,
        "c0ffee00c0ffee00c0ffee00c0ffee00",
        thread_id="nojs-1",
        args={"amount": 7},
        timeout="PT2H",
    )
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORTS["phone"])  # pyright: ignore[reportArgumentType]
    try:
        page = context.new_page()
        log_in(page, server.url, "carol", SECRET)
        row = page.locator("tr[data-question='c0ffee00c0ffee00c0ffee00c0ffee00']")
        expect(row).to_contain_text(
            re.compile(r"in (1|2) h \(([A-Z][a-z]{2} \d{1,2}, )?\d\d:\d\d UTC\)")
        )
        row.locator("a.summary").click()
        expect(page).to_have_title(re.compile(r"^issue_refund c0ffee00 · agent-wait$"))
        page.click("button[value=approve]")
        expect(page.locator("#result")).to_have_text("Answer sent.")
    finally:
        context.close()
    with SqliteQuestionStore(path) as store:
        [closed] = store.find("c0ffee00c0ffee00c0ffee00c0ffee00")
    assert (closed.status, closed.answered_by) == ("answered", "carol")


def test_keys_move_through_the_list_and_answer_after_a_confirmation(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, path = site
    page = context.new_page()
    width = (page.viewport_size or {"width": 0})["width"]
    target = f"feed{width:04d}".ljust(32, "0")  # one question per screen size
    ask(path, target, thread_id=f"keys-{width}", args={"amount": 3100}, timeout="PT30M")
    log_in(page, server.url, "dave", SECRET)
    # The keys work once the deferred script ran; it shows their hint then. A key pressed
    # before that is lost.
    expect(page.locator("#keys")).to_be_visible()
    rows = page.locator("tr.row")
    index = next(
        i for i in range(rows.count()) if rows.nth(i).get_attribute("data-question") == target
    )
    for _ in range(index + 1):
        page.keyboard.press("j")
    expect(rows.nth(index)).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("k")
    if index:
        expect(rows.nth(index - 1)).to_have_class(re.compile(r"\bselected\b"))
        page.keyboard.press("j")
    asked: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.keyboard.press("r")
    until(lambda: asked, "the confirmation")
    assert asked == ["Reject issue_refund(amount=3,100)?"]
    with SqliteQuestionStore(path) as store:
        assert store.find(target)[0].is_open  # dismissed: nothing sent

    def accept(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.keyboard.press("a")
    expect(page.locator("#key-result")).to_have_text("Sent: approve issue_refund(amount=3,100).")
    with SqliteQuestionStore(path) as store:
        [closed] = store.find(target)
    assert (closed.status, closed.answer, closed.answered_by) == (
        "answered",
        {"action": "approve"},
        "dave",
    )
    # Sent, the list shows itself again without the answered question.
    expect(page.locator(f"tr[data-question='{target}']")).to_have_count(0)
    # Live updates keep working: a question asked now appears without touching the page.
    later = f"beef{width:04d}".ljust(32, "0")
    ask(path, later, thread_id=f"live-{width}", args={"amount": 1}, timeout="PT30M")
    expect(page.locator(f"tr[data-question='{later}']")).to_have_count(1)


def test_a_question_page_has_policy_context_a_schema_form_and_inline_problems(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, _ = site
    page = context.new_page()
    log_in(page, server.url, "erin", SECRET)
    page.goto(f"{server.url}{PAGES['question']}")
    expect(page).to_have_title("issue_refund a1b2c3d4 · agent-wait")
    expect(page.locator("#deadline")).to_contain_text(re.compile(r"your time"))
    expect(page.locator("#default")).to_contain_text("reject (no response within P3D)")
    # The long note is folded, its start shown.
    fold = page.locator("details.fold", has_text="The parcel arrived crushed")
    expect(fold).to_have_count(1)
    assert fold.get_attribute("open") is None
    expect(page.locator("#audit")).to_contain_text("asked by issue_refund in thread order-4471")
    # Every button can be tapped: 44 px high at least.
    for box in [b.bounding_box() for b in page.locator("main button").all()]:
        assert box is not None
        assert box["height"] >= 44

    width = (page.viewport_size or {"width": 0})["width"]
    card = f"cafe{width:04d}".ljust(32, "0")  # one question per screen size
    ask_card(site[1], card, f"card-{width}")
    page.goto(f"{server.url}/questions/{card}")
    expect(page.locator("main")).to_contain_text("billing_agent")
    expect(page.locator("main")).to_contain_text("charge_card")
    form = page.locator("#schema-form")
    form.get_by_label("card").select_option("amex")
    form.get_by_label("amount").fill("-5")
    form.locator("button[value=schema]").click()
    problem = page.locator("#schema-1-problem")
    expect(problem).to_contain_text("answer.amount: -5 is less than the minimum of 1")
    expect(form.get_by_label("amount")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("amount")).to_have_value("-5")  # kept for correcting
    assert serious(page) == []
    form.get_by_label("amount").fill("1250")
    form.locator("button[value=schema]").click()
    expect(page.locator("#result")).to_have_text("Answer sent.")
    with SqliteQuestionStore(site[1]) as store:
        [closed] = store.find(card)
    assert closed.answer == {"card": "amex", "amount": 1250}


def test_the_login_page_says_how_to_get_in_and_keeps_the_name(
    site: tuple[Server, Path], context: BrowserContext
) -> None:
    server, _ = site
    page = context.new_page()
    page.goto(f"{server.url}/login")
    expect(page.locator("main")).to_contain_text("AGENT_WAIT_INBOX_TOKEN")
    page.get_by_label("Your name", exact=True).fill("frank")
    page.get_by_label("Inbox secret", exact=True).fill("not the secret")
    page.click("button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("wrong name or secret")
    expect(page.get_by_label("Your name", exact=True)).to_have_value("frank")
    expect(page.get_by_label("Inbox secret", exact=True)).to_have_value("")
    icon = page.request.get(f"{server.url}/favicon.ico")
    assert (icon.status, icon.headers["content-type"]) == (200, "image/svg+xml")
    assert page.locator("link[rel=icon]").get_attribute("href") == "/static/favicon.svg"
