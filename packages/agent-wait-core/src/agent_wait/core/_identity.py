"""Who answers: a person as an answer path verified them, and how.

Every answer path (``answer()``, ``agent-wait answer``, the inbox, channels added later) builds
an :class:`Identity` and hands it to :func:`~agent_wait.core.answer`; the answer message then
carries ``answered_by`` (the identity's ``subject``) and ``identity_source`` (how it was
established), and the approver check (``may_answer``) reads its subject and groups.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_wait.core._models import answerer_problem, identity_source_problem

IDENTITY_SOURCES = ("oidc", "proxy", "sso", "api-token", "shared-secret", "local", "cli", "claimed")
"""The sources core's own answer paths record: how an identity was established.

Core's answer paths say ``oidc`` (signed in through OpenID Connect), ``proxy`` (named by a
trusted reverse proxy's header), ``sso`` (named by an identity provider plugin), ``api-token``
(a bearer token), ``shared-secret`` (a name typed beside the inbox's one shared secret: a
single-user setup), ``local`` (the inbox without authentication, on loopback), ``cli`` (the
operating-system login name of the process) and ``claimed`` (a name given as ``by=`` /
``--by``, unverified). A channel plugin names its own source (a short lower-case word).
"""


class Identity(BaseModel):
    """A person who answers, as an answer path established them.

    Attributes:
        subject: Who, stably: an e-mail address, a login, an OIDC subject. Recorded as the
            question's ``answered_by`` and matched against approvers: 1 to 64 characters, no
            control characters.
        name: A display name, when the source gives one.
        groups: Groups the source vouches for (an IdP ``groups`` claim, a proxy's groups
            header); configured groups are added by the approver check, not here.
        source: How the identity was established: a short lower-case word (see
            :data:`IDENTITY_SOURCES` for core's own; a channel names its own).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    name: str | None = None
    groups: frozenset[str] = Field(default_factory=frozenset[str])
    source: str

    @field_validator("subject")
    @classmethod
    def _a_name(cls, value: str) -> str:
        problem = answerer_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("source")
    @classmethod
    def _a_source(cls, value: str) -> str:
        problem = identity_source_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @classmethod
    def of_process(cls) -> Identity:
        """The operating-system login name of this process (``source="cli"``)."""
        try:
            user = getpass.getuser()
        except (OSError, KeyError):  # no login name in some containers
            user = "unknown"
        return cls(subject=user, source="cli")

    @classmethod
    def claimed(cls, by: str) -> Identity:
        """A name given as ``by=``, unverified (``source="claimed"``)."""
        return cls(subject=by, source="claimed")

    def with_groups(self, groups: Iterable[str]) -> Identity:
        """This identity, also in ``groups``."""
        return self.model_copy(update={"groups": self.groups | frozenset(groups)})

    def describe(self) -> str:
        """``alice (oidc)``: for messages."""
        return f"{self.subject} ({self.source})"
