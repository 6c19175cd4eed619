"""The message attribute rules of SNS and SQS."""

from __future__ import annotations

import re

from agent_wait.core.transport import AttributeRules

_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_RESERVED_PREFIXES = ("aws.", "amazon.")


def _aws_attribute_name_error(name: str) -> str | None:
    if not _ATTRIBUTE_NAME.match(name):
        return "only letters, digits, '_', '-' and '.' are allowed"
    if len(name) > 256:
        return f"longer than 256 characters ({len(name)})"
    if name.startswith(".") or name.endswith(".") or ".." in name:
        return "it starts or ends with '.' or has '..'"
    if name.lower().startswith(_RESERVED_PREFIXES):
        return "the 'AWS.' and 'Amazon.' prefixes are reserved"
    return None


AWS_MESSAGE_ATTRIBUTES = AttributeRules(
    max_count=10, name_error=_aws_attribute_name_error, service="SNS/SQS message attribute"
)
"""SNS and SQS message attributes: at most 10, names of ``[A-Za-z0-9_.-]`` up to 256
characters, no leading, trailing or doubled ``.``, no ``AWS.``/``Amazon.`` prefix."""
