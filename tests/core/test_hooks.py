"""Every hook: documented in docs/plugins/hooks.md, tested here as test_hook_<name> (datasette style)."""

from __future__ import annotations

import inspect
import logging
import re
import sys
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

import pluggy
import pytest
from pluggy import HookImpl

from agent_wait.core import (
    AnnounceFailed,
    AnnouncerOptions,
    Answer,
    BaseAnnounce,
    ConfigError,
    Delivery,
    Handled,
    Identity,
    LifecycleEvent,
    MemoryAnnounce,
    NotAnApprover,
    Operation,
    Outcome,
    PublishReport,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitEnvelope,
    WaitPolicy,
    _plugins,
    _publish,
    announcer,
    entry,
    hookimpl,
    hookspecs,
    publish,
)
from agent_wait.core._plugins import PluginRegistry, registry
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.core.transport import AttributeRules
from agent_wait.host import ServeStatus, answer, handle_message, serve_entry
from agent_wait.testing import registered_plugin
from tests.core.test_host import Ledger, reply

HOOKS_DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins" / "hooks.md"


def hook_names() -> list[str]:
    marker = f"{hookspecs.PROJECT}_spec"
    return sorted(
        name
        for name, value in vars(hookspecs).items()
        if callable(value) and hasattr(value, marker)
    )


def test_hookspecs_exist() -> None:
    assert hook_names() == [
        "adjust_envelope",
        "agent_wait_approvers",
        "answer_handled",
        "delivery_outcome",
        "message_headers",
        "operation_finished",
        "operation_started",
        "register_adapters",
        "register_announcers",
        "register_commands",
        "register_entry_points",
        "register_execution_ledgers",
        "register_identity_providers",
        "register_inbox_routes",
        "register_question_stores",
        "worker_started",
        "worker_stopped",
    ]


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_is_documented(hook: str) -> None:
    headings = re.findall(r"^## `?(\w+)", HOOKS_DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert hook in headings, f"docs/plugins/hooks.md has no '## {hook}' section"


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_has_a_test(hook: str) -> None:
    tests = {name for name in vars(sys.modules[__name__]) if name.startswith("test_hook_")}
    assert f"test_hook_{hook}" in tests, f"tests/core/test_hooks.py has no test_hook_{hook}"


class RefundOptions(AnnouncerOptions):
    channel: str


class Refund(BaseAnnounce):
    options_model = RefundOptions

    def __init__(self, channel: str) -> None:
        self.channel = RefundOptions.parse(self.name, {"channel": channel}).channel

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError(f"{self.channel} unreachable")


def test_hook_register_announcers() -> None:
    class Plugin:
        @hookimpl
        def register_announcers(self, register: RegisterTarget) -> None:
            register("refund_channel", Refund)
            register("by_path", "agent_wait.core._memory:MemoryAnnounce")

    with registered_plugin(Plugin(), "test-announcers"):
        registration = registry().announcers["refund_channel"]
        assert (registration.plugin, registration.target) == ("test-announcers", Refund)
        built = announcer("refund_channel", channel="ops")
        assert isinstance(built, Refund)
        assert built.name == "refund_channel"
        assert isinstance(announcer("by_path"), MemoryAnnounce)
        with pytest.raises(ConfigError, match="unknown option 'chanel'; did you mean 'channel'"):
            announcer("refund_channel", chanel="ops")

        class Clash:
            @hookimpl
            def register_announcers(self, register: RegisterTarget) -> None:
                register("refund_channel", MemoryAnnounce)

        with pytest.raises(
            ConfigError, match="registered by both 'test-announcers' and 'test-clash'"
        ):
            registry().register(Clash(), "test-clash")
        registry().unregister("test-clash")
    assert "refund_channel" not in registry().announcers

    class BadTarget:
        @hookimpl
        def register_announcers(self, register: RegisterTarget) -> None:
            register("bad_target", "no-colon-here")

    with pytest.raises(ConfigError, match="expected 'module:attribute' or a callable"):
        registry().register(BadTarget(), "test-bad-target")
    registry().unregister("test-bad-target")


def test_hook_register_adapters() -> None:
    adapter = object()

    class Plugin:
        @hookimpl
        def register_adapters(self, register: RegisterTarget) -> None:
            register("toy_framework", lambda: adapter)

    with registered_plugin(Plugin(), "test-adapters"):
        registration = registry().adapters["toy_framework"]
        assert registration.plugin == "test-adapters"
        assert registration.resolve()() is adapter
    assert "toy_framework" not in registry().adapters


def test_hook_register_entry_points(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def register_entry_points(self, register: RegisterTarget) -> None:
            register("inbox_copy", "agent_wait.core._sqlite_entry:SqliteEntry")

    with registered_plugin(Plugin(), "test-entries"):
        registration = registry().entry_points["inbox_copy"]
        assert registration.plugin == "test-entries"
        built = entry("inbox_copy", path=tmp_path / "e.sqlite3", max_attempts=2)
        assert (built.name, built.max_attempts) == ("inbox_copy", 2)
        built.send({"thread_id": "t1", "input": None})
        assert [r.message for r in built.receive(1)] == [{"thread_id": "t1", "input": None}]
        built.close()
        with pytest.raises(ConfigError, match="registered by both"):
            registry().register(Plugin(), "test-entries-again")
    registry().unregister("test-entries-again")
    assert "inbox_copy" not in registry().entry_points
    assert registry().entry_points["sqlite"].plugin == "core"


def question(tags: dict[str, str] | None = None) -> Question:
    return Question(
        question_id="q1", question={"x": 1}, policy=WaitPolicy.model_validate({"tags": tags or {}})
    )


def test_hook_adjust_envelope(caplog: pytest.LogCaptureFixture) -> None:
    class Route:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            if envelope.tags.get("team") != "finance":
                return None
            return {
                "tags": {**envelope.tags, "queue": "approvals-finance"},
                "reply_to": {"queue": "answers"},
            }

    class Correlate:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            # Registered before Route, so it runs after it (pluggy calls the last registered
            # first) and sees Route's update.
            if "queue" in envelope.tags:
                return {"correlation": {"provider": "ticketing", "id": envelope.tags["queue"]}}
            return None

    sink = MemoryAnnounce()
    with registered_plugin(Correlate(), "test-correlate"), registered_plugin(Route(), "test-route"):
        report = publish(
            [question({"team": "finance"}), question({"team": "ops"})], "t-1", sink, strict=True
        )
    finance, ops = sink.envelopes
    assert finance.tags == {"team": "finance", "queue": "approvals-finance"}
    assert finance.reply_to == {"queue": "answers"}
    assert finance.correlation is not None
    assert finance.correlation.id == "approvals-finance"
    assert ops.tags == {"team": "ops"}
    assert ops.reply_to is None
    assert report.envelopes == (finance, ops)

    class Forbidden:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            return {"question": "rewritten"}

    class Invalid:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            return {"tags": {"n": 3}}

    class Raises:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            raise RuntimeError("plugin bug")

    sink.clear()
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Forbidden(), "test-forbidden"),
        registered_plugin(Invalid(), "test-invalid"),
        registered_plugin(Raises(), "test-raises"),
    ):
        report = publish([question({"team": "ops"})], "t-1", sink, strict=True)
    assert report.ok
    [envelope] = sink.envelopes
    assert envelope.question == {"x": 1}
    assert envelope.tags == {"team": "ops"}
    failed = {r.getMessage() for r in caplog.records}
    for plugin in ("test-forbidden", "test-invalid", "test-raises"):
        assert f"adjust_envelope hook of plugin {plugin!r} failed; skipped" in failed


def test_adjust_envelope_adds_reply_with_keys_but_never_changes_its_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Trace:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            return {
                "reply_with": {**envelope.reply_with.model_dump(), "traceparent": "00-ab-cd-01"}
            }

    class Readdress:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            return {"reply_with": {**envelope.reply_with.model_dump(), "question_id": "other"}}

    sink = MemoryAnnounce()
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Readdress(), "test-readdress"),
        registered_plugin(Trace(), "test-trace"),
    ):
        publish([question()], "t-1", sink, strict=True)
    [envelope] = sink.envelopes
    reply = envelope.to_dict()["reply_with"]
    assert reply == {
        "thread_id": "t-1",
        "question_id": "q1",
        "answer": None,
        "traceparent": "00-ab-cd-01",
    }
    assert WaitEnvelope.model_validate_json(envelope.to_json()) == envelope
    failed = {r.getMessage() for r in caplog.records}
    assert "adjust_envelope hook of plugin 'test-readdress' failed; skipped" in failed


def test_hook_delivery_outcome(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[Delivery, WaitEnvelope]] = []

    class Observer:
        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            seen.append((delivery, envelope))

    class Broken:
        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            raise RuntimeError("metrics backend down")

    good, bad = MemoryAnnounce(), Refund("ops")
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Observer(), "test-observer"),
        registered_plugin(Broken(), "test-broken-observer"),
    ):
        report = publish([question()], "t-1", [good, bad])
    assert [(d.announcer, d.ok) for d, _ in seen] == [("memory", True), ("Refund", False)]
    assert seen[1][0].error == "ConnectionError: ops unreachable"
    assert all(envelope is report.envelopes[0] for _, envelope in seen)
    assert [d.ok for d in report.deliveries] == [True, False], (
        "an observer must not change the outcome"
    )
    assert "delivery_outcome hook of plugin 'test-broken-observer' failed" in caplog.text


def test_hook_delivery_outcome_gets_the_announcer() -> None:
    seen: list[BaseAnnounce] = []

    class Observer:
        @hookimpl
        def delivery_outcome(self, announcer: BaseAnnounce) -> None:
            seen.append(announcer)

    good, bad = MemoryAnnounce(), Refund("ops")
    with registered_plugin(Observer(), "test-observer-announcer"):
        publish([question()], "t-1", [good, bad])
    assert seen == [good, bad]


class Operations:
    """Records every operation_started / operation_finished call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Operation, object, BaseException | None]] = []

    @hookimpl
    def operation_started(self, operation: Operation) -> None:
        self.calls.append(("started", operation, None, None))

    @hookimpl
    def operation_finished(
        self, operation: Operation, result: object, error: BaseException | None
    ) -> None:
        self.calls.append(("finished", operation, result, error))


def test_hook_operation_started(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Operations()
    order: list[str] = []

    class Sink(MemoryAnnounce):
        def deliver(self, envelope: WaitEnvelope) -> None:
            order.append(f"deliver, {len(recorder.calls)} hook call(s) so far")
            super().deliver(envelope)

    class Broken:
        @hookimpl
        def operation_started(self, operation: Operation) -> None:
            raise RuntimeError("tracer down")

    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(recorder, "test-operations"),
        registered_plugin(Broken(), "test-broken-start"),
    ):
        report = publish([question()], "t-1", Sink())
    assert report.ok
    assert order == ["deliver, 1 hook call(s) so far"]
    [(started, operation, _, _), (finished, same, result, error)] = recorder.calls
    assert (started, finished) == ("started", "finished")
    assert operation is same
    assert operation == Operation("publish", "t-1")
    assert (result, error) == (report, None)
    assert "operation_started hook of plugin 'test-broken-start' failed" in caplog.text


async def test_hook_operation_started_around_apublish() -> None:
    recorder = Operations()
    with registered_plugin(recorder, "test-operations"):
        report = await _publish.apublish([question()], "t-1", MemoryAnnounce())
    assert [(c[0], c[1].name, c[2]) for c in recorder.calls] == [
        ("started", "apublish", None),
        ("finished", "apublish", report),
    ]


def test_hook_operation_finished(caplog: pytest.LogCaptureFixture) -> None:
    recorder = Operations()

    class Broken:
        @hookimpl
        def operation_finished(self) -> None:
            raise RuntimeError("exporter down")

    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(recorder, "test-operations"),
        registered_plugin(Broken(), "test-broken-finish"),
    ):
        with pytest.raises(AnnounceFailed) as failed:
            publish([question()], "t-1", Refund("ops"), strict=True)
        with pytest.raises(TypeError):
            publish([question()], "t-1", [object()])  # type: ignore[list-item]
    strict, wrong = recorder.calls[1], recorder.calls[3]
    assert (strict[0], strict[2], strict[3]) == ("finished", None, failed.value)
    assert isinstance(failed.value.report, PublishReport)
    assert (wrong[0], wrong[2], type(wrong[3])) == ("finished", None, TypeError)
    assert "operation_finished hook of plugin 'test-broken-finish' failed" in caplog.text


def test_no_operation_hook_no_operation() -> None:
    class Adjuster:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> None:
            return None

    with registered_plugin(Adjuster(), "test-adjust-only"):
        hooks = registry().manager.publish_hooks()
        assert not hooks.operations
        assert (hooks.started, hooks.finished, hooks.headers) == (None, None, None)
    recorder = Operations()
    with registered_plugin(recorder, "test-operations"):
        assert registry().manager.publish_hooks().operations


# A transport with an attribute limit of ten, as SQS and SNS have.
TEN_ATTRIBUTES = AttributeRules(max_count=10)


def test_hook_message_headers(caplog: pytest.LogCaptureFixture) -> None:
    from agent_wait.core.transport import transport_headers

    class Tracer:
        @hookimpl
        def message_headers(self, envelope: WaitEnvelope) -> dict[str, str]:
            return {"traceparent": f"for-{envelope.question_id}", "type": "taken"}

    class Other:
        @hookimpl
        def message_headers(self) -> Any:
            return {"traceparent": "ignored: named first by a later plugin", "bad": 3}

    class Broken:
        @hookimpl
        def message_headers(self) -> dict[str, str]:
            raise RuntimeError("no context")

    envelope = publish([question()], "t-1", MemoryAnnounce()).envelopes[0]
    assert transport_headers(envelope) == {}
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Other(), "test-headers-other"),
        registered_plugin(Tracer(), "test-headers"),
        registered_plugin(Broken(), "test-broken-headers"),
    ):
        headers = transport_headers(envelope)
        routing = TEN_ATTRIBUTES.select(envelope)
    assert headers == {"traceparent": f"for-{envelope.question_id}", "type": "taken"}
    # A header never replaces a routing attribute.
    assert routing.values["type"] == "wait.created"
    assert routing.values["traceparent"] == f"for-{envelope.question_id}"
    assert "message_headers hook of plugin 'test-broken-headers' failed" in caplog.text
    assert "message_headers: 'bad': 3 is not a text header; ignored" in caplog.text


def test_message_headers_come_after_the_tags_within_the_limit() -> None:
    class Tracer:
        @hookimpl
        def message_headers(self) -> dict[str, str]:
            return {"traceparent": "00-x"}

    tags = {f"tag{i}": "v" for i in range(8)}
    full = publish([question(tags=tags)], "t-1", MemoryAnnounce()).envelopes[0]
    roomy = publish([question(tags=dict(list(tags.items())[:7]))], "t-1", MemoryAnnounce())
    with registered_plugin(Tracer(), "test-headers"):
        crowded = TEN_ATTRIBUTES.select(full)
        spare = TEN_ATTRIBUTES.select(roomy.envelopes[0])
    # type + thread_id + 8 tags fill the 10: the tags keep their room, the header stays out.
    assert len(crowded.values) == 10
    assert "traceparent" not in crowded.values
    assert crowded.dropped == {}
    assert len(spare.values) == 10
    assert spare.values["traceparent"] == "00-x"


def test_message_headers_are_asked_for_lifecycle_events_and_answers_too() -> None:
    from agent_wait.core.transport import transport_headers

    seen: list[str] = []

    class Tracer:
        @hookimpl
        def message_headers(self, envelope: object) -> dict[str, str]:
            seen.append(type(envelope).__name__)
            return {"traceparent": "00-x"}

    event = LifecycleEvent.model_validate(
        {
            "type": "wait.answered",
            "event_id": "01JCK4Q0000000000000000000",
            "thread_id": "t-1",
            "question_id": "q1",
            "at": "2026-09-11T09:00:00Z",
            "by": None,
            "outcome": "resumed",
        }
    )
    reply = Answer.model_validate({"thread_id": "t-1", "question_id": "q1", "answer": 1})
    with registered_plugin(Tracer(), "test-headers"):
        assert transport_headers(reply) == {"traceparent": "00-x"}
        attributes = TEN_ATTRIBUTES.with_headers({"type": event.type}, event)
        full = TEN_ATTRIBUTES.with_headers({f"a{i}": "v" for i in range(10)}, event)
    assert seen == ["Answer", "LifecycleEvent", "LifecycleEvent"]
    assert attributes == {"type": "wait.answered", "traceparent": "00-x"}
    assert "traceparent" not in full  # no room left: the attributes keep theirs


def test_hook_answer_handled(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[str, Outcome, list[str], bool]] = []

    class Observer:
        @hookimpl
        def answer_handled(self, answer: Answer, handled: Handled) -> None:
            seen.append(
                (answer.question_id, handled.outcome, handled.question_ids, handled.report.ok)
            )

    class Broken:
        @hookimpl
        def answer_handled(self, answer: Answer, handled: Handled) -> None:
            raise RuntimeError("audit log down")

    ledger, inbox = Ledger(asks=3), MemoryAnnounce()
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Observer(), "test-answers"),
        registered_plugin(Broken(), "test-broken-answers"),
    ):
        handle_message(ledger, {"thread_id": "t", "input": 1}, inbox)
        handle_message(ledger, {"thread_id": "t", "input": 1}, inbox)
        for message in (reply("t-q5"), reply("t-q1", "yes"), reply("t-q1"), reply("t-q1")):
            handle_message(ledger, message, inbox)
        with pytest.raises(AnnounceFailed):
            handle_message(ledger, reply("t-q2"), Refund("ops"), strict=True)
    assert seen == [
        ("t-q5", Outcome.UNKNOWN_QUESTION, [], True),
        ("t-q1", Outcome.INVALID_ANSWER, [], True),
        ("t-q1", Outcome.RESUMED, ["t-q2"], True),
        ("t-q1", Outcome.DUPLICATE, ["t-q2"], True),
        # A strict publish that failed: observed with the failed report before it raises.
        ("t-q2", Outcome.RESUMED, ["t-q3"], False),
    ], "start messages are not observed; every answer is, once"
    assert ledger.runs == ["start t", "resume t ['t-q1']", "resume t ['t-q2']"]
    assert caplog.text.count("answer_handled hook of plugin 'test-broken-answers' failed") == 5


def test_answer_handled_wrappers_time_the_observers_and_are_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``answer_handled`` goes through pluggy: a wrapper sees the call; a broken one is contained."""
    events: list[str] = []

    class Observer:
        @hookimpl
        def answer_handled(self, answer: Answer, handled: Handled) -> None:
            events.append(f"observed {answer.question_id} {handled.outcome.value}")

    class Timing:
        @hookimpl(wrapper=True)
        def answer_handled(self, answer: Answer, handled: Handled) -> Generator[None, Any, Any]:
            events.append("before")
            result = yield
            events.append("after")
            return result

    class BrokenWrapper:
        @hookimpl(wrapper=True)
        def answer_handled(self, answer: Answer, handled: Handled) -> Generator[None, Any, Any]:
            raise RuntimeError("tracer down")
            yield  # pragma: no cover - makes this a generator

    ledger, inbox = Ledger(asks=2), MemoryAnnounce()
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Observer(), "test-observer"),
        registered_plugin(Timing(), "test-timing"),
        registered_plugin(BrokenWrapper(), "test-broken-wrapper"),
    ):
        handle_message(ledger, {"thread_id": "t", "input": 1}, inbox)
        handled = handle_message(ledger, reply("t-q1"), inbox)
    assert handled.outcome is Outcome.RESUMED
    assert events == ["before", "observed t-q1 resumed", "after"]
    assert "answer_handled hook wrapper of plugin 'test-broken-wrapper' failed" in caplog.text


def test_wrapper_impls_see_time_and_change_the_result() -> None:
    """New-style ``wrapper=True`` impls run through pluggy around the plain impls."""
    calls: list[str] = []
    timings: list[float] = []

    class Route:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            calls.append("route")
            return {"tags": {**envelope.tags, "queue": "finance"}}

    class Timing:
        @hookimpl(wrapper=True)
        def adjust_envelope(self, envelope: WaitEnvelope) -> Generator[None, object, object]:
            start = time.perf_counter()
            updates = yield
            timings.append(time.perf_counter() - start)
            calls.append(f"timing saw {updates!r}")
            assert isinstance(updates, list)
            # A wrapper may change the result: the host applies the list it returns.
            return [*cast("list[object]", updates), {"reply_to": {"queue": "traced"}}]

        @hookimpl(wrapper=True)
        def delivery_outcome(
            self, delivery: Delivery, envelope: WaitEnvelope
        ) -> Generator[None, object, object]:
            start = time.perf_counter()
            result = yield
            timings.append(time.perf_counter() - start)
            calls.append(f"observed {delivery.announcer} ok={delivery.ok}")
            return result

    sink = MemoryAnnounce()
    with registered_plugin(Route(), "test-route"), registered_plugin(Timing(), "test-timing"):
        report = publish([question({"team": "finance"})], "t-1", sink, strict=True)
    [envelope] = sink.envelopes
    assert envelope.tags == {"team": "finance", "queue": "finance"}
    assert envelope.reply_to == {"queue": "traced"}, "the wrapper's change must apply"
    assert report.envelopes == (envelope,)
    assert calls == [
        "route",
        "timing saw [{'tags': {'team': 'finance', 'queue': 'finance'}}]",
        "observed memory ok=True",
    ]
    assert len(timings) == 2
    assert all(t >= 0 for t in timings)


def test_old_style_hookwrapper_sees_and_forces_the_result() -> None:
    seen: list[object] = []

    class Legacy:
        @hookimpl(hookwrapper=True)
        def adjust_envelope(self, envelope: WaitEnvelope) -> Generator[None, Any, None]:
            outcome = yield
            seen.append(outcome.get_result())
            outcome.force_result([{"correlation": {"provider": "legacy", "id": "7"}}])

    sink = MemoryAnnounce()
    with registered_plugin(Legacy(), "test-legacy"):
        publish([question()], "t-1", sink, strict=True)
    assert seen == [[]]
    [envelope] = sink.envelopes
    assert envelope.correlation is not None
    assert (envelope.correlation.provider, envelope.correlation.id) == ("legacy", "7")


def test_failing_impls_are_reported_and_contained(caplog: pytest.LogCaptureFixture) -> None:
    """One broken plain impl or wrapper never breaks a publish nor silences the others."""
    observed: list[str] = []

    class Broken:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            raise RuntimeError("plain impl bug")

        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            raise RuntimeError("observer bug")

    class BrokenSetup:
        @hookimpl(wrapper=True)
        def delivery_outcome(
            self, delivery: Delivery, envelope: WaitEnvelope
        ) -> Generator[None, object, object]:
            raise RuntimeError("wrapper setup bug")
            yield  # pragma: no cover - makes this a generator

    class BrokenTeardown:
        @hookimpl(wrapper=True)
        def adjust_envelope(self, envelope: WaitEnvelope) -> Generator[None, object, object]:
            yield
            raise RuntimeError("wrapper teardown bug")

        @hookimpl(hookwrapper=True)
        def delivery_outcome(
            self, delivery: Delivery, envelope: WaitEnvelope
        ) -> Generator[None, Any, None]:
            yield
            raise RuntimeError("old-style teardown bug")

    class Good:
        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> dict[str, Any] | None:
            return {"tags": {"kept": "yes"}}

        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            observed.append(delivery.question_id)

    sink = MemoryAnnounce()
    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(Good(), "test-good"),
        registered_plugin(Broken(), "test-broken"),
        registered_plugin(BrokenSetup(), "test-broken-setup"),
        registered_plugin(BrokenTeardown(), "test-broken-teardown"),
    ):
        report = publish([question()], "t-1", sink, strict=True)
    assert report.ok
    [envelope] = sink.envelopes
    assert envelope.tags == {"kept": "yes"}, "the good plugin's update must still apply"
    assert observed == ["q1"], "the good observer must still run"
    messages = {r.getMessage() for r in caplog.records}
    assert {
        "adjust_envelope hook of plugin 'test-broken' failed; skipped",
        "delivery_outcome hook of plugin 'test-broken' failed",
        "delivery_outcome hook wrapper of plugin 'test-broken-setup' failed",
        "adjust_envelope hook wrapper of plugin 'test-broken-teardown' failed",
        "delivery_outcome hook wrapper of plugin 'test-broken-teardown' failed",
    } <= messages
    bugs = {str(r.exc_info[1]) for r in caplog.records if r.exc_info}
    assert {
        "plain impl bug",
        "observer bug",
        "wrapper setup bug",
        "wrapper teardown bug",
        "old-style teardown bug",
    } <= bugs


def test_hook_monitoring_sees_publish_hooks() -> None:
    """pluggy's call monitoring (tracing) sees publish hook calls with the real plugin names."""
    traced: list[tuple[str, list[str]]] = []

    class Observer:
        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            return None

    def before(name: str, impls: Sequence[HookImpl], kwargs: Mapping[str, object]) -> None:
        traced.append((name, [i.plugin_name for i in impls]))

    def after(*_: object) -> None:
        return None

    manager = registry().manager
    undo = manager.add_hookcall_monitoring(before, after)
    try:
        with registered_plugin(Observer(), "test-traced"):
            publish([question()], "t-1", MemoryAnnounce(), strict=True)
    finally:
        undo()
    assert any(name == "delivery_outcome" and "test-traced" in who for name, who in traced)


def test_no_hook_lookup_per_question_without_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no publish hook registered nothing hook-related runs per question or per publish."""
    # A registry of its own: the workspace installs a test plugin that implements publish hooks.
    monkeypatch.setenv("AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins = PluginRegistry()
    monkeypatch.setattr(_plugins, "_registry", plugins)
    sink = MemoryAnnounce()
    publish([question()], "t-1", sink)  # caches the lookup
    lookups: list[str] = []
    original = pluggy.HookCaller.get_hookimpls

    def counting(self: pluggy.HookCaller) -> list[HookImpl]:
        lookups.append(self.name)
        return original(self)

    monkeypatch.setattr(pluggy.HookCaller, "get_hookimpls", counting)
    for _ in range(3):
        assert publish([question(), question()], "t-1", sink).ok
    assert lookups == []

    seen: list[str] = []

    class Late:
        @hookimpl
        def delivery_outcome(self, delivery: Delivery, envelope: WaitEnvelope) -> None:
            seen.append(delivery.question_id)

    plugins.register(Late(), "test-late")
    publish([question()], "t-1", sink)
    plugins.unregister("test-late")
    publish([question()], "t-1", sink)
    assert seen == ["q1"], "registering and unregistering must refresh the cached lookup"
    assert {"adjust_envelope", "delivery_outcome"} <= set(lookups)


def test_hook_register_commands(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    import argparse

    from agent_wait.host._cli import main

    def setup(parser: argparse.ArgumentParser) -> None:
        """Count the open questions loudly."""
        parser.add_argument("--times", type=int, default=1)
        parser.set_defaults(handler=lambda args: print("counted " * args.times) or 3)

    def broken(parser: argparse.ArgumentParser) -> None:
        raise RuntimeError("no terminal")

    class Plugin:
        @hookimpl
        def register_commands(self, register: RegisterTarget) -> None:
            register("tally", setup)
            register("inbox tally", setup)
            register("broken", broken)
            register("plugins", setup)  # a built-in's name: left out
            register("nowhere tally", setup)  # no such parent command

    with registered_plugin(Plugin(), "test-commands"):
        assert registry().commands["inbox tally"].plugin == "test-commands"
        assert main(["tally", "--times", "2"]) == 3
        assert "counted counted" in capsys.readouterr().out
        assert main(["inbox", "tally"]) == 3
        # The parent command keeps working without a subcommand.
        assert main(["inbox", "--path", "/nonexistent/inbox.sqlite3"]) == 0
        assert main(["broken"]) == 2
        err = caplog.text
        assert "'broken' of plugin 'test-commands' could not be set up (RuntimeError" in err
        assert "'plugins' of plugin 'test-commands': the name is taken" in err
        assert "there is no command 'nowhere'" in err
        main(["--help"])
        assert "Count the open questions loudly." in capsys.readouterr().out
        assert main(["plugins"]) == 0
    assert "tally" not in registry().commands


def test_hook_register_identity_providers() -> None:
    from agent_wait.core import identity_providers

    class Provider:
        def identify(self, request: object) -> str | None:
            return None

    def failing() -> object:
        raise ValueError("no issuer configured")

    class Plugin:
        @hookimpl
        def register_identity_providers(self, register: RegisterTarget) -> None:
            register("corp", Provider)

    class Broken:
        @hookimpl
        def register_identity_providers(self, register: RegisterTarget) -> None:
            register("broken", failing)

    with registered_plugin(Plugin(), "test-sso"):
        assert registry().identity_providers["corp"].plugin == "test-sso"
        built = identity_providers()
        assert list(built) == ["corp"]
        assert isinstance(built["corp"], Provider)
        with (
            registered_plugin(Broken(), "test-sso-broken"),
            pytest.raises(ConfigError, match="'broken' of plugin 'test-sso-broken': no issuer"),
        ):
            identity_providers()
    assert "corp" not in registry().identity_providers
    assert identity_providers() == {}


def test_hook_register_inbox_routes() -> None:
    from agent_wait.core import inbox_routes

    seen: list[dict[str, Any]] = []

    def routes(**arguments: Any) -> list[str]:
        seen.append(arguments)
        return ["/callback"]

    class Plugin:
        @hookimpl
        def register_inbox_routes(self, register: RegisterTarget) -> None:
            register("chat", routes)
            register("broken", "agent_wait_no_such_module:routes")

    installed = set(inbox_routes())  # agent-wait-slack's, when it is installed
    with registered_plugin(Plugin(), "test-inbox-routes"):
        assert registry().inbox_routes["chat"].plugin == "test-inbox-routes"
        found = inbox_routes()
        assert [name for name in found if name not in installed] == ["broken", "chat"]
        assert found["chat"](store="the store", entry=None) == ["/callback"]
        assert seen == [{"store": "the store", "entry": None}]
        # A plugin that cannot import fails only its own routes, when they are built.
        with pytest.raises(ImportError, match="agent_wait_no_such_module"):
            found["broken"](store="the store", entry=None)
    assert set(inbox_routes()) == installed


def test_hook_register_execution_ledgers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_wait.core import PluginNotFoundError, SqliteLedger, configured_ledger
    from agent_wait.core._plugins import execution_ledger

    def beside(path: str) -> SqliteLedger:
        return SqliteLedger(f"{path}.ledger")

    class Plugin:
        @hookimpl
        def register_announcers(self, register: RegisterTarget) -> None:
            register("copy", "agent_wait.core._memory:MemoryAnnounce")

        @hookimpl
        def register_execution_ledgers(self, register: RegisterTarget) -> None:
            register("copy", beside)
            register("wrong", lambda **options: object())

    with registered_plugin(Plugin(), "test-ledgers"):
        assert registry().execution_ledgers["copy"].plugin == "test-ledgers"
        with execution_ledger("copy", path=str(tmp_path / "a")) as ledger:
            assert isinstance(ledger, SqliteLedger)
            assert ledger.path == tmp_path / "a.ledger"
        with pytest.raises(ConfigError, match=r"execution ledger 'copy': .*unexpected keyword"):
            execution_ledger("copy", pth="x")
        with pytest.raises(ConfigError, match="'wrong' factory returned object"):
            execution_ledger("wrong")
        # The first configured announcer with a ledger gives it, with its options.
        entries = f'[{{"use": "log"}}, {{"use": "copy", "path": "{tmp_path / "b"}"}}]'
        monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", entries)
        configured = configured_ledger()
        assert isinstance(configured, SqliteLedger)
        assert configured.path == tmp_path / "b.ledger"
    with pytest.raises(PluginNotFoundError, match="unknown execution ledger 'copy'"):
        execution_ledger("copy")


def test_hook_register_question_stores(tmp_path: Path) -> None:
    from agent_wait.core import PluginNotFoundError, SqliteQuestionStore, question_store
    from agent_wait.host import configured_store

    def sqlite_copy(path: str, table: str = "inbox") -> SqliteQuestionStore:
        return SqliteQuestionStore(path, table=table)

    class Plugin:
        @hookimpl
        def register_question_stores(self, register: RegisterTarget) -> None:
            register("copy", sqlite_copy)
            register("wrong", lambda **options: object())

    with registered_plugin(Plugin(), "test-stores"):
        assert registry().question_stores["copy"].plugin == "test-stores"
        with question_store("copy", path=str(tmp_path / "a.sqlite3")) as store:
            assert isinstance(store, SqliteQuestionStore)
            assert store.path == tmp_path / "a.sqlite3"
        with pytest.raises(ConfigError, match=r"question store 'copy': .*unexpected keyword"):
            question_store("copy", pth="x")
        with pytest.raises(ConfigError, match="'wrong' factory returned object"):
            question_store("wrong")
        with pytest.raises(ConfigError, match="store: no 'copy' announcer is configured"):
            configured_store("copy")
    with pytest.raises(PluginNotFoundError, match="unknown question store 'copy'"):
        question_store("copy")
    with pytest.raises(ConfigError, match="not a plain name"):
        question_store("os:system")


class Workers:
    """Records what the worker hooks see, and the worker's figures while it runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ServeStatus]] = []
        self.seen: list[tuple[int, int, bool]] = []

    @hookimpl
    def worker_started(self, status: ServeStatus) -> None:
        self.calls.append(("started", status))

    @hookimpl
    def worker_stopped(self, status: ServeStatus) -> None:
        self.calls.append(("stopped", status))


def test_hook_worker_started(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    recorder = Workers()
    messages = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02)
    messages.send({"thread_id": "t", "input": None})
    stop = threading.Event()

    def handle(message: dict[str, Any]) -> None:
        [(_, status)] = recorder.calls
        # Read while the message is in hand: one running, none acknowledged yet.
        recorder.seen.append((status.in_flight, status.report.acknowledged, status.ready))
        assert status.oldest_waiting() is not None
        stop.set()

    class Broken:
        @hookimpl
        def worker_started(self, status: ServeStatus) -> None:
            raise RuntimeError("meter down")

    with (
        caplog.at_level(logging.ERROR, logger="agent_wait"),
        registered_plugin(recorder, "test-workers"),
        registered_plugin(Broken(), "test-broken-worker"),
    ):
        report = serve_entry(handle, messages, wait=0.05, stop=stop)
    assert recorder.seen == [(1, 0, True)]
    [(started, status), (stopped, same)] = recorder.calls
    assert (started, stopped) == ("started", "stopped")
    assert status is same
    assert status.entry is messages
    assert status.report is report
    assert report.acknowledged == 1
    assert status.in_flight == 0
    assert status.oldest_waiting() is None
    assert "worker_started hook of plugin 'test-broken-worker' failed" in caplog.text


def test_hook_worker_stopped(tmp_path: Path) -> None:
    class Failing(SqliteEntry):
        def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Any]:
            raise ConfigError("entry point 'sqlite': option 'table': no such table")

    recorder = Workers()
    with registered_plugin(recorder, "test-workers"), pytest.raises(ConfigError):
        serve_entry(lambda m: None, Failing(tmp_path / "inbox.sqlite3"), wait=0.05)
    # However the loop ends: a configuration error stops it, and the hook still hears of it.
    assert [name for name, _ in recorder.calls] == ["started", "stopped"]


def test_hook_docs_give_released_versions() -> None:
    # "Added in X" never names a version later than core's own.
    core = tuple(int(part) for part in version("agent-wait-core").split(".")[:2])
    sources = {
        "docs/plugins/hooks.md": HOOKS_DOC.read_text(encoding="utf-8"),
        "hookspecs": inspect.getsource(hookspecs),
    }
    for where, text in sources.items():
        added = re.findall(r"[Aa]dded in (\d+)\.(\d+)\b", text)
        assert added, where
        for major, minor in added:
            assert (int(major), int(minor)) <= core, f"{where} names {major}.{minor}"


def test_hook_agent_wait_approvers(tmp_path: Path) -> None:
    seen: list[str] = []

    class Directory:
        @hookimpl
        def agent_wait_approvers(self, question: WaitEnvelope) -> list[str] | None:
            seen.append(question.question_id)
            return ["carol@example.com"] if question.tags.get("team") == "payments" else None

    class OldPlugin:
        """A plugin written before the hook: it does not implement it."""

        @hookimpl
        def adjust_envelope(self, envelope: WaitEnvelope) -> None:
            return None

    inbox = tmp_path / "inbox.sqlite3"
    for question_id, tags in (("paid", {"team": "payments"}), ("free", {})):
        publish(
            [Question(question_id=question_id, question={}, policy=WaitPolicy(tags=tags))],
            "t",
            SqliteAnnounce(inbox),
            strict=True,
        )
    bob = Identity(subject="bob@example.com", source="proxy")
    with (
        registered_plugin(Directory(), "test-directory"),
        registered_plugin(OldPlugin(), "test-old-plugin"),
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as to_host,
    ):
        with pytest.raises(NotAnApprover, match=r"its approvers are carol@example\.com"):
            answer("paid", "approve", identity=bob, store=store, entry=to_host)
        answer("free", "approve", identity=bob, store=store, entry=to_host)
    assert seen == ["paid", "free"]
