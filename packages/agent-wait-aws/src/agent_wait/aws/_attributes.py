"""The message attribute rules of SNS and SQS, and the characters they take."""

from __future__ import annotations

import re
from collections.abc import Mapping

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


# XML 1.0's Char production: SQS refuses a body or String attribute value holding anything else
# (InvalidMessageContents), and SNS holds messages and attributes to the same rule.
_REFUSED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"  # every refused character is in the BMP


def sendable_json(text: str) -> str:
    r"""JSON text with each character SNS and SQS refuse written as a ``\uXXXX`` escape.

    The services take only XML 1.0's characters (``#x9 | #xA | #xD | #x20-#xD7FF |
    #xE000-#xFFFD | #x10000-#x10FFFF``). In JSON text any other character (U+FFFE, U+FFFF, a
    lone surrogate; control characters are escaped by every JSON encoder) can only stand inside
    a string, where its escape means the same: a consumer decodes the same value.

    Args:
        text: JSON text, as ``json.dumps`` or pydantic writes it.
    """
    if text.isascii():
        return text  # the usual body: JSON escapes control characters, nothing else to do
    return _REFUSED.sub(_escape, text)


def string_attributes(
    values: Mapping[str, str],
) -> tuple[dict[str, dict[str, str]], tuple[str, ...]]:
    """SNS/SQS ``String`` message attributes of ``values``, in characters the services take.

    An attribute value is not JSON, so a character SNS and SQS refuse (a control character, a
    noncharacter, a lone surrogate) is replaced by U+FFFD; the message body keeps the value.

    Returns:
        The ``MessageAttributes`` and one note per value changed, naming the attribute.
    """
    attributes: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for name, value in values.items():
        sendable, replaced = _REFUSED.subn("\ufffd", value)
        if replaced:
            notes.append(
                f"message attribute {name!r}: {replaced} character(s) SNS and SQS refuse "
                "replaced by U+FFFD"
            )
        attributes[name] = {"DataType": "String", "StringValue": sendable}
    return attributes, tuple(notes)
