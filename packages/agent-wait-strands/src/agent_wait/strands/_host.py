"""The Strands host in one call, on core's host state machine: run or resume, then publish.

After every run of a single ``Agent`` it makes, :func:`handle_message` keeps in the agent's
state (``agent.state``, saved in the session beside the messages) an index of the history's
tool use ids. Given the session repository, it reads that index and the interrupt state from
the session's agent record without building the Agent, which would restore every message: an
answer or start message that runs nothing then costs the same on a long session as on a short
one.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import uuid
import weakref
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Unpack, cast

import agent_wait.host as core_host
from agent_wait.core import (
    Announce,
    Answer,
    Handled,
    InvalidAnswer,
    Question,
    StartMessage,
    storable_problem,
)
from agent_wait.host import (
    AsyncStreamed,
    AsyncStreamingHost,
    MessageOptions,
    Ran,
    Streamed,
    StreamingHost,
    Waiting,
)
from agent_wait.host.adapter import IN_DOUBT_FUNCTION, last_messages, with_asker
from agent_wait.strands import _compat
from agent_wait.strands._adapter import (
    INTERRUPT_PREFIX,
    Site,
    node_questions,
    question_of,
    questions_in,
    questions_of,
    running,
)
from agent_wait.strands._bridge import aclose, iterate
from agent_wait.strands._recovery import interrupt_state, responses_cleared_on_failure
from strands import Agent
from strands.agent.agent_result import AgentResult
from strands.hooks import AfterInvocationEvent, BeforeInvocationEvent
from strands.interrupt import Interrupt
from strands.multiagent.base import MultiAgentBase, MultiAgentResult, Status
from strands.session.file_session_manager import FileSessionManager
from strands.session.session_repository import SessionRepository
from strands.types.content import Message
from strands.types.session import decode_bytes_values

logger = logging.getLogger(__name__)

ASKED_KEY = "agent_wait_asked"
"""The ``agent.state`` key of the index: the history's tool use ids, one per line."""

RUNNING_KEY = "agent_wait_running"
"""The ``agent.state`` key set while a run is under way: saved with its first message, removed
when the run reaches its end (finished or parked). Found in a session, a run was cut short."""

Runner = Agent | MultiAgentBase
"""What a thread runs: one agent, or a multi-agent ``Swarm`` or ``Graph``."""

AgentFactory = Callable[[str], "Runner | Awaitable[Runner]"]

RunResult = AgentResult | MultiAgentResult


def interrupt_responses(*answers: Answer | Mapping[str, Any]) -> list[dict[str, Any]]:
    """Build the Strands resume prompt from answer messages.

    Args:
        *answers: Answers in the recommended shape (``{"thread_id", "question_id", "answer"}``,
            or :class:`~agent_wait.core.Answer`); ``answer`` is passed on verbatim.

    Returns:
        ``[{"interruptResponse": {"interruptId": question_id, "response": answer}}, ...]``, the
        list ``agent(...)`` resumes with.

    Raises:
        ValueError: An answer lacks ``question_id`` or ``answer``, or its ``answer`` is null
            (Strands treats a null response as no answer and asks again).
        InvalidAnswer: The session could not keep an answer unchanged (see
            :func:`~agent_wait.core.storable_problem`).
    """
    responses: list[dict[str, Any]] = []
    for index, item in enumerate(answers):
        data: Mapping[str, Any] = item.model_dump() if isinstance(item, Answer) else item
        question_id = data.get("question_id")
        if not isinstance(question_id, str) or not question_id:
            raise ValueError(
                f"answers[{index}].question_id: expected a non-empty string, got {question_id!r}"
            )
        if "answer" not in data:
            raise ValueError(f"answers[{index}].answer: missing (question_id {question_id!r})")
        if data["answer"] is None:
            raise ValueError(
                f"answers[{index}].answer: null for question_id {question_id!r}; Strands treats a "
                "null response as no answer"
            )
        problem = storable_problem(data["answer"], f"answers[{index}].answer")
        if problem:
            raise InvalidAnswer(problem)
        responses.append(
            {"interruptResponse": {"interruptId": question_id, "response": data["answer"]}}
        )
    return responses


@dataclass(frozen=True)
class _Parked:
    """Where a thread's agent stands, read before anything runs."""

    activated: bool
    interrupts: dict[str, Interrupt]

    @property
    def pending(self) -> list[Interrupt]:
        # Strands keeps a cycle's answered interrupts (response set) until the cycle ends.
        if not self.activated:
            return []
        return [i for i in self.interrupts.values() if i.response is None]


def _parked(runner: Runner) -> _Parked:
    # Reading the interrupt state is what lets us refuse a duplicate answer that Strands would
    # silently accept.
    state = interrupt_state(runner)
    return _Parked(bool(state.activated), dict(cast("dict[str, Interrupt]", state.interrupts)))


_HOOK_PREFIX = "v1:before_node_call:"


def _histories(runner: Runner) -> list[list[Any]]:
    """Every conversation the runner holds.

    The agent's, or each agent node's and each parked node's saved one (a multi-agent run keeps
    a parked node's messages in its interrupt state).
    """
    if isinstance(runner, Agent):
        return [runner.messages]
    nodes: dict[str, Any] = getattr(runner, "nodes", {})
    histories = [n.executor.messages for n in nodes.values() if isinstance(n.executor, Agent)]
    context: dict[str, Any] = interrupt_state(runner).context
    for saved in context.values():
        if isinstance(saved, dict) and "messages" in saved:
            histories.append(cast("dict[str, Any]", saved)["messages"])
    return cast("list[list[Any]]", histories)


def _asked_earlier(runner: Runner, question_id: str) -> bool:
    # Tool and hook interrupt ids embed the toolUseId (`v1:tool_call:<toolUseId>:<uuid>`). A
    # question the thread moved past is gone from the interrupt state, but its tool call is still
    # in the history: that tells a late answer from one for a question never asked. Best effort
    # (a trimmed history, or a multi-agent run that finished and reset its nodes, reads as
    # unknown); either way nothing runs.
    for history in _histories(runner):
        for message in history:
            for block in message["content"]:
                tool_use = block.get("toolUse")
                if tool_use is not None and f":{tool_use['toolUseId']}:" in question_id:
                    return True
    if isinstance(runner, MultiAgentBase) and question_id.startswith(_HOOK_PREFIX):
        # A BeforeNodeCallEvent hook's id is `v1:before_node_call:<uuid5(node id)>:<uuid5(name)>`:
        # the same on every visit, so one naming a node of this run is one it can ask.
        nodes: dict[str, Any] = getattr(runner, "nodes", {})
        node_part = question_id[len(_HOOK_PREFIX) :].partition(":")[0]
        return any(str(uuid.uuid5(uuid.NAMESPACE_OID, node)) == node_part for node in nodes)
    return False


def _tool_use_ids(agent: Agent) -> list[str]:
    return [
        block["toolUse"]["toolUseId"]
        for message in agent.messages
        for block in message["content"]
        if "toolUse" in block
    ]


def _indexed_earlier(index: str, question_id: str) -> bool:
    # The test of _asked_earlier on the index: every id found between two colons of the
    # question id is looked up, a substring search whatever the length of the history.
    colons = [i for i, c in enumerate(question_id) if c == ":"]
    return any(
        f"\n{question_id[start + 1 : end]}\n" in index
        for n, start in enumerate(colons)
        for end in colons[n + 1 :]
    )


_INDEXED: weakref.WeakSet[Agent] = weakref.WeakSet()


def _indexing(runner: Runner) -> Runner:
    """``runner``; an Agent on a session keeps its history's tool use ids in its state.

    Strands calls ``AfterInvocationEvent`` callbacks in reverse order of registration: this one,
    added after the session manager's, runs first, so the session manager's own save at the end
    of the run writes the index with the rest of the agent record (no extra write). The same
    state marks a run under way (:data:`RUNNING_KEY`), saved with the run's first message.
    """
    if (
        isinstance(runner, Agent)
        and _compat.session_manager(runner) is not None
        and runner not in _INDEXED
    ):
        runner.hooks.add_callback(BeforeInvocationEvent, _set_running)
        runner.hooks.add_callback(AfterInvocationEvent, _set_index)
        _INDEXED.add(runner)
    return runner


def _set_running(event: BeforeInvocationEvent) -> None:
    event.agent.state.set(RUNNING_KEY, True)


def _set_index(event: AfterInvocationEvent) -> None:
    agent = event.agent
    if event.result is not None:
        # The run reached its end. One that raised keeps the mark: it stopped short, as a
        # killed one does, and its history may have work left (see _Host.unfinished).
        agent.state.delete(RUNNING_KEY)
    ids = _tool_use_ids(agent)
    # An id with a line break cannot be looked up in the index: without one, read in full.
    if any("\n" in i for i in ids):
        agent.state.delete(ASKED_KEY)
    else:
        index = "\n" + "".join(f"{i}\n" for i in ids)
        if agent.state.get(ASKED_KEY) != index:
            agent.state.set(ASKED_KEY, index)


def _prompt(value: Any) -> Any:
    """Turn a start message's ``input`` into a Strands prompt.

    Text, content-block or message lists and None (continue the conversation) are Strands
    prompts already; any other JSON (``{"order_id": ..., "amount": ...}``) becomes
    its JSON text.
    """
    if value is None or isinstance(value, str | list):
        return cast("Any", value)
    return json.dumps(value, ensure_ascii=False)


def _asked(thread: _Thread, question_id: str) -> bool:
    if isinstance(thread.agent, MultiAgentBase) and _multi_agent_status(thread.agent) is (
        Status.EXECUTING
    ):
        # A Swarm or Graph restored mid-run keeps no finished node agent's history (a Swarm
        # saves only what a parked node holds), so an answer of its run cannot be told from one
        # it never asked: either way, what the message can do is continue the run.
        return True
    # Strands itself would raise for an answer not in the interrupt state (KeyError), or, while
    # another interrupt of the same cycle is pending, silently take the answer again. A finished
    # Swarm or Graph would even run its whole task again on the stray answer.
    parked = thread.parked
    if parked.activated and question_id in parked.interrupts:
        return True
    if thread.agent is None:
        assert thread.index is not None
        return _indexed_earlier(thread.index, question_id)
    return _asked_earlier(thread.agent, question_id)


@dataclass(frozen=True)
class _Thread:
    """A thread with its runner built, or read from its session record (built to run)."""

    thread_id: str
    parked: _Parked
    agent: Runner | None
    index: str | None = None


def _agent_record(
    repository: SessionRepository, session_id: str, agent_id: str
) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The session's agent record's ``state`` and private ``_internal_state``, or None.

    Strands 1.62 keeps the interrupt state in the record's private part (see interrupt_state).
    """
    if _plain_file_repository(repository):
        # FileSessionManager.read_agent builds the whole SessionAgent with ``from_dict``, which
        # looks up the dataclass's signature once per key: most of the read. The same file,
        # read with the repository's own helpers (path checks, symlink refusal), gives the two
        # parts this host needs, decoded as from_dict decodes them.
        path = _compat.agent_file(repository, session_id, agent_id)
        if not os.path.exists(path):
            return None
        data = _compat.read_file(repository, path)
        if isinstance(data, dict):
            fields = cast("dict[str, Any]", data)
            state, internal = fields.get("state"), fields.get("_internal_state", {})
            if (
                fields.keys() >= _RECORD_FIELDS
                and isinstance(state, dict)
                and isinstance(internal, dict)
            ):
                return (
                    cast("Mapping[str, Any]", decode_bytes_values(state)),
                    cast("Mapping[str, Any]", decode_bytes_values(internal)),
                )
        # Not a record from_dict would take: read_agent raises or reads it as it does.
    record = repository.read_agent(session_id, agent_id)
    if record is None:
        return None
    return record.state, _compat.record_internal_state(record)


_RECORD_FIELDS = frozenset(("agent_id", "state", "conversation_manager_state"))
"""The fields a SessionAgent cannot be built without."""


def _plain_file_repository(repository: SessionRepository) -> bool:
    # A subclass that reads agents its own way is read through its read_agent.
    return (
        isinstance(repository, FileSessionManager)
        and type(repository).read_agent is FileSessionManager.read_agent
        and _compat.reads_agent_files(repository)
    )


def _from_session(
    repository: SessionRepository | None, agent_id: str, thread_id: str
) -> _Thread | None:
    """The thread read from its session's agent record, or None when it has no index there."""
    if repository is None:
        return None
    record = _agent_record(repository, thread_id, agent_id)
    index = None if record is None else record[0].get(ASKED_KEY)
    if record is None or not isinstance(index, str) or record[0].get(RUNNING_KEY):
        return None  # a run cut short: its history says what is left, so build the agent
    data = record[1].get("interrupt_state")
    state = _compat.InterruptState() if data is None else _compat.InterruptState.from_dict(data)
    interrupts = state.interrupts
    if not all(_indexed_earlier(index, i) for i in interrupts):
        return None  # a run outside handle_message asked them: the index is behind, read in full
    return _Thread(thread_id, _Parked(bool(state.activated), dict(interrupts)), None, index)


_UNNAMED = "Strands Agents"
"""The name Strands gives an agent built without one: not worth showing as the asker."""


def _said(message: Message) -> tuple[str, str] | None:
    """A message's role and text for a question's context (tool uses and results left out)."""
    texts = [block["text"] for block in message["content"] if "text" in block]
    return (message["role"], "\n".join(texts)) if texts else None


def _asked_by(questions: list[Question], runner: Runner | None) -> list[Question]:
    """``questions`` with the asker: Strands, the agent's name and shared messages if built."""
    if not isinstance(runner, Agent):  # a Swarm's or Graph's questions name their node
        return with_asker(questions, "strands")
    name = None if runner.name == _UNNAMED else runner.name
    return with_asker(questions, "strands", name, last_messages(runner.messages, _said))


class _Host:
    """What Strands adds to core's host: the agent's interrupt state, its prompts."""

    def __init__(
        self,
        agent_factory: Callable[[str], Any],
        prompt: Callable[[Any], Any],
        session_repository: SessionRepository | None = None,
        agent_id: str = "default",
    ) -> None:
        self.agent_factory = agent_factory
        self.prompt = prompt
        self.session_repository = session_repository
        self.agent_id = agent_id
        # The thread's agent or Swarm/Graph, once loaded (one host per message).
        self.runner: Runner | None = None

    def waiting(self, thread: _Thread) -> Waiting:
        runner = thread.agent
        if isinstance(runner, MultiAgentBase):
            asked = node_questions(thread.parked.pending, _node_messages(runner), sites(runner))
            return Waiting(_asked_by(asked, runner))
        # Read from the session record, the agent is not built: no messages to find the calls
        # in, so a republished question carries no tool call context, nor the agent's name.
        messages = runner.messages if runner is not None else ()
        return Waiting(_asked_by(questions_of(thread.parked.pending, messages), runner))

    def unfinished(self, thread: _Thread) -> bool:
        # A single agent whose history ends with work for the model (a prompt or tool results
        # it never answered) or tool calls with no results: a run stopped short (a worker
        # killed, or a run that raised). Read from the session record, the thread's last run
        # reached its end (no RUNNING_KEY there). A Swarm or Graph restored from its session
        # still executing, with nodes left to run: its run was cut short after a node's state
        # was saved (Strands saves it after every node).
        runner = thread.agent
        if isinstance(runner, MultiAgentBase):
            return not thread.parked.pending and _multi_agent_status(runner) is Status.EXECUTING
        if not isinstance(runner, Agent) or not runner.messages:
            return False
        last = runner.messages[-1]
        return last["role"] == "user" or any("toolUse" in block for block in last["content"])

    def forgets(self, thread: _Thread) -> str | None:
        runner = thread.agent
        if runner is None or _persisted(runner):  # None: read from its session record
            return None
        return (
            f"its {type(runner).__name__} has no session manager, so what it asked lived only "
            "in the memory of the process that ran it: a question asked by a process that "
            "ended cannot be answered (start the thread again; give the agent a session "
            "manager for runs that outlive a worker)"
        )

    def check(self, thread: _Thread, answer: Answer) -> Any:
        if answer.answer is None:
            raise InvalidAnswer(
                "the answer is null, which Strands treats as no answer (it would ask again); "
                "send a JSON value"
            )
        asked = thread.parked.interrupts.get(answer.question_id)
        if asked is not None and asked.name.startswith(INTERRUPT_PREFIX):
            _check_in_doubt(question_of(asked), answer.answer)
        return answer.answer

    def questions_in(self, result: RunResult) -> list[Question]:
        runner = self.runner
        if isinstance(result, MultiAgentResult) and isinstance(runner, MultiAgentBase):
            # The result holds no parked node's messages; the run's node agents do.
            asked = questions_in(result)
            if not asked:
                return []
            nodes = node_questions(result.interrupts, _node_messages(runner), sites(runner))
            return _asked_by(nodes, runner)
        asked = questions_in(result)
        return _asked_by(asked, runner) if asked else asked

    def built(self, agent: Runner) -> Runner:
        self.runner = agent
        return agent


def _multi_agent_status(runner: MultiAgentBase) -> Status | None:
    # A Swarm keeps it as completion_status, a Graph as status; restored from the session
    # only when the saved run had nodes left (Strands resets a run that ended).
    state: Any = getattr(runner, "state", None)
    status: object = getattr(state, "completion_status", getattr(state, "status", None))
    return status if isinstance(status, Status) else None


def _continuation(runner: Runner) -> Any:
    """The prompt that continues ``runner``'s unfinished run (see ``_Host.unfinished``).

    An Agent continues from its history with no prompt. A Swarm or Graph restored to resume
    runs its saved task from its saved next nodes, whatever task it is given. One saved while
    its interrupts were still active, every one answered (the node that asked took the answers
    and finished; Strands deactivates them only when the run ends), would run only the nodes
    that asked again: they are deactivated first, as the run's end would have.
    """
    if isinstance(runner, Agent):
        return None
    state = interrupt_state(runner)
    if state.activated:
        state.deactivate()
    return cast("Any", getattr(getattr(runner, "state", None), "task", ""))


def _check_in_doubt(question: Question, answer: Any) -> None:
    # Strands hands the answer to the tool, which takes anything but yes for no: refused here,
    # before the resume, a wrong answer to an in-doubt question never runs the body again.
    asked: object = question.question
    if not isinstance(asked, Mapping):
        return
    asked = cast("Mapping[str, Any]", asked)
    if asked.get("function") != IN_DOUBT_FUNCTION:
        return
    action = (
        cast("Mapping[str, Any]", answer).get("action") if isinstance(answer, Mapping) else None
    )
    allowed = question.policy.allowed_actions
    if action not in allowed:
        raise InvalidAnswer(
            f"answer.action: this in-doubt question takes one of {list(allowed)} "
            f"({{'action': 'yes'}}: it happened, {{'action': 'no'}}: run it once), got {answer!r}"
        )


def sites(runner: MultiAgentBase, path: tuple[str, ...] = ()) -> dict[str, Site]:
    """Where each interrupt the run recorded was raised, by interrupt id.

    A parked node's entry in the run's interrupt state names its interrupts (a Graph keeps
    their ids, a Swarm and a Graph keep a node agent's interrupt state), whether the run is
    the one that parked or was restored from its session. A node that is itself a Swarm or
    Graph is walked into through its own interrupt state; Strands saves that only in memory
    (a Graph saves agent nodes' state alone), so a nested run restored from the session
    names only the outer node.
    """
    nodes: Mapping[str, Any] = getattr(runner, "nodes", {})
    saved: Mapping[str, Any] = interrupt_state(runner).context or {}
    found: dict[str, Site] = {}
    for node_id, node in nodes.items():
        here = (*path, node_id)
        executor = getattr(node, "executor", None)
        kept: object = saved.get(node_id)
        entry: Mapping[str, Any] = (
            cast("Mapping[str, Any]", kept) if isinstance(kept, Mapping) else {}
        )
        agent_state: Mapping[str, Any] = entry.get("interrupt_state") or {}
        ids: list[str] = [*entry.get("interrupt_ids", ()), *agent_state.get("interrupts", {})]
        if isinstance(executor, MultiAgentBase):
            found.update({i: Site(here) for i in ids})
            found.update(sites(executor, here))  # the nested run knows its own node, if live
            continue
        messages: Sequence[Any] = getattr(executor, "messages", None) or entry.get("messages", ())
        if isinstance(executor, Agent):
            ids += list(interrupt_state(executor).interrupts)
        found.update({i: Site(here, messages) for i in ids})
    return found


def _node_messages(runner: MultiAgentBase) -> dict[str, Any]:
    """Each node agent's messages, by node id (a nested Swarm or Graph has none).

    A Swarm restored from its session keeps a parked node's messages in its interrupt state's
    context until the node runs again; its agents are still empty then.
    """
    nodes: Mapping[str, Any] = getattr(runner, "nodes", {})
    saved: Mapping[str, Any] = interrupt_state(runner).context or {}
    found: dict[str, Any] = {}
    for node_id, node in nodes.items():
        messages = getattr(getattr(node, "executor", None), "messages", ())
        kept: object = saved.get(node_id)
        if not messages and isinstance(kept, Mapping):
            messages = cast("Mapping[str, Any]", kept).get("messages", ())
        found[node_id] = messages
    return found


def _responses(answers: Mapping[str, Any]) -> Any:
    # Any: the dicts are Strands' InterruptResponseContent, which its types cannot see. Core
    # checked each answer (storable) and the host's check refused null ones: what
    # interrupt_responses checks for other callers.
    return [
        {"interruptResponse": {"interruptId": question_id, "response": answer}}
        for question_id, answer in answers.items()
    ]


class _SyncHost(_Host, StreamingHost[_Thread, RunResult]):
    def load(self, thread_id: str) -> _Thread:
        read = _from_session(self.session_repository, self.agent_id, thread_id)
        if read is not None:
            return read
        agent = self._agent(thread_id)
        return _Thread(thread_id, _parked(agent), agent)

    def _agent(self, thread_id: str) -> Runner:
        return self.built(_checked_agent(self.agent_factory(thread_id), thread_id))

    def _runner(self, thread: _Thread) -> Runner:
        return _indexing(thread.agent or self._agent(thread.thread_id))

    def asked(self, thread: _Thread, question_id: str) -> bool:
        return _asked(thread, question_id)

    def start(self, thread: _Thread, message: StartMessage) -> RunResult:
        runner = self._runner(thread)
        with running(thread.thread_id, runner):
            return runner(self.prompt(message.input))

    def proceed(self, thread: _Thread) -> RunResult:
        # An Agent with no prompt runs the tool calls the history ends with, else calls the
        # model; a Swarm or Graph runs on from its saved node.
        runner = self._runner(thread)
        with running(thread.thread_id, runner):
            return runner(_continuation(runner))

    def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> RunResult:
        agent = self._runner(thread)
        with (
            running(thread.thread_id, agent),
            responses_cleared_on_failure(agent, answers) as checked,
        ):
            return checked(agent(_responses(answers)))

    def stream_start(self, thread: _Thread, message: StartMessage) -> Iterator[Any]:
        return self._stream(thread, self.prompt(message.input), ())

    def stream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> Iterator[Any]:
        return self._stream(thread, _responses(answers), answers)

    def _stream(self, thread: _Thread, prompt: Any, answers: Iterable[str]) -> Iterator[Any]:
        # One generator from the consumer to Strands' stream: closing it (a consumer that stops
        # early) closes Strands' stream first, then clears the responses, in this order.
        agent = self._runner(thread)
        result: Any = None
        with (
            running(thread.thread_id, agent),
            responses_cleared_on_failure(agent, answers) as checked,
        ):
            with closing(iterate(lambda: agent.stream_async(prompt))) as events:
                for event in events:
                    result = _result_of(event, result)
                    yield event
            result = checked(result)
        yield Ran(result)


class _AsyncHost(_Host, AsyncStreamingHost[_Thread, RunResult]):
    async def load(self, thread_id: str) -> _Thread:
        read = _from_session(self.session_repository, self.agent_id, thread_id)
        if read is not None:
            return read
        agent = await self._agent(thread_id)
        return _Thread(thread_id, _parked(agent), agent)

    async def _agent(self, thread_id: str) -> Runner:
        built = self.agent_factory(thread_id)
        return self.built(
            _checked_agent(await built if inspect.isawaitable(built) else built, thread_id)
        )

    async def _runner(self, thread: _Thread) -> Runner:
        return _indexing(thread.agent or await self._agent(thread.thread_id))

    async def asked(self, thread: _Thread, question_id: str) -> bool:
        return _asked(thread, question_id)

    async def start(self, thread: _Thread, message: StartMessage) -> RunResult:
        runner = await self._runner(thread)
        with running(thread.thread_id, runner):
            return await runner.invoke_async(self.prompt(message.input))

    async def proceed(self, thread: _Thread) -> RunResult:
        runner = await self._runner(thread)
        with running(thread.thread_id, runner):
            return await runner.invoke_async(_continuation(runner))

    async def resume(self, thread: _Thread, answers: Mapping[str, Any]) -> RunResult:
        agent = await self._runner(thread)
        with (
            running(thread.thread_id, agent),
            responses_cleared_on_failure(agent, answers) as checked,
        ):
            return checked(await agent.invoke_async(_responses(answers)))

    def astream_start(self, thread: _Thread, message: StartMessage) -> AsyncIterator[Any]:
        return self._astream(thread, self.prompt(message.input), ())

    def astream_resume(self, thread: _Thread, answers: Mapping[str, Any]) -> AsyncIterator[Any]:
        return self._astream(thread, _responses(answers), answers)

    async def _astream(
        self, thread: _Thread, prompt: Any, answers: Iterable[str]
    ) -> AsyncIterator[Any]:
        # See _SyncHost._stream: an async generator left early is otherwise closed by the event
        # loop's finalizer, later, outside the task that ran it.
        agent = await self._runner(thread)
        events = agent.stream_async(prompt)
        result: Any = None
        with (
            running(thread.thread_id, agent),
            responses_cleared_on_failure(agent, answers) as checked,
        ):
            try:
                async for event in events:
                    result = _result_of(event, result)
                    yield event
            finally:
                await aclose(events)
            result = checked(result)
        yield Ran(result)


def _result_of(event: Any, result: Any) -> Any:
    # Strands' last event carries the run's result under "result" (an AgentResult, or a
    # MultiAgentResult for a Swarm or Graph; a node's own result is nested under its event).
    if isinstance(event, dict) and "result" in event:
        return cast("dict[str, Any]", event)["result"]
    return result


def _session_id(runner: Runner) -> str | None:
    if isinstance(runner, Agent):
        return runner.session_id
    manager = getattr(runner, "session_manager", None)
    session_id = getattr(manager, "session_id", None)
    return session_id if isinstance(session_id, str) else None


def _persisted(runner: Runner) -> bool:
    if isinstance(runner, Agent):
        return _compat.session_manager(runner) is not None
    return getattr(runner, "session_manager", None) is not None


def _checked_agent(agent: object, thread_id: str) -> Runner:
    if not isinstance(agent, Agent | MultiAgentBase):
        raise TypeError(
            f"agent_factory({thread_id!r}) returned {type(agent).__name__}; expected a "
            "strands.Agent, or a strands.multiagent Swarm or Graph"
        )
    session_id = _session_id(agent)
    if session_id != thread_id:
        # Async-mode @wait ids and Strands' own persistence use the session id; a mismatch means
        # the factory ignored thread_id (fine for an in-memory agent cache, wrong otherwise).
        logger.warning(
            "agent_factory(%r) returned a %s with session_id %r; build it with "
            "session_manager=FileSessionManager(session_id=thread_id, ...)",
            thread_id,
            type(agent).__name__,
            session_id,
        )
    return agent


def handle_message(
    agent_factory: Callable[[str], Runner],
    message: Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    prompt: Callable[[Any], Any] = _prompt,
    session_repository: SessionRepository | None = None,
    agent_id: str = "default",
    **options: Unpack[MessageOptions],
) -> Handled:
    """Run or resume a Strands agent for one inbound message, then publish what it parked on.

    The message is an answer (it has ``question_id``) or a start message (see the message
    formats). ``agent_factory(thread_id)`` builds the agent with its persistence, typically
    ``Agent(..., session_manager=FileSessionManager(session_id=thread_id, storage_dir=...))``;
    a fresh instance resumes where the last one parked. It may build a multi-agent ``Swarm`` or
    ``Graph`` instead (with the session manager on the Swarm or Graph): the questions are then
    the interrupts of every node that parked (a ``@wait`` tool inside an agent node, a
    ``BeforeNodeCallEvent`` hook), and each answer resumes the node that asked.

    - A start message runs the agent (``STARTED``), unless the thread is parked: then nothing
      runs and the pending questions are published again under their same ids (``REPUBLISHED``).
    - An answer to a pending question resumes it (``RESUMED``); its ``answer`` is the Strands
      interrupt response, verbatim.
    - An answer to a question no longer pending (already answered, late, or sent again while
      another question of the same cycle is pending, which Strands would silently accept) runs
      nothing (``DUPLICATE``), and the questions the thread waits on now are published again
      (so the redelivery of an answer whose publish failed gets the next question out); one
      for an id the thread never asked runs nothing
      (``UNKNOWN_QUESTION``); a null answer, which Strands reads as no answer, runs nothing
      (``INVALID_ANSWER``).
    - An answer or start message that comes back to a thread that is not parked but whose
      history ends with work left (a prompt, tool results or tool calls the model never
      answered: a worker killed after the session saved them) continues the run with
      ``agent(None)`` (``CONTINUED``); a start's input is not added again.

    Messages of one thread must be handled one at a time (Strands refuses concurrent calls on
    an agent, and two processes would race on its session).

    Args:
        agent_factory: Builds the thread's ``strands.Agent`` (or ``Swarm``, ``Graph``) from its
            thread id.
        message: The inbound message (a mapping, or JSON text or bytes).
        announce: Where to publish: an announcer, several, a registered name, or None for the
            configured default.
        prompt: Turns a start message's ``input`` into the Strands prompt. The default passes
            text, lists and None through and sends any other JSON as its JSON text.
        session_repository: Where the agents' sessions are stored (the ``FileSessionManager``,
            ``S3SessionManager`` or other ``SessionRepository`` the factory's session manager
            uses; any instance over the same storage). Given, a single agent's interrupt
            state and the index of its tool use ids are read from the session's agent record,
            and the agent is built only to run: a duplicate, an unknown answer or a republish
            then does not restore the session's messages. A session without the index (new,
            last run outside ``handle_message``, or a Swarm or Graph) is read by building the
            runner, as without it.
        agent_id: The ``agent_id`` of the factory's agents, to find their record in the session.
        **options: ``strict``, ``reply_to``, ``clock``, ``trust``: see
            :class:`~agent_wait.host.MessageOptions`.

    Returns:
        :class:`~agent_wait.core.Handled`: the outcome, the ``AgentResult`` (a
        ``MultiAgentResult`` for a Swarm or Graph; None when nothing ran), the publish report
        and, when nothing ran, why.

    Raises:
        pydantic.ValidationError: The message is neither an answer nor a start message.
    """
    host = _SyncHost(agent_factory, prompt, session_repository, agent_id)
    return core_host.handle_message(host, message, announce, **options)


async def ahandle_message(
    agent_factory: AgentFactory,
    message: Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    prompt: Callable[[Any], Any] = _prompt,
    session_repository: SessionRepository | None = None,
    agent_id: str = "default",
    **options: Unpack[MessageOptions],
) -> Handled:
    """Async :func:`handle_message`: ``await agent.invoke_async(...)`` and an async publish.

    ``agent_factory`` may be a coroutine function.
    """
    host = _AsyncHost(agent_factory, prompt, session_repository, agent_id)
    return await core_host.ahandle_message(host, message, announce, **options)


def stream_message(
    agent_factory: Callable[[str], Runner],
    message: Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    prompt: Callable[[Any], Any] = _prompt,
    session_repository: SessionRepository | None = None,
    agent_id: str = "default",
    **options: Unpack[MessageOptions],
) -> Streamed:
    """:func:`handle_message` for a sync host that streams: ``agent.stream_async(...)``, iterated.

    Strands streams only asynchronously; the run goes on the private event loop and worker
    thread Strands' own sync ``agent(...)`` uses, and its events are handed over one at a time:
    the run advances as you iterate, like ``async for`` over ``stream_async``. Iterate the result
    with ``for`` for the events Strands yields (text deltas, tool events, a Swarm's or Graph's
    node events, and last the ``{"result": ...}`` event); once the stream ends, the questions
    the run parked on are published and ``.handled`` is the :class:`~agent_wait.core.Handled`.
    Stopping early (``break``) closes Strands' stream and publishes nothing; an answer's
    question is then still pending (the response Strands saved is cleared). The same
    decisions as :func:`handle_message`: a redelivered start, a duplicate or an invalid answer
    yields no events. Arguments as :func:`handle_message`.

    Example::

        run = stream_message(agent_for, message, announce)
        for event in run:
            if "data" in event:
                send_to_ui(event["data"])
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    host = _SyncHost(agent_factory, prompt, session_repository, agent_id)
    return core_host.stream_message(host, message, announce, **options)


def astream_message(
    agent_factory: AgentFactory,
    message: Mapping[str, Any] | str | bytes,
    announce: Announce = None,
    *,
    prompt: Callable[[Any], Any] = _prompt,
    session_repository: SessionRepository | None = None,
    agent_id: str = "default",
    **options: Unpack[MessageOptions],
) -> AsyncStreamed:
    """:func:`ahandle_message` for a host that streams: ``agent.stream_async(...)``.

    Iterate the result with ``async for`` for the events Strands yields (text deltas, tool
    events, a Swarm's or Graph's node events, and last the ``{"result": ...}`` event); once the
    stream ends, the questions the run parked on are published and ``.handled`` is the
    :class:`~agent_wait.core.Handled`. The same decisions as :func:`handle_message`: a
    redelivered start, a duplicate or an invalid answer yields no events. Arguments as
    :func:`handle_message`.

    Example::

        run = astream_message(agent_for, message, announce)
        async for event in run:
            if "data" in event:
                await send_to_ui(event["data"])
        log.info("%s %s", run.handled.outcome, run.handled.question_ids)
    """
    host = _AsyncHost(agent_factory, prompt, session_repository, agent_id)
    return core_host.astream_message(host, message, announce, **options)
