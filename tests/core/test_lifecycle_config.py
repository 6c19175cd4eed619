"""Lifecycle events opted in from configuration: ``lifecycle_events`` in an announce entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    BaseAnnounce,
    ConfigError,
    LifecycleEvent,
    MemoryAnnounce,
    SqliteQuestionStore,
    WaitEnvelope,
    announcer,
    default_announcers,
    hookimpl,
)
from agent_wait.core._announce import delivers_events
from agent_wait.core._models import CLOSING_TYPES
from agent_wait.core._plugins import event_announcers, registry
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.host import handle_message
from agent_wait.testing import registered_plugin
from tests.core.test_answer import LATER, ask, run
from tests.core.test_host import Ledger, reply
from tests.core.test_lifecycle import T1

FIRST_PARTY = ("memory", "log", "jsonl", "sqlite", "sqs", "sns", "eventbridge", "dynamodb")
BOTH = frozenset({"wait.answered", "wait.expired"})


def configure(monkeypatch: pytest.MonkeyPatch, *entries: dict[str, Any]) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(list(entries)))


@pytest.mark.parametrize(
    ("value", "types"),
    [
        (True, BOTH | {"wait.answer_refused"}),
        (False, frozenset()),
        (["wait.expired"], frozenset({"wait.expired"})),
        (["wait.answered", "wait.expired"], BOTH),
        ([], frozenset()),
    ],
)
def test_an_entry_opts_in_to_the_types_it_names(value: object, types: frozenset[str]) -> None:
    built = announcer("memory", lifecycle_events=value)
    assert isinstance(built, MemoryAnnounce)
    assert built.lifecycle_events == types


@pytest.mark.parametrize(
    "value",
    ["yes", 1, ["wait.closed"], ["wait.expired", "wait.expired"], [True], {"wait.expired": True}],
)
def test_a_bad_value_is_refused_naming_the_option_and_the_value(value: object) -> None:
    with pytest.raises(ConfigError) as refused:
        announcer("memory", lifecycle_events=value)
    assert str(refused.value) == (
        "announcer 'memory': option 'lifecycle_events': expected true, false or a list of "
        "distinct event types out of 'wait.answered', 'wait.expired', 'wait.answer_refused', "
        "'wait.reminder', 'wait.escalated', 'wait.last_warning' "
        f"(got {value!r})"
    )


@pytest.mark.parametrize("value", [True, ["wait.answered"]])
def test_an_announcer_without_events_refuses_the_opt_in_by_name(
    tmp_path: Path, value: object
) -> None:
    with pytest.raises(ConfigError) as refused:
        announcer("jsonl", path=str(tmp_path / "q.jsonl"), lifecycle_events=value)
    assert str(refused.value) == (
        "announcer 'jsonl': option 'lifecycle_events': JsonlAnnounce does not publish lifecycle "
        f"events (of the installed announcers, {', '.join(event_announcers())} do)"
    )
    assert not (tmp_path / "q.jsonl").exists()  # refused before anything was built
    # Turning it off is allowed anywhere.
    announcer("jsonl", path=str(tmp_path / "q.jsonl"), lifecycle_events=False).close()


# The announcers whose classes implement deliver_event; core lists none of them itself.
PUBLISH_EVENTS = {"memory", "sqlite", "sqs", "webhook", "redis", "postgres", "dynamodb"}


def test_the_message_names_exactly_the_installed_announcers_that_publish_events() -> None:
    reg = registry()
    first_party = [*FIRST_PARTY, "webhook", "redis", "nats", "rabbitmq", "postgres"]
    installed = [name for name in first_party if name in reg.announcers]
    # Each suite runs with its own distribution installed.
    assert {"memory", "sqlite"} <= set(installed)
    for name in installed:
        assert delivers_events(reg.announcers[name].resolve()) == (name in PUBLISH_EVENTS)
    assert set(event_announcers()) & set(first_party) == PUBLISH_EVENTS & set(installed)


def test_an_announcer_class_that_publishes_events_is_named_without_a_core_edit() -> None:
    class Events(BaseAnnounce):
        name = "events_elsewhere"

        def deliver(self, envelope: WaitEnvelope) -> None:
            del envelope

        def deliver_event(self, event: LifecycleEvent) -> None:
            del event

    class Plugin:
        @hookimpl
        def register_announcers(self, register: RegisterTarget) -> None:
            register("events_elsewhere", Events)

    assert "events_elsewhere" not in event_announcers()
    with registered_plugin(Plugin(), "events-elsewhere"):
        assert "events_elsewhere" in event_announcers()
        built = announcer("events_elsewhere", lifecycle_events=True)
        assert built.lifecycle_events == frozenset(CLOSING_TYPES)


def test_config_check_shows_the_opt_in_and_refuses_it_where_it_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(
        monkeypatch,
        {"use": "sqlite", "path": str(tmp_path / "inbox.sqlite3"), "lifecycle_events": True},
        {"use": "log", "lifecycle_events": ["wait.expired"]},
    )
    code, out, err = run("config", "check")
    assert code == 1
    lines = out.splitlines()
    assert '"lifecycle_events": true' in lines[1]
    assert lines[2].startswith("    ok: agent_wait.core._sqlite.SqliteAnnounce")
    assert lines[4] == (
        "    error: ConfigError: announcer 'log': option 'lifecycle_events': LogAnnounce does not "
        f"publish lifecycle events (of the installed announcers, {', '.join(event_announcers())} "
        "do)"
    )
    assert "1 of 2 announcers failed to build" in err


def test_the_host_tells_the_configured_inbox_that_opted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    configure(
        monkeypatch, {"use": "sqlite", "path": str(inbox), "lifecycle_events": ["wait.answered"]}
    )
    host = Ledger()
    handle_message(host, {"thread_id": "t"}, strict=True)  # announce=None: the configuration
    handled = handle_message(host, reply("t-q1"), clock=lambda: T1)
    assert [(d.announcer, d.ok) for d in handled.events] == [("sqlite", True)]
    with SqliteQuestionStore(inbox) as store:
        [answered] = store.find("t-q1")
    assert (answered.status, answered.answered_at) == ("answered", "2026-09-11T10:00:00Z")


def test_without_the_option_the_configured_announcers_hear_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    configure(monkeypatch, {"use": "sqlite", "path": str(inbox)})
    host = Ledger()
    handle_message(host, {"thread_id": "t"}, strict=True)
    handled = handle_message(host, reply("t-q1"), clock=lambda: T1)
    assert handled.events == ()
    with SqliteQuestionStore(inbox) as store:
        [question] = store.find("t-q1")
    assert question.is_open


def test_agent_wait_sweep_announces_to_the_configured_announcers_that_opted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "due", timeout="PT1H", default={"action": "reject"})
    configure(
        monkeypatch,
        {"use": "sqlite", "path": str(inbox)},
        {"use": "memory", "lifecycle_events": ["wait.expired"]},
        {"use": "memory", "lifecycle_events": ["wait.answered"]},
    )
    code, out, err = run("sweep", "--path", str(inbox), "--now", LATER)
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == ["announced wait.expired of due to memory"]
    # The sweep and this test share the configured announcers (built once per configuration).
    _, expired_only, answered_only = default_announcers()
    assert isinstance(expired_only, MemoryAnnounce)
    assert isinstance(answered_only, MemoryAnnounce)
    [event] = expired_only.events
    assert (event.type, event.question_id, event.by, event.at) == (
        "wait.expired",
        "due",
        "sweeper",
        LATER,
    )
    assert answered_only.events == []
