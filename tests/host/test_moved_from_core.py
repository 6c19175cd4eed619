"""What moved out of agent_wait.core still imports from there for one release, with a warning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

import agent_wait.core
import agent_wait.host
import agent_wait.host.adapter
import agent_wait.pause
import agent_wait.testing

MOVED_NAMES = [
    "ActionNotAllowed",
    "AnswerNotAccepted",
    "AnswerResult",
    "ApproverConfig",
    "AnswersResult",
    "NothingToResend",
    "QuestionClosed",
    "QuestionNotFound",
    "SendUnconfirmed",
    "ServeReport",
    "ServeStatus",
    "SweepReport",
    "answer",
    "answer_many",
    "approvers_of",
    "aserve_entry",
    "cancel",
    "configured_store",
    "default_approver",
    "default_store",
    "load_approver_config",
    "may_answer",
    "may_see",
    "resend",
    "serve_entry",
    "share_messages",
    "sweep",
]


@pytest.mark.parametrize("name", MOVED_NAMES)
def test_a_moved_name_resolves_from_core_with_a_warning_naming_its_new_home(name: str) -> None:
    with pytest.warns(
        DeprecationWarning, match=rf"agent_wait\.core\.{name} moved to agent_wait\.host\.{name}"
    ) as caught:
        value = getattr(agent_wait.core, name)
    assert value is getattr(agent_wait.host, name)
    # The warning points at the code that used the old path, not at core.
    assert caught[0].filename == __file__


@pytest.mark.parametrize("name", ["last_messages", "with_asker"])
def test_a_moved_adapter_building_block_resolves_from_core_with_a_warning(name: str) -> None:
    with pytest.warns(
        DeprecationWarning,
        match=rf"agent_wait\.core\.{name} moved to agent_wait\.host\.adapter\.{name}",
    ):
        value = getattr(agent_wait.core, name)
    assert value is getattr(agent_wait.host.adapter, name)
    assert name not in agent_wait.core.__all__


def test_every_moved_name_is_public_in_the_host_and_gone_from_cores_list() -> None:
    assert set(MOVED_NAMES) <= set(agent_wait.host.__all__)
    assert not set(MOVED_NAMES) & set(agent_wait.core.__all__)


def test_from_import_of_a_moved_name_warns() -> None:
    with pytest.warns(DeprecationWarning, match="import it from agent_wait.host"):
        from agent_wait.core import answer
    assert answer is agent_wait.host.answer


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("agent_wait.core.host", agent_wait.host),
        ("agent_wait.core.adapter", agent_wait.host.adapter),
        ("agent_wait.core.pause", agent_wait.pause),
        ("agent_wait.core.testing", agent_wait.testing),
    ],
)
def test_a_moved_module_imports_from_its_old_path_with_a_warning(old: str, new: object) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} moved to")):
        module = importlib.import_module(old)
    assert module is new


def test_unknown_names_still_fail_with_a_suggestion() -> None:
    with pytest.raises(AttributeError, match="did you mean 'publish'"):
        agent_wait.core.publsh  # noqa: B018


def test_without_the_host_a_moved_name_says_what_to_install(tmp_path: object) -> None:
    # A core-only install: the host's package is hidden from the import system.
    code = """
import sys, importlib.abc, warnings
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agent_wait.host" or name.startswith("agent_wait.host."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
warnings.simplefilter("ignore", DeprecationWarning)
import agent_wait.core
try:
    agent_wait.core.answer
except ImportError as error:
    print(type(error).__name__, error)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == (
        "ImportError agent_wait.core.answer moved to agent_wait.host.answer, in the "
        "agent-wait-host distribution: pip install agent-wait-host"
    )
