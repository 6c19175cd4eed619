"""Subject templates: ``agent-wait.questions.{tags[approver_group]}`` rendered per envelope."""

from __future__ import annotations

import re

from agent_wait.core import ConfigError, WaitEnvelope
from agent_wait.core.transport import EnvelopeTemplate

OPTION = "nats announcer option subject"
# A subject token may not hold whitespace, the separator or a wildcard; anything else is kept.
_NOT_IN_TOKEN = re.compile(r"[\s.*>\x00-\x1f\x7f]")
_NO_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_token(value: str) -> str:
    return _NOT_IN_TOKEN.sub("_", value) or "_"


class SubjectTemplate:
    """A NATS subject with placeholders, checked once and rendered per envelope.

    Placeholders: ``{thread_id}``, ``{question_id}``, ``{type}`` and ``{tags[<name>]}``. Each
    substituted value becomes part of one subject token: whitespace, ``.``, ``*`` and ``>`` in
    it are replaced by ``_`` and an empty value renders as ``_``, so a value can never add a
    token or a wildcard.

    Args:
        template: The subject template.

    Raises:
        ConfigError: Unknown placeholder, format spec, or a literal part that is not a valid
            publish subject (empty token, wildcard, whitespace).
    """

    def __init__(self, template: str) -> None:
        if not isinstance(template, str) or not template:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{OPTION}: expected a non-empty string, got {template!r}")
        self.template = template
        self._template = EnvelopeTemplate(template, option=OPTION, name="subject")
        # Check the literal structure with every placeholder standing in as a plain token part.
        self._check(self._template.join("x"), template)

    @property
    def tags(self) -> tuple[str, ...]:
        """The tag names the template needs."""
        return self._template.tags

    def wildcard(self) -> str:
        """The subject filter that matches every rendering: each token with a placeholder is ``*``."""
        marker = "\x00"
        return ".".join(
            "*" if marker in token else token for token in self._template.join(marker).split(".")
        )

    def render(self, envelope: WaitEnvelope) -> str:
        """The subject for one envelope.

        Raises:
            LookupError: The template needs a tag the envelope does not carry.
        """
        return self._template.render(envelope, _one_token)

    @staticmethod
    def _check(subject: str, template: str) -> None:
        for token in subject.split("."):
            if not token or re.search(r"[\s*>]", token) or _NO_CONTROL.search(token):
                raise ConfigError(
                    f"{OPTION}: {template!r} is not a publish subject "
                    f"(token {token!r}: tokens are non-empty, separated by '.', without whitespace "
                    "or the wildcards '*' and '>')"
                )

    def __repr__(self) -> str:
        return f"SubjectTemplate({self.template!r})"
