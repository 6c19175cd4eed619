"""Approvers and separation of duties, end to end on a sqlite inbox: run it as it is."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agent_wait.core import (
    Identity,
    NotAnApprover,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
    started_by,
)
from agent_wait.host import answer

with tempfile.TemporaryDirectory() as home:
    inbox = Path(home) / "inbox.sqlite3"
    # agent-wait.toml: who is in the finance group (an IdP's groups claim works as well).
    config = Path(home) / "agent-wait.toml"
    config.write_text(
        f'[[announce]]\nuse = "sqlite"\npath = "{inbox}"\n\n'
        '[approvers.groups]\nfinance = ["alice@example.com", "bob@example.com"]\n',
        encoding="utf-8",
    )
    os.environ["AGENT_WAIT_CONFIG"] = str(config)

    # Bob starts the run; the refund may be approved by finance only.
    refund = Question(
        question_id="refund-4471",
        question={"function": "issue_refund", "args": {"order_id": "4471", "amount": 900}},
        policy=WaitPolicy(tags={"approver_group": "finance"}),
    )
    with started_by("bob@example.com"):
        publish([refund], "order-4471", SqliteAnnounce(inbox), strict=True)

    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        for subject in ("mallory@example.com", "bob@example.com"):
            try:
                answer(
                    "refund-4471",
                    "approve",
                    identity=Identity(subject=subject, source="oidc"),
                    store=store,
                    entry=entry,
                )
            except NotAnApprover as refused:
                print(f"refused {subject}: {refused.reason}")
        result = answer(
            "refund-4471",
            "approve",
            identity=Identity(subject="alice@example.com", source="oidc"),
            store=store,
            entry=entry,
        )
    print(f"answered by {result.message['answered_by']} ({result.message['identity_source']})")
