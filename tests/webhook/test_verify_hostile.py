"""verify() under hostile headers and bodies: every malformed request is a WebhookVerificationError.

A receiver answers the documented error with 400; any other exception would make it answer 500
(and log a traceback) for a request anyone can send.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_wait.core import ConfigError
from agent_wait.webhook import WebhookVerificationError, verify
from agent_wait.webhook._signing import SigningKey

from .conftest import SECRET

NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
BODY = b'{"type":"wait.created","question_id":"q-1"}'
HEADERS = SigningKey(SECRET).headers("01M8QZV361F3NEDJWF82AJ5PFV", BODY, NOW)
VALID_SIGNATURE = HEADERS["webhook-signature"]

HOSTILE: dict[str, list[str]] = {
    "webhook-timestamp": [
        "9" * 20,
        "9" * 400,  # overflows a float
        "9" * 5000,  # beyond Python's int parsing limit
        "0" * 5000,
        "-1",
        "+1",
        "-" + "9" * 400,
        "1e9",
        "0x10",
        "1_000",
        "12 34",
        "\uff11\uff12\uff13",  # full-width digits
        "٣٤٥",  # Arabic-Indic digits
        "²",
        "",
        " ",
        "\t\r\n",
        "\x00",
        "\ud800",
        "nan",
        "inf",
    ],
    "webhook-signature": [
        "",
        " ",
        "v1",
        "v1,",
        "v1,=",
        "v1,####",
        "v1,é",
        "v1,\ud800",
        "v1,\x00",
        "v2," + VALID_SIGNATURE[3:],
        "V1," + VALID_SIGNATURE[3:],
        "v1," + VALID_SIGNATURE[3:-4],
        "v1," + "A" * 100_000,
        "v1,AAAA " * 20_000,
        ",".join(["v1"] * 10_000),
        "v1," + VALID_SIGNATURE[3:] + "x",
    ],
    "webhook-id": ["", " ", "\ud800", "id\udcff", "x" * 100_000, "é" * 1000, "\x00"],
}
CASES = [(name, value) for name, values in HOSTILE.items() for value in values]


@pytest.mark.parametrize(
    ("name", "value"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)]
)
def test_a_hostile_header_is_a_verification_error(name: str, value: str) -> None:
    with pytest.raises(WebhookVerificationError) as caught:
        verify(BODY, {**HEADERS, name: value}, SECRET, now=NOW)
    assert len(str(caught.value)) < 300  # the error never echoes a huge value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(HOSTILE)),
    value=st.one_of(
        st.text(),
        st.text(alphabet=st.characters(codec=None, categories=None), max_size=50),
        st.integers().map(str),
        st.from_regex(r"v1,[A-Za-z0-9+/=]{0,60}( v1,[A-Za-z0-9+/=]{0,60}){0,5}", fullmatch=True),
    ),
)
def test_any_value_of_any_header_verifies_or_is_a_verification_error(name: str, value: str) -> None:
    try:
        result = verify(BODY, {**HEADERS, name: value}, SECRET, now=NOW)
    except WebhookVerificationError:
        return
    # Only the untouched value (modulo surrounding whitespace) can still verify.
    assert value.strip() == HEADERS[name]
    assert result == json.loads(BODY)


@pytest.mark.parametrize(
    "body",
    ['{"a": "\ud800"}', b"\xff\xfe", b"", b"[" * 100_000, b"9" * 5000, b"{" * 100_000],
    ids=["surrogate-text", "not-utf8", "empty", "deep-array", "huge-int", "deep-object"],
)
def test_a_hostile_body_is_a_verification_error(body: str | bytes) -> None:
    # Signed with the right secret, so only the body's own content can fail it.
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    headers = SigningKey(SECRET).headers("msg-1", raw, NOW)
    with pytest.raises(WebhookVerificationError):
        verify(body, headers, SECRET, now=NOW)


@pytest.mark.parametrize(
    ("digits", "message"),
    [(15, "outside the 86400000000000 s tolerance"), (16, "expected integer Unix seconds")],
)
def test_the_widest_tolerance_still_refuses_absurd_timestamps(digits: int, message: str) -> None:
    headers = {**HEADERS, "webhook-timestamp": "9" * digits}
    with pytest.raises(WebhookVerificationError, match=message):
        verify(BODY, headers, SECRET, now=NOW, tolerance=timedelta.max)


@pytest.mark.parametrize("secret", ["whsec_é", "whsec_\ud800", "whsec_%%%"])
def test_a_malformed_whsec_secret_is_a_config_error(secret: str) -> None:
    with pytest.raises(ConfigError, match="must be base64 after the prefix"):
        verify(BODY, HEADERS, secret, now=NOW)
