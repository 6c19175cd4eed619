"""The entry point registers the adapter without importing Pydantic AI."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from agent_wait.core import CallContext, Question
from agent_wait.core._plugins import registry


def test_entry_point_is_declared() -> None:
    [entry] = [ep for ep in entry_points(group="agent_wait") if ep.name == "pydantic_ai"]
    assert entry.value == "agent_wait.pydantic_ai._plugin"


def test_adapter_is_registered_and_resolves() -> None:
    registration = registry().adapters["pydantic_ai"]
    assert registration.plugin == "pydantic_ai"
    adapter = registration.resolve()()
    assert adapter.name == "pydantic_ai"
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.messages import ToolCallPart

    from agent_wait.pydantic_ai._adapter import approval_schema

    requests = DeferredToolRequests(approvals=[ToolCallPart("t", {"a": 1}, tool_call_id="c1")])
    assert adapter.questions_in(requests) == [
        Question(
            question_id="c1",
            question={"function": "t", "args": {"a": 1}},
            context=CallContext(tool="t", tool_call_id="c1"),
            answer_schema=approval_schema({"a": 1}),
        )
    ]


def test_loading_plugins_does_not_import_pydantic_ai() -> None:
    code = (
        "import sys\n"
        "from agent_wait.core._plugins import PluginRegistry\n"
        "reg = PluginRegistry()\n"
        "reg.load(['pydantic_ai'])\n"
        "assert 'pydantic_ai' in reg.adapters, sorted(reg.adapters)\n"
        "assert 'pydantic_ai' in reg.plugins\n"
        "print('pydantic_ai' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr
