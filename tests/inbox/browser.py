"""Playwright for Python driving the system's Chromium (Playwright's own browser download is not used)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def chromium_path() -> str | None:
    """The system Chromium (Debian: apt-get install chromium), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium; RuntimeError if none is installed."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium on PATH (Debian: apt-get install -y chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: Page, base_url: str, name: str, secret: str) -> None:
    """Log in through the login form, as a person would."""
    page.goto(f"{base_url}/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", secret)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Open questions')")
