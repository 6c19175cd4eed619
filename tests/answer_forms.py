"""The answer-forms tables of the docs: generated from real questions, so they cannot drift.

Each page holds a table between ``<!-- answer-forms:NAME -->`` and ``<!-- /answer-forms:NAME -->``:
per question kind, the ``agent-wait answer`` command the CLI itself shows for it (built from the
question's ``answer_schema``) and answers it takes, each checked here by core's answer check.
Run the tests with ``AGENT_WAIT_WRITE_DOCS=1`` to rewrite a table after a change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent_wait.core import Question, WaitEnvelope, answer_problem, build_envelope
from agent_wait.host._cli_answer import answer_form

DOCS = Path(__file__).resolve().parents[1] / "docs"
ID = "a1b2c3d4e5f60718"

Kind = tuple[str, Question, list[Any]]


def envelope_of(question: Question) -> WaitEnvelope:
    return build_envelope(question.model_copy(update={"question_id": ID}), "order-4471")


def table(kinds: list[Kind]) -> str:
    """The markdown table; every listed answer is one its question takes."""
    lines = [
        "| question | `agent-wait answer` shows | answers it takes (`--json`, or `answer=` in Python) |",
        "|---|---|---|",
    ]
    for kind, question, answers in kinds:
        envelope = envelope_of(question)
        for value in answers:
            problem = answer_problem(envelope, value)
            assert problem is None, f"{kind}: {json.dumps(value)}: {problem}"
        form = answer_form(envelope).replace(ID, "ID")
        taken = "<br>".join(f"`{json.dumps(value, ensure_ascii=False)}`" for value in answers)
        lines.append(f"| {kind} | `{form}` | {taken} |")
    return "\n".join(lines)


def check_page(page: str, name: str, kinds: list[Kind]) -> None:
    """The page's table ``name`` is the generated one (rewritten with AGENT_WAIT_WRITE_DOCS=1)."""
    path = DOCS / page
    text = path.read_text(encoding="utf-8")
    start, end = f"<!-- answer-forms:{name} -->\n", f"<!-- /answer-forms:{name} -->"
    assert start in text, f"{page} has no answer-forms:{name} table"
    assert end in text, f"{page}: the answer-forms:{name} table is not closed"
    before, rest = text.split(start, 1)
    found, after = rest.split(end, 1)
    expected = table(kinds) + "\n"
    if os.environ.get("AGENT_WAIT_WRITE_DOCS") == "1":
        path.write_text(before + start + expected + end + after, encoding="utf-8")
        return
    assert found == expected, f"{page}: the answer-forms table is stale; AGENT_WAIT_WRITE_DOCS=1"
