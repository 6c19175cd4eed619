"""log_safe: values from senders cannot forge or colour log lines."""

from __future__ import annotations

import logging

import pytest

from agent_wait.core import log_safe


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("order-4471", "order-4471"),
        ("commande-été/ß", "commande-été/ß"),
        ("t\n2026-01-01 INFO forged", "t\\n2026-01-01 INFO forged"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("a\rb\x00c\u2028d\u202ee", "a\\rb\\x00c\\u2028d\\u202ee"),
        (42, "42"),
    ],
)
def test_unprintable_characters_are_escaped(value: object, shown: str) -> None:
    assert log_safe(value) == shown


def test_a_logged_value_stays_on_its_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        logging.getLogger("agent_wait.test").info("thread %s", log_safe("t\nINFO forged"))
    assert caplog.text.count("\n") == 1
