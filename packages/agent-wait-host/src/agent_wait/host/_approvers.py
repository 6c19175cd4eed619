"""Who may answer a question: approvers, approver groups, and separation of duties.

A question's approvers are its policy's ``approvers``, plus ``group:<tag>`` for an
``approver_group`` tag once approvers are configured (an ``[approvers]`` table: until then the
tag is the routing hint it always was), plus whatever installed plugins'
``agent_wait_approvers`` hooks name. None of them: anyone who reaches an answer path may
answer, as before. A person is one of them
when the entry names their identity's subject, or a group their identity carries (an IdP
claim, a proxy header) or the configuration's ``[approvers.groups]`` lists them in.

Groups and the other settings come from the ``[approvers]`` table of the file the announcers
are read from (``agent-wait.toml``, ``AGENT_WAIT_CONFIG``, ``[tool.agent-wait.approvers]``)::

    [approvers]
    admins = ["group:ops"]      # the inbox shows them every question
    allow_by = false            # agent-wait answer --by NAME (an unverified name)

    [approvers.groups]
    finance = ["alice@example.com", "bob@example.com"]
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_wait.core._config import (
    CONFIG_ENV,
    CONFIG_FILE,
    PYPROJECT,
    PYPROJECT_TABLE,
    _read_toml,  # pyright: ignore[reportPrivateUsage]
    _tool_table,  # pyright: ignore[reportPrivateUsage]
)
from agent_wait.core._errors import AgentWaitError, ConfigError
from agent_wait.core._identity import Identity
from agent_wait.core._policy import GROUP_PREFIX, approver_problem

if TYPE_CHECKING:
    from agent_wait.core._models import WaitEnvelope
    from agent_wait.core._store import StoredQuestion

logger = logging.getLogger("agent_wait.host.approvers")

APPROVER_GROUP_TAG = "approver_group"
"""The tag naming the group whose members may answer (``tags={"approver_group": "finance"}``)."""

ALLOW_BY_ENV = "AGENT_WAIT_ALLOW_BY"
"""Set to ``1`` to let ``agent-wait answer --by`` record a name of its own (as ``allow_by``)."""


class ApproverConfig(BaseModel):
    """The ``[approvers]`` table.

    Attributes:
        groups: Group name to its members (identity subjects).
        admins: People and ``group:`` entries the inbox shows every question (answering still
            takes being an approver).
        allow_by: Let ``agent-wait answer --by NAME`` record ``NAME`` (``identity_source``
            ``claimed``) instead of the login name; for a shared service account.
        where: Where it was read from, for messages.
        configured: Whether an ``[approvers]`` table exists; only then does the
            ``approver_group`` tag restrict who may answer.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict[str, tuple[str, ...]])
    admins: tuple[str, ...] = ()
    allow_by: bool = False
    where: str = Field(default="default", exclude=True)
    configured: bool = Field(default=False, exclude=True)

    @field_validator("admins")
    @classmethod
    def _usable_admins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            problem = approver_problem(entry)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("groups")
    @classmethod
    def _usable_groups(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name, members in value.items():
            problem = approver_problem(name) or (
                f"{name!r} is a group name: write it without 'group:'"
                if name.startswith(GROUP_PREFIX)
                else None
            )
            if problem:
                raise ValueError(problem)
            for member in members:
                if member.startswith(GROUP_PREFIX) or approver_problem(member):
                    raise ValueError(
                        f"{name}: members are people such as 'alice@example.com', got {member!r}"
                    )
        return value

    def members(self, group: str) -> tuple[str, ...]:
        """The configured members of ``group`` (none if it is not configured)."""
        return self.groups.get(group, ())


def load_approver_config(
    *, environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> ApproverConfig:
    """The ``[approvers]`` table of the configuration file, or the default (nothing configured).

    Raises:
        ConfigError: The table is malformed; the message names the file and the key.
    """
    env = os.environ if environ is None else environ
    base = Path.cwd() if cwd is None else Path(cwd)
    if env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV]).expanduser()
        path = path if path.is_absolute() else base / path
        candidates = [(path, path.name == PYPROJECT)] if path.is_file() else []
    else:
        candidates = [(base / CONFIG_FILE, False), (base / PYPROJECT, True)]
    table: object = None
    where = "default"
    for path, pyproject in candidates:
        if not path.is_file():
            continue
        data: object = _read_toml(path)
        where = str(path)
        if pyproject:
            data = _tool_table(cast("Mapping[str, Any]", data))
            if not isinstance(data, dict):
                continue
            where = f"{where} [tool.{PYPROJECT_TABLE}]"
        table = cast("dict[str, Any]", data).get("approvers")
        break
    allow_env = env.get(ALLOW_BY_ENV, "").strip().lower() in ("1", "true", "yes")
    if table is None:
        return ApproverConfig(allow_by=allow_env)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [approvers] must be a table, got {table!r}")
    try:
        config = ApproverConfig.model_validate(
            {**cast("dict[str, Any]", table), "where": where, "configured": True}
        )
    except ValidationError as error:
        first = error.errors()[0]
        place = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{where}: approvers.{place}: {first['msg']} (got {first.get('input')!r})"
        ) from None
    return config.model_copy(update={"allow_by": True}) if allow_env else config


def _envelope(question: StoredQuestion | WaitEnvelope) -> WaitEnvelope:
    from agent_wait.core._models import WaitEnvelope

    return question if isinstance(question, WaitEnvelope) else question.envelope


def approvers_of(
    question: StoredQuestion | WaitEnvelope, config: ApproverConfig | None = None
) -> tuple[str, ...] | None:
    """Who may answer ``question``: its approver entries, or None when nothing names any.

    ``config`` (default: :func:`load_approver_config`, read only for a tagged question)
    decides whether the ``approver_group`` tag counts. A stored question the sweeper escalated
    also admits the ``approver_group`` of its ``escalated_to`` tags, on the same terms: it
    widens a question that names approvers, and leaves one that names none open to anyone.

    Raises:
        AgentWaitError: A plugin's ``agent_wait_approvers`` hook failed; nobody can be told
            apart, so the answer is refused rather than let through.
    """
    envelope = _envelope(question)
    named: list[str] = list(envelope.approvers)
    escalated = None if question is envelope else cast("StoredQuestion", question).escalated_to
    group = envelope.tags.get(APPROVER_GROUP_TAG)
    also = (escalated or {}).get(APPROVER_GROUP_TAG)
    configured = (
        bool(group or also)
        and (config if config is not None else load_approver_config()).configured
    )
    if group and configured:
        named.append(GROUP_PREFIX + group)
    named.extend(_from_plugins(envelope))
    if also and configured and named:
        named.append(GROUP_PREFIX + also)
    return tuple(dict.fromkeys(named)) if named else None


def _from_plugins(envelope: WaitEnvelope) -> list[str]:
    from agent_wait.core._plugins import registry

    caller = registry().manager.hook.agent_wait_approvers
    if not caller.get_hookimpls():
        return []
    try:
        results = cast("list[object]", caller(question=envelope))
    except Exception as error:
        logger.exception("agent_wait_approvers hook failed")
        raise AgentWaitError(
            f"the approvers of question {envelope.question_id} could not be looked up (a "
            f"plugin's agent_wait_approvers hook failed: {type(error).__name__}: {error})"
        ) from error
    found: list[str] = []
    for result in results:
        entries = [result] if isinstance(result, str) else result
        if not isinstance(entries, Iterable):
            raise AgentWaitError(
                "agent_wait_approvers: a plugin returned "
                f"{type(result).__name__}, not a list of approvers"
            )
        for entry in cast("Iterable[object]", entries):
            problem = approver_problem(entry)
            if problem:
                raise AgentWaitError(f"agent_wait_approvers: a plugin returned {problem}")
            found.append(cast("str", entry))
    return found


def is_one_of(identity: Identity, entries: Iterable[str], config: ApproverConfig) -> bool:
    """Whether ``identity`` is one of ``entries`` (people, and ``group:`` entries)."""
    subject = identity.subject.casefold()
    groups = {g.casefold() for g in identity.groups}
    for entry in entries:
        if not entry.startswith(GROUP_PREFIX):
            if entry.casefold() == subject:
                return True
            continue
        group = entry.removeprefix(GROUP_PREFIX)
        if group.casefold() in groups:
            return True
        if any(member.casefold() == subject for member in config.members(group)):
            return True
    return False


def may_answer(
    question: StoredQuestion | WaitEnvelope,
    identity: Identity,
    config: ApproverConfig | None = None,
) -> str | None:
    """Why ``identity`` may not answer ``question``, or None if they may.

    Refused: the person who started the run (``started_by``) unless the policy sets
    ``allow_self_approval``; anyone not among the question's approvers, when it names any.

    Args:
        question: The stored question or its envelope.
        identity: Who wants to answer.
        config: The ``[approvers]`` configuration (default: :func:`load_approver_config`,
            read only when a group has to be resolved).
    """
    envelope = _envelope(question)
    if (
        envelope.started_by is not None
        and not envelope.allow_self_approval
        and envelope.started_by.casefold() == identity.subject.casefold()
    ):
        return (
            "they started the run that asked it, and its policy does not allow self-approval "
            "(allow_self_approval)"
        )
    if config is None and (APPROVER_GROUP_TAG in envelope.tags or envelope.approvers):
        config = load_approver_config()
    try:
        named = approvers_of(question, config)
    except AgentWaitError as error:
        return str(error)
    if named is None:
        return None
    if config is None and any(entry.startswith(GROUP_PREFIX) for entry in named):
        config = load_approver_config()
    if is_one_of(identity, named, config or ApproverConfig()):
        return None
    return f"its approvers are {', '.join(named)}"


def may_see(
    question: StoredQuestion | WaitEnvelope, identity: Identity, config: ApproverConfig
) -> bool:
    """Whether the inbox lists ``question`` for ``identity``: an admin, or one who may answer."""
    return (
        is_one_of(identity, config.admins, config) or may_answer(question, identity, config) is None
    )
