"""A question published to no announcer at all is never reported as delivered.

``announce=[]`` through every framework's ``publish_interrupts``, ``apublish_interrupts`` and
``handle_message``: strict raises :class:`AnnounceFailed`, otherwise a WARNING is logged and the
report is not ok. Real agents on offline models park first.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import AnnounceFailed, PublishReport
from agent_wait.langgraph import apublish_interrupts as langgraph_apublish
from agent_wait.langgraph import publish_interrupts as langgraph_publish
from agent_wait.pydantic_ai import apublish_interrupts as pydantic_ai_apublish
from agent_wait.pydantic_ai import publish_interrupts as pydantic_ai_publish
from agent_wait.strands import apublish_interrupts as strands_apublish
from agent_wait.strands import publish_interrupts as strands_publish
from tests.reliability.agents import LangGraphHost, Ledger, PydanticAiHost, StrandsHost, ThreadHost

ORDER = {"order_id": "o-nowhere", "amount": 5}


def _parked_langgraph(tmp_path: Path) -> tuple[ThreadHost, Any, Any, Any]:
    host = LangGraphHost(Ledger())
    config = {"configurable": {"thread_id": ORDER["order_id"]}}
    return host, host.graph.invoke(ORDER, config), langgraph_publish, langgraph_apublish


def _parked_pydantic_ai(tmp_path: Path) -> tuple[ThreadHost, Any, Any, Any]:
    host = PydanticAiHost(Ledger())
    return host, host.agent.run_sync(json.dumps(ORDER)), pydantic_ai_publish, pydantic_ai_apublish


def _parked_strands(tmp_path: Path) -> tuple[ThreadHost, Any, Any, Any]:
    host = StrandsHost(Ledger(), tmp_path / "sessions")
    result = host.agent(ORDER["order_id"])(json.dumps(ORDER))
    return host, result, strands_publish, strands_apublish


PARKED: list[Callable[[Path], tuple[ThreadHost, Any, Any, Any]]] = [
    _parked_langgraph,
    _parked_pydantic_ai,
    _parked_strands,
]
IDS = ["langgraph", "pydantic_ai", "strands"]


@pytest.mark.parametrize("parked", PARKED, ids=IDS)
def test_publish_interrupts_to_no_announcer_fails_or_warns(
    parked: Callable[[Path], tuple[ThreadHost, Any, Any, Any]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Sync: Pydantic AI's run_sync refuses to run inside an event loop.
    _, result, publish_interrupts, apublish_interrupts = parked(tmp_path)
    thread_id = ORDER["order_id"]
    with pytest.raises(AnnounceFailed, match=r"no announcer: 1 question\(s\)"):
        publish_interrupts(result, thread_id, [], strict=True)
    with pytest.raises(AnnounceFailed, match=r"no announcer: 1 question\(s\)"):
        asyncio.run(apublish_interrupts(result, thread_id, [], strict=True))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        reports: list[PublishReport] = [
            publish_interrupts(result, thread_id, []),
            asyncio.run(apublish_interrupts(result, thread_id, [])),
        ]
    for report in reports:
        assert len(report.envelopes) == 1
        assert not report.ok
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("no announcer" in r.getMessage() for r in warnings)


@pytest.fixture(params=IDS)
def host(request: pytest.FixtureRequest, tmp_path: Path) -> ThreadHost:
    hosts: dict[str, Callable[[], ThreadHost]] = {
        "langgraph": lambda: LangGraphHost(Ledger()),
        "pydantic_ai": lambda: PydanticAiHost(Ledger()),
        "strands": lambda: StrandsHost(Ledger(), tmp_path / "sessions"),
    }
    return hosts[request.param]()


def test_strict_handle_message_with_no_announcer_fails(host: ThreadHost) -> None:
    thread_id = f"{host.framework}-nowhere"
    with pytest.raises(AnnounceFailed, match="delivered nowhere"):
        host.handle({"thread_id": thread_id, "input": {**ORDER, "order_id": thread_id}}, [])
