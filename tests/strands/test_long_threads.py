"""An answer or start message that runs nothing is decided from the session, with no Agent built."""

from __future__ import annotations

from pathlib import Path

from strands import Agent
from strands.session import FileSessionManager

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.strands import ahandle_message, astream_message, handle_message
from agent_wait.strands._host import ASKED_KEY  # pyright: ignore[reportPrivateUsage]
from tests.strands.conftest import Threads
from tests.strands.fake_model import ScriptedModel
from tests.strands.test_host import DELETE, REFUND, Tools, only_envelope, reply, start
from tests.strands.test_multiagent import Refunds, SwarmThreads

THREAD = "order-4471"


class Counted:
    """The test's agent factory, counting how often an Agent is built (each restores the session)."""

    def __init__(self, threads: Threads) -> None:
        self.threads = threads
        self.builds = 0

    def __call__(self, thread_id: str) -> Agent:
        self.builds += 1
        return self.threads(thread_id)


def test_duplicate_unknown_and_republish_build_no_agent(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    agents = Counted(Threads(ScriptedModel([REFUND], [DELETE]), tools.all, sessions))
    repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(sessions))

    def handle(message: dict[str, object]) -> Outcome:
        return handle_message(agents, message, inbox, session_repository=repository).outcome

    first = only_envelope(handle_message(agents, start(), inbox, session_repository=repository))
    assert agents.builds == 1
    assert handle(start()) is Outcome.REPUBLISHED
    assert agents.builds == 1

    resumed = handle_message(
        agents, reply(first, {"action": "approve"}), inbox, session_repository=repository
    )
    assert resumed.outcome is Outcome.RESUMED
    second = only_envelope(resumed)
    assert agents.builds == 2

    # The earlier cycle's question, while parked on the later one: the later one goes out again.
    stale = handle_message(
        agents, reply(first, {"action": "reject"}), inbox, session_repository=repository
    )
    assert stale.outcome is Outcome.DUPLICATE
    assert stale.question_ids == [second.question_id]
    unknown = {"thread_id": THREAD, "question_id": "v1:tool_call:nope:x", "answer": 1}
    assert handle(unknown) is Outcome.UNKNOWN_QUESTION
    assert handle(start()) is Outcome.REPUBLISHED
    assert agents.builds == 2

    assert handle(reply(second, {"action": "approve"})) is Outcome.RESUMED
    assert agents.builds == 3
    for envelope in (first, second):
        assert handle(reply(envelope, {"action": "approve"})) is Outcome.DUPLICATE
    assert handle(unknown) is Outcome.UNKNOWN_QUESTION
    assert agents.builds == 3
    assert tools.runs == ["refund order-4471 41000", "delete orders"]


async def test_the_async_host_reads_the_session_too(sessions: Path, inbox: MemoryAnnounce) -> None:
    tools = Tools()
    agents = Counted(Threads(ScriptedModel([REFUND]), tools.all, sessions))
    repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(sessions))
    first = only_envelope(
        await ahandle_message(agents, start(), inbox, session_repository=repository)
    )
    yes = reply(first, {"action": "approve"})
    assert (
        await ahandle_message(agents, yes, inbox, session_repository=repository)
    ).outcome is Outcome.RESUMED
    assert agents.builds == 2
    late = await ahandle_message(agents, yes, inbox, session_repository=repository)
    assert late.outcome is Outcome.DUPLICATE
    assert agents.builds == 2


def test_a_session_without_the_index_or_behind_it_builds_the_agent(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    threads = Threads(ScriptedModel([REFUND]), tools.all, sessions)
    agents = Counted(threads)
    repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(sessions))

    # Parked by plain Strands: the session has no index.
    pending = threads(THREAD)("refund order-4471").interrupts[0].id
    assert ASKED_KEY not in threads(THREAD).state.get()
    unknown = {"thread_id": THREAD, "question_id": "v1:tool_call:nope:x", "answer": 1}
    assert (
        handle_message(agents, unknown, inbox, session_repository=repository).outcome
        is Outcome.UNKNOWN_QUESTION
    )
    assert agents.builds == 1
    answer = {"thread_id": THREAD, "question_id": pending, "answer": {"action": "approve"}}
    assert (
        handle_message(agents, answer, inbox, session_repository=repository).outcome
        is Outcome.RESUMED
    )
    assert ASKED_KEY in threads(THREAD).state.get()  # the run wrote it
    agents.builds = 0

    # Plain Strands parks the thread again: the index does not know its question, so the
    # session is read in full, and the answer found pending.
    again = threads(THREAD)("refund it again").interrupts[0].id
    answer = {"thread_id": THREAD, "question_id": again, "answer": {"action": "approve"}}
    assert (
        handle_message(agents, answer, inbox, session_repository=repository).outcome
        is Outcome.RESUMED
    )
    assert agents.builds == 1
    for late in (pending, again):
        message = {"thread_id": THREAD, "question_id": late, "answer": {"action": "reject"}}
        assert (
            handle_message(agents, message, inbox, session_repository=repository).outcome
            is Outcome.DUPLICATE
        )
    assert agents.builds == 1
    assert tools.runs == ["refund order-4471 41000"] * 2


def test_without_the_repository_the_agent_is_built_as_before(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    agents = Counted(Threads(ScriptedModel([REFUND]), tools.all, sessions))
    first = only_envelope(handle_message(agents, start(), inbox))
    yes = reply(first, {"action": "approve"})
    assert handle_message(agents, yes, inbox).outcome is Outcome.RESUMED
    assert handle_message(agents, yes, inbox).outcome is Outcome.DUPLICATE
    assert agents.builds == 3


async def test_the_streaming_host_reads_the_session_too(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    tools = Tools()
    agents = Counted(Threads(ScriptedModel([REFUND]), tools.all, sessions))
    repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(sessions))
    started = astream_message(agents, start(), inbox, session_repository=repository)
    assert [event async for event in started][-1]["result"].stop_reason == "interrupt"
    envelope = only_envelope(started.handled)
    again = astream_message(agents, start(), inbox, session_repository=repository)
    assert [event async for event in again] == []
    assert again.handled.outcome is Outcome.REPUBLISHED
    assert agents.builds == 1
    yes = reply(envelope, {"action": "approve"})
    resumed = astream_message(agents, yes, inbox, session_repository=repository)
    assert [event async for event in resumed]
    assert resumed.handled.outcome is Outcome.RESUMED
    late = astream_message(agents, yes, inbox, session_repository=repository)
    assert [event async for event in late] == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert agents.builds == 2


def test_a_swarm_keeps_no_index_and_is_decided_as_without_the_repository(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    outcomes: dict[bool, list[Outcome]] = {}
    for given in (True, False):
        storage = sessions / str(given)
        threads = SwarmThreads(storage, Refunds())
        repository = FileSessionManager(session_id="agent-wait-host", storage_dir=str(storage))
        options = {"session_repository": repository} if given else {}
        started = handle_message(threads, {"thread_id": "s-1", "input": "refund"}, inbox, **options)
        [envelope] = started.report.envelopes
        yes = reply(envelope, {"action": "approve"})
        unknown = {"thread_id": "s-1", "question_id": "v1:tool_call:nope:x", "answer": 1}
        outcomes[given] = [
            handle_message(threads, message, inbox, **options).outcome
            for message in (yes, yes, unknown)
        ]
    assert outcomes[True] == outcomes[False]
    assert outcomes[True][0] is Outcome.RESUMED
