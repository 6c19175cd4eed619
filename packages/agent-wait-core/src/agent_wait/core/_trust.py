"""Answers a host can trust: signed reply tokens, expiry enforcement, strict ``allowed_actions``.

Everything here is opt-in and runs in the host state machine before any ``@wait`` body or tool:

- **Signing.** With answer secrets, every published ``reply_with`` carries a ``token``:
  ``v1.<kid>.<fingerprint>.<mac>``. The MAC (HMAC-SHA256, first secret) binds the thread id, the
  question id, a fingerprint of the question as published (its ``source`` and ``question``:
  function and canonical arguments, or the interrupt value) and the ``expires_at`` it was
  published with. A consumer that copies ``reply_with`` and sets ``answer`` sends the token back
  unchanged. An answer without a valid token is ``unauthorized``; an authentic one whose question
  changed since (the call was proposed again with other arguments) is ``stale_approval``.
- **Expiry.** Answers after the question's ``expires_at`` or their own ``valid_until`` are
  accepted (the default), refused (``expired``), or replaced by the question's ``default``.
- **Strict actions.** An answer whose action is not in ``allowed_actions``, or that does not
  match the question's ``answer_schema`` where it declares one, is ``invalid_answer``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast, get_args

from agent_wait.core._models import Answer, Question, format_utc

SECRETS_ENV = "AGENT_WAIT_ANSWER_SECRETS"
"""Comma-separated answer secrets; the first signs, every one verifies."""
EXPIRED_ENV = "AGENT_WAIT_ANSWER_EXPIRED"
"""``accept``, ``refuse`` or ``default``: what the host does with a late answer."""
STRICT_ACTIONS_ENV = "AGENT_WAIT_ANSWER_STRICT_ACTIONS"
"""``1``/``true``: refuse an answer outside ``allowed_actions`` (or a declared ``answer_schema``)."""

TOKEN_KEY = "token"
"""The ``reply_with`` key (and so the answer key) that carries the token."""
EXPIRES_KEY = "expires_at"
"""The ``reply_with`` key that carries the question's ``expires_at`` back to the host."""

MIN_SECRET_LENGTH = 32
"""Characters: a secret shorter than this is refused (an HMAC key is as strong as its secret)."""

Expired = Literal["accept", "refuse", "default"]
_EXPIRED: tuple[str, ...] = get_args(Expired)
_VERSION = "v1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def fingerprint(question: Question) -> str:
    """The fingerprint of a question as published: its ``source`` and ``question`` payload.

    Two questions with the same id but another function, other arguments or another interrupt
    value have different fingerprints (128 bits of SHA-256 over their canonical JSON).
    """
    # Here, not at import: a publish that signs nothing never needs it.
    from agent_wait.core._canonical import canonical_json

    source = None if question.source is None else question.source.function
    text = canonical_json([source, question.question])
    return _b64(hashlib.sha256(text.encode("utf-8")).digest()[:16])


def _key_id(secret: str) -> str:
    # A public name for the key, so the verifier picks it without trying every one.
    return _b64(hashlib.sha256(b"agent-wait answer key\x00" + secret.encode("utf-8")).digest()[:6])


@dataclass(frozen=True)
class AnswerTrust:
    """What a host demands of an answer before anything runs (every option off by default).

    Attributes:
        secrets: Answer secrets (32 characters or more). The first signs every ``reply_with``
            published; every one listed verifies, so a rotation lists the new secret first and
            keeps the old one second until the questions it signed are answered. Empty: no
            signing, and answers need no token. ``secrets_env`` names an environment variable
            holding them instead (comma-separated).
        expired: An answer after the question's ``expires_at`` or its own ``valid_until``:
            ``"accept"`` it (the default), ``"refuse"`` it (outcome ``expired``, the question
            stays answerable) or answer with the question's ``default`` instead.
        strict_actions: Refuse (``invalid_answer``) an answer whose action is not one of the
            question's ``allowed_actions``, or that does not match the question's
            ``answer_schema`` where it declares one.
    """

    secrets: tuple[str, ...] = field(default=(), repr=False)
    expired: Expired = "accept"
    strict_actions: bool = False
    _keys: dict[str, bytes] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        secrets: Iterable[str] = (),
        *,
        secrets_env: str | None = None,
        expired: Expired = "accept",
        strict_actions: bool = False,
    ) -> None:
        if secrets_env is not None:
            if secrets:
                raise ValueError("give secrets or secrets_env, not both")
            secrets = _split(_required_env(secrets_env))
        if isinstance(secrets, str):
            raise TypeError("secrets: expected a list of secrets, got one string")
        listed = tuple(secrets)
        for index, secret in enumerate(listed):
            if not isinstance(secret, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"secrets[{index}]: expected a string, got {type(secret).__name__}")
            if len(secret) < MIN_SECRET_LENGTH:
                # Never the value: it is a secret.
                raise ValueError(
                    f"secrets[{index}]: must be {MIN_SECRET_LENGTH} characters or more, "
                    f"got {len(secret)}"
                )
        if expired not in _EXPIRED:
            raise ValueError(f"expired: expected one of {list(_EXPIRED)}, got {expired!r}")
        keys = {_key_id(s): s.encode("utf-8") for s in listed}
        if len(keys) != len(listed):
            raise ValueError("secrets: the same secret is listed twice")
        object.__setattr__(self, "secrets", listed)
        object.__setattr__(self, "expired", expired)
        object.__setattr__(self, "strict_actions", strict_actions)
        object.__setattr__(self, "_keys", keys)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AnswerTrust:
        """The options from ``AGENT_WAIT_ANSWER_*`` environment variables (unset: off).

        ``AGENT_WAIT_ANSWER_SECRETS`` (comma-separated, the first signs),
        ``AGENT_WAIT_ANSWER_EXPIRED`` and ``AGENT_WAIT_ANSWER_STRICT_ACTIONS``.
        """
        env = os.environ if environ is None else environ
        secrets = _split(env.get(SECRETS_ENV, ""))
        expired = env.get(EXPIRED_ENV, "").strip() or "accept"
        if expired not in _EXPIRED:
            raise ValueError(f"{EXPIRED_ENV}: expected one of {list(_EXPIRED)}, got {expired!r}")
        strict = env.get(STRICT_ACTIONS_ENV, "").strip().lower()
        if strict not in ("", "0", "1", "true", "false"):
            raise ValueError(f"{STRICT_ACTIONS_ENV}: expected true or false, got {strict!r}")
        try:
            return cls(
                secrets, expired=cast("Expired", expired), strict_actions=strict in ("1", "true")
            )
        except ValueError as error:
            raise ValueError(f"{SECRETS_ENV}: {error}") from None

    @property
    def signing(self) -> bool:
        """True when replies are signed and answers must carry a valid token."""
        return bool(self._keys)

    @property
    def marks_expiry(self) -> bool:
        """True when ``reply_with`` carries ``expires_at`` back (signing or expiry enforcement)."""
        return self.signing or self.expired != "accept"

    def reply_extras(
        self, thread_id: str, question: Question, expires_at: str | None
    ) -> dict[str, str]:
        """The keys a published ``reply_with`` carries besides ``thread_id``, ``question_id``, ``answer``."""
        extras: dict[str, str] = {}
        if expires_at is not None and self.marks_expiry:
            extras[EXPIRES_KEY] = expires_at
        if self._keys:
            kid, key = next(iter(self._keys.items()))
            print_ = fingerprint(question)
            mac = _mac(key, thread_id, question.question_id, print_, expires_at)
            extras[TOKEN_KEY] = f"{_VERSION}.{kid}.{print_}.{mac}"
        return extras

    def authenticate(self, answer: Answer) -> str | None:
        """Why the answer's token is not one this host signed for its thread and question, or None.

        The reason names no secret and quotes no answer content.
        """
        token = _extra(answer, TOKEN_KEY)
        if token is None:
            return "the answer carries no token (copy reply_with verbatim)"
        if not isinstance(token, str):
            return f"the token is a {type(token).__name__}, not a string"
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:
            return "the token is malformed"
        _, kid, print_, mac = parts
        key = self._keys.get(kid)
        if key is None:
            return (
                f"the token was signed with key {kid!r}, which this host does not hold (retired?)"
            )
        expires_at = _extra(answer, EXPIRES_KEY)
        if expires_at is not None and not isinstance(expires_at, str):
            return "the token does not match the answer's expires_at"
        expected = _mac(key, answer.thread_id, answer.question_id, print_, expires_at)
        if not hmac.compare_digest(expected, mac):
            return "the token was not signed for this thread and question (forged or copied)"
        return None

    def stale(self, answer: Answer, question: Question) -> bool:
        """True when an authentic token was signed for another version of ``question``."""
        token = _extra(answer, TOKEN_KEY)
        return isinstance(token, str) and token.split(".")[2] != fingerprint(question)

    def undated(self, answer: Answer, question: Question) -> bool:
        """True when ``question`` has a deadline but the answer does not carry it back.

        The host learns ``expires_at`` only from the answer (it is measured from publish time),
        so an answer built without copying ``reply_with`` cannot be checked for lateness.
        """
        return question.policy.timeout is not None and _extra(answer, EXPIRES_KEY) is None

    def late(self, answer: Answer, now: datetime) -> str | None:
        """Why the answer comes too late (its ``valid_until`` or the question's ``expires_at``), or None."""
        stamp = format_utc(now)  # whole-second RFC 3339 UTC text: compares as it sorts
        if answer.valid_until is not None and answer.valid_until <= stamp:
            return f"its valid_until {answer.valid_until} has passed"
        expires_at = _extra(answer, EXPIRES_KEY)
        if isinstance(expires_at, str) and expires_at <= stamp:
            return f"the question expired at {expires_at}"
        return None

    def strict_problem(self, answer: Any, question: Question) -> str | None:
        """Why strict checking refuses ``answer``: no allowed action, or not its declared schema."""
        problem = self.action_problem(answer, question)
        if problem is None and question.answer_schema is not None:
            # Here, not at import: only a host checking answers strictly needs it.
            from agent_wait.core._answer_schema import schema_problem

            problem = schema_problem(question.answer_schema, answer)
        return problem

    def action_problem(self, answer: Any, question: Question) -> str | None:
        """Why ``answer`` names no action in the question's ``allowed_actions``, or None."""
        allowed = list(question.policy.allowed_actions)
        if not allowed:
            return None  # the asker stated none (a foreign interrupt): nothing to hold it to
        if isinstance(answer, list) and answer:
            # An Agent Inbox response: a list of ``{"type": ...}`` objects.
            answer = {"decisions": cast("list[Any]", answer)}
        if isinstance(answer, Mapping):
            mapping = cast("Mapping[str, Any]", answer)
            if "action" in mapping:
                actions: list[Any] = [mapping["action"]]
            elif isinstance(mapping.get("decisions"), list):
                decisions = cast("list[Any]", mapping["decisions"])
                actions = [
                    cast("Mapping[str, Any]", d).get("type") if isinstance(d, Mapping) else None
                    for d in decisions
                ]
            else:
                return f"the answer names no action (expected {{'action': one of {allowed}}})"
        else:
            return f"the answer names no action (expected {{'action': one of {allowed}}})"
        for action in actions:
            if action not in allowed:
                return f"action {action!r} is not one of allowed_actions {allowed}"
        return None


def _split(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _required_env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ValueError(f"secrets_env: the environment variable {name} is not set")
    return value


def _extra(answer: Answer, key: str) -> Any:
    return (answer.model_extra or {}).get(key)


def _mac(key: bytes, thread_id: str, question_id: str, print_: str, expires_at: str | None) -> str:
    from agent_wait.core._canonical import canonical_json

    # Canonical JSON of a list: unambiguous whatever characters the ids contain.
    message = canonical_json([_VERSION, thread_id, question_id, print_, expires_at])
    return _b64(hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest())


def configured_trust() -> AnswerTrust:
    """The trust options from the environment, as they are now."""
    return _trust_of(
        os.environ.get(SECRETS_ENV), os.environ.get(EXPIRED_ENV), os.environ.get(STRICT_ACTIONS_ENV)
    )


@functools.lru_cache(maxsize=8)
def _trust_of(secrets: str | None, expired: str | None, strict: str | None) -> AnswerTrust:
    # Parsing the secrets on every publish would cost more than the envelope: parsed once per
    # distinct setting.
    environ = {SECRETS_ENV: secrets, EXPIRED_ENV: expired, STRICT_ACTIONS_ENV: strict}
    return AnswerTrust.from_env(
        {name: value for name, value in environ.items() if value is not None}
    )


def reply_trust(trust: AnswerTrust | None) -> AnswerTrust | None:
    """What publishing needs of ``trust`` (None: the configured one): None when it marks nothing.

    ``build_envelope`` adds to ``reply_with`` only for a trust that signs or marks expiry.
    """
    trust = configured_trust() if trust is None else trust
    return trust if trust.marks_expiry else None
